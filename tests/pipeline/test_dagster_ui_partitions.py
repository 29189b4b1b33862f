"""Per-partition privacy checks in the real Dagster UI (issue 34 part 3): the monthly release of
monthly_release.py run month by month on a fresh instance, dagster-webserver serving it, and headless
Chromium reading, on the check's Partitions tab, each month's status — September (leaky) failed, August
and October passed — from the row dots, the counts and each month's detail pane (whose metadata names
the month and its release id)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import pytest
from browser import Browser, needs_chromium
from monthly_release import MONTHS, build_defs, run_months
from webserver import graphql, webserver

pytestmark = [
    pytest.mark.slow,
    needs_chromium(),
]

#: where to keep the screenshot (docs/img/dagster-ui-partitions.png was taken with it); default: tmp_path
_SHOTS = os.environ.get("DAGSTER_PRIVACY_UI_SHOTS")
CHECK = "privacy_risk_membership"

# click a sub-tab of the selected check (React state, not in the URL); true once it is selected
TAB_JS = r"""((title) => {
  const list = [...document.querySelectorAll('[role="tablist"]')].find(t =>
    [...t.querySelectorAll('[role="tab"]')].some(b => b.textContent.trim() === 'Execution history'));
  const tab = list && [...list.querySelectorAll('[role="tab"]')].find(b => b.textContent.trim() === title);
  if (!tab) return false;
  if (tab.getAttribute('aria-selected') !== 'true') tab.click();
  return tab.getAttribute('aria-selected') === 'true';
})"""
# the Partitions tab: each row's partition and status dot colour, and the status counts; null until all
# "N Partitions Selected" rows are rendered (the list is virtualised)
PARTITIONS_JS = r"""(() => {
  const text = document.body.innerText;
  const n = text.match(/(\d+) Partitions Selected/);
  const rows = [...document.querySelectorAll('[class*="assetListRow"]')].map(r => {
    const key = r.querySelector('[data-tooltip]');
    const dot = [...r.querySelectorAll('div')].find(d => d.style.borderRadius === '100%');
    const color = dot && (dot.style.backgroundColor.match(/--color-accent-(\w+)/) || [])[1];
    return {partition: key && key.dataset.tooltip, dot: color || null};
  });
  if (!n || rows.length !== +n[1] || rows.some(r => !r.partition || !r.dot)) return null;
  const counts = {};
  for (const m of text.matchAll(/^(Execution Failed|Failed|In Progress|Missing|Skipped|Passed) \((\d+)\)$/gm))
    counts[m[1]] = +m[2];
  return {rows, counts};
})()"""
CLICK_PARTITION_JS = r"""((key) => {
  const row = [...document.querySelectorAll('[class*="assetListRow"]')]
    .find(r => r.querySelector('[data-tooltip]')?.dataset.tooltip === key);
  if (!row) return false;
  row.click();
  return true;
})"""
# the clicked partition's detail pane: its status tag, and the release id in its metadata
DETAIL_JS = r"""((key) => {
  const head = [...document.querySelectorAll('[class*="MiddleTruncate_container"]')]
    .find(e => e.title === key && !e.closest('[class*="assetListRow"]'));
  let box = head;
  for (let i = 0; box && i < 4 && !box.querySelector('.BaseTag'); i++) box = box.parentElement;
  const tag = box && box.querySelector('.BaseTag');
  const release = document.body.innerText.match(/dagster_privacy\/release_id\s+(\S+)/);
  return tag && release ? {tag: tag.textContent.trim(), release: release[1]} : null;
})"""


def test_each_month_shows_its_own_check_result(tmp_path) -> None:
    work = tmp_path / "work"
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nnux:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_months(build_defs(work), instance)
    here = Path(__file__).resolve().parent
    shutil.copy(here / "monthly_release.py", work / "monthly_release.py")
    # monthly_release's policy covers every risk: its gates come from tests/support/gates.py
    shutil.copy(here.parent / "support" / "gates.py", work / "gates.py")
    (work / "defs.py").write_text(
        "from pathlib import Path\n\nfrom monthly_release import build_defs\n\n"
        "defs = build_defs(Path(__file__).resolve().parent)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env |= {"DAGSTER_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    shots = Path(_SHOTS) if _SHOTS else tmp_path
    with webserver(["-f", str(work / "defs.py")], cwd=work, env=env, log=tmp_path / "webserver.log") as port:
        url = f"http://127.0.0.1:{port}/assets/synthetic_table?view=checks&checkDetail={CHECK}"
        with Browser(width=1600, height=1000) as b:
            b.goto(url)
            b.wait_for(f"{TAB_JS}('Partitions')", timeout=60)  # only a partitioned check has this tab
            listing = b.wait_for(PARTITIONS_JS, timeout=60)
            detail = {}
            for row in sorted(listing["rows"], key=lambda r: r["partition"], reverse=True):
                assert b.js(f"{CLICK_PARTITION_JS}({json.dumps(row['partition'])})")
                detail[row["partition"]] = b.wait_for(
                    f"{DETAIL_JS}({json.dumps(row['partition'])})", timeout=30
                )
            b.screenshot(shots / "dagster-ui-partitions.png")  # September's detail, clicked last
        data = graphql(
            port,
            """{ assetNodeOrError(assetKey: {path: ["synthetic_table"]}) { ... on AssetNode {
                 assetChecksOrError { ... on AssetChecks { checks { name
                   partitionStatuses { ... on AssetCheckTimePartitionStatuses {
                     ranges { startKey endKey status } } }
                 } } } } } }""",
        )
    print(json.dumps({"listing": listing, "detail": detail}, indent=1), shots / "dagster-ui-partitions.png")
    months = MONTHS.get_partition_keys()
    expected = dict(zip(months, ["Passed", "Failed", "Passed"], strict=True))
    assert {m: d["tag"] for m, d in detail.items()} == expected
    assert {r["partition"]: r["dot"] for r in listing["rows"]} == {m: "green" if s == "Passed" else "red"
                                                                   for m, s in expected.items()}  # fmt: skip
    assert listing["counts"]["Passed"] == 2 and listing["counts"]["Failed"] == 1
    assert all(d["release"].endswith("+" + m) for m, d in detail.items())  # each month, its own release
    check = next(c for c in data["assetNodeOrError"]["assetChecksOrError"]["checks"] if c["name"] == CHECK)
    failed = [r for r in check["partitionStatuses"]["ranges"] if r["status"] == "FAILED"]
    assert [(r["startKey"], r["endKey"]) for r in failed] == [("2026-09-01", "2026-09-01")]
