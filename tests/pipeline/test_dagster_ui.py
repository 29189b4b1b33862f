"""The demo's run history in the real Dagster UI (issue 23): dagster-webserver on the demo instance with
the code location shipped in the package, the checks tab of synthetic_table in headless Chromium (driven
over a DevTools pipe), every gating check and its status. (``dagster dev`` would also start the daemon,
which may add runs during the test, and it does not stop on SIGTERM to its process group: the webserver
alone serves the same UI.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from browser import Browser, needs_chromium
from webserver import BIN, graphql, webserver

pytestmark = [
    pytest.mark.slow,
    needs_chromium(),
]

#: where to keep the screenshot (docs/img/dagster_ui_checks.png was taken with it); default: tmp_path
_SHOTS = os.environ.get("DAGSTER_PRIVACY_UI_SHOTS")
SHOT_DIR = Path(_SHOTS) if _SHOTS else None

# the list of checks once every row is rendered (the list is virtualised: compare with "Checks (N)")
ROWS_JS = r"""(() => {
  const m = document.body && document.body.innerText.match(/Checks \((\d+)\)/);
  const rows = [...document.querySelectorAll('[class*="AssetChecks_checkRow"]')];
  if (!m || +m[1] === 0 || rows.length !== +m[1]) return null;
  return rows.map(r => ({
    name: r.querySelector('[title]').title,
    status: r.querySelector('span[style*="capitalize"]').textContent,  // Succeeded | Failed | ...
    icon: r.querySelector('[role="img"]').getAttribute('aria-label'),  // check_circle|cancel|warning_outline
  }));
})()"""
# the detail pane of the selected check: blocking or not, and its latest evaluation result
DETAIL_JS = r"""((name) => {
  const sel = document.querySelector('[class*="AssetChecks_checkRowSelected"] [title]');
  const m = document.body.innerText.match(
    /This is an? (blocking|non-blocking) asset check\.[\s\S]*?Evaluation result\s+(\w+)/);
  return sel && sel.title === name && m ? {blocking: m[1] === 'blocking', result: m[2]} : null;
})"""
CLICK_JS = r"""((name) => { for (const r of document.querySelectorAll('[class*="AssetChecks_checkRow"]'))
  if (r.querySelector('[title]').title === name) { r.click(); return true; } return false; })"""


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory) -> dict[str, str]:
    """`dagster-privacy demo` in a scratch directory; the environment its UI command prints."""
    cwd = tmp_path_factory.mktemp("ui-demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DAGSTER_PRIVACY_"))}
    out = subprocess.run(
        [BIN / "dagster-privacy", "demo"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    demo = cwd / ".dagster_privacy" / "demo"
    home = demo / "dagster_home"
    with (home / "dagster.yaml").open("a") as f:  # the demo wrote `telemetry: enabled: false`
        f.write("nux:\n  enabled: false\n")  # no "Join the Dagster community" modal over the page
    return env | {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PRIVACY_DATABASE": str(demo / "release.duckdb"),
        "DAGSTER_PRIVACY_POLICY": str(demo / "policy.yaml"),  # the demo's policy, not checks/policy.yaml
        "DAGSTER_PRIVACY_PUBLISH_TARGET": str(demo / "published.duckdb"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@pytest.fixture(scope="module")
def ui(demo_env, tmp_path_factory):
    """dagster-webserver (no daemon, read-only) on the demo instance; yields its port."""
    log = tmp_path_factory.mktemp("ui-log") / "webserver.log"
    location = ["-m", "dagster_privacy.pipeline.location"]
    with webserver(location, cwd=Path(demo_env["DAGSTER_HOME"]), env=demo_env, log=log) as port:
        yield port


def test_checks_tab_shows_every_gating_check_and_its_status(ui, tmp_path) -> None:
    from dagster_privacy.pipeline.checks import required_check_names
    from dagster_privacy.pipeline.demo_run import demo_policy

    port = ui
    # what the instance says (GraphQL): the blocking checks and their latest status
    data = graphql(
        port,
        """query($k: AssetKeyInput!) { assetNodeOrError(assetKey: $k) { ... on AssetNode {
             assetChecksOrError { ... on AssetChecks { checks { name blocking
               executionForLatestMaterialization { status } } } } } } }""",
        {"k": {"path": ["synthetic_table"]}},
    )
    checks = data["assetNodeOrError"]["assetChecksOrError"]["checks"]
    blocking = {c["name"]: c["executionForLatestMaterialization"]["status"] for c in checks if c["blocking"]}
    assert sorted(blocking) == sorted(required_check_names(demo_policy()))

    url = f"http://127.0.0.1:{port}/assets/synthetic_table?view=checks"
    with Browser(width=1400, height=1000) as b:
        b.goto(url)
        rows = {r["name"]: r for r in b.wait_for(ROWS_JS, timeout=60)}
        assert sorted(rows) == sorted(c["name"] for c in checks)
        b.screenshot(SHOT_DIR / "checks.png" if SHOT_DIR else tmp_path / "checks.png")
        seen = {}
        for name in rows:
            assert b.js(f"{CLICK_JS}({json.dumps(name)})")
            seen[name] = b.wait_for(f"{DETAIL_JS}({json.dumps(name)})", timeout=30)
    gating = {n: (rows[n]["status"], seen[n]["result"]) for n in rows if seen[n]["blocking"]}
    print(json.dumps(gating, indent=1), tmp_path / "checks.png")
    assert sorted(gating) == sorted(blocking)
    # the demo's last release (v2) fails every gating metric; the schema gate passes
    assert gating == {
        n: ("Succeeded", "Passed") if n == "schema_gate" else ("Failed", "Failed") for n in blocking
    }
    assert blocking == {n: "SUCCEEDED" if n == "schema_gate" else "FAILED" for n in blocking}
    assert all(rows[n]["icon"] == ("check_circle" if n == "schema_gate" else "cancel") for n in blocking)
