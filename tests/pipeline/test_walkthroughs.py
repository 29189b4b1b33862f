"""The walkthrough commands of README.md and docs/ run as printed (issue 46, 2): taken from the documents,
run in bash in a scratch folder with a user's environment (no DAGSTER_* variable but the ones a command
sets). The demo, `dg launch` on the reference code location, both `dagster dev` commands, the console
and its proxy mode, and a withdrawal. The catalogue of every block is tests/test_docs_blocks.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from docs_blocks import ROOT, Server, block, clean_env, commands, sh
from test_console import PASSWORD, Client

pytestmark = pytest.mark.slow

DEMO_DONE = "demo: v1 published, v2 blocked"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """`dagster-privacy demo` as docs/pipeline.md's quick start prints it, in an empty folder."""
    cwd = tmp_path_factory.mktemp("walk-demo")
    line = commands(block("docs/pipeline.md", 0).text)[0]
    assert line.startswith("dagster-privacy demo ")
    code, out = sh(line, cwd, clean_env())
    assert code == 0 and DEMO_DONE in out, out[-3000:]
    return cwd


def _project(tmp_path: Path, leak: float) -> Path:
    """A copy of the repository's reference code location (what a user clones) and a release.duckdb
    whose synthetic table leaks ``leak`` of the training rows."""
    from dagster_privacy.calibration import leaky_split
    from dagster_privacy.demo import load_demo
    from dagster_privacy.pipeline.demo_run import write_tables

    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("definitions.py", "workspace.yaml", "assets", "checks"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tmp_path / name)
    s = leaky_split(load_demo().head(3000), leak, seed=0)
    tables = {"real": s.train, "holdout": s.control, "synthetic": s.synthetic}
    write_tables(tmp_path / "release.duckdb", tables)
    return tmp_path


def test_the_install_block_is_what_ci_runs_and_the_demo_runs(demo) -> None:
    """README's first block: CI installs as its lines say and runs its test command; its demo command
    (run by the fixture from docs/pipeline.md, the same command) leaves v1 published and v2 blocked."""
    install, tests = commands(block("README.md", 0).text)
    assert install == "pip install -e . && dagster-privacy demo"
    assert (
        tests == 'pip install -e ".[dev]" && python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder'
    )
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -q -e ".[dev]"' in ci and "README.md | sed -n 2p" in ci
    assert 'bash -c "$test_cmd"' in ci
    assert 'dagster-privacy" demo' in ci  # the wheel alone, from an empty folder
    with duckdb.connect(str(demo / ".dagster_privacy" / "demo" / "published.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from information_schema.tables").fetchone()[0] >= 1


def test_launch_as_printed(tmp_path) -> None:
    """`dg launch` on the reference code location: exit 0 and published on a clean release, exit 1 and
    nothing published on a leaky one ("exits 1 when a privacy gate fails")."""
    line = commands(block("README.md", 3).text)[0]
    assert line.split("#")[0].split() == commands(block("docs/pipeline.md", 0).text)[1].split("#")[0].split()
    clean = _project(tmp_path / "clean", 0.0)
    code, out = sh(line, clean, clean_env())
    assert code == 0, out[-3000:]
    assert (clean / "published.duckdb").is_file()
    leaky = _project(tmp_path / "leaky", 0.2)
    code, out = sh(line, leaky, clean_env())
    assert code == 1, out[-3000:]
    assert "published_release" in out and not (leaky / "published.duckdb").exists()


def _locations(port: int) -> dict[str, str]:
    from webserver import graphql

    data = graphql(
        port,
        """{ workspaceOrError { ... on Workspace { locationEntries { name
             locationOrLoadError { __typename ... on PythonError { message } } } } } }""",
        {},
    )
    entries = data["workspaceOrError"]["locationEntries"]
    return {e["name"]: e["locationOrLoadError"]["__typename"] for e in entries}


def test_dagster_dev_as_printed(tmp_path, demo) -> None:
    """Both `dagster dev` lines serve the UI on port 3000 with their code location loaded: the
    repository's (workspace.yaml) and the package's, which without variables reads the demo's files."""
    lines = commands(block("README.md", 3).text)[1:]
    quick_start = commands(block("docs/pipeline.md", 0).text)[2]  # the same command in docs/pipeline.md
    assert quick_start.split("#")[0].split() == lines[0].split("#")[0].split()
    assert [ln.split("#")[0].split() for ln in lines] == [
        ["dagster", "dev", "-w", "workspace.yaml"],
        ["dagster", "dev", "-m", "dagster_privacy.pipeline.location"],
    ]
    project = _project(tmp_path, 0.0)
    for line, cwd in zip(lines, (project, demo), strict=True):
        with Server(line, cwd, clean_env(), "http://127.0.0.1:3000/server_info") as server:
            loaded = _locations(3000)
            assert loaded and set(loaded.values()) == {"RepositoryLocation"}, (loaded, server.text())


def test_withdraw_as_printed(demo) -> None:
    """The officer guide's withdrawal, on the instance at DAGSTER_HOME (the demo's): v1 leaves the
    publication target it was published to, without --target, and the audit chain verifies."""
    home = demo / ".dagster_privacy" / "demo" / "dagster_home"
    target = demo / ".dagster_privacy" / "demo" / "published.duckdb"
    line = commands(block("docs/officer-guide.md", 6).text)[0]
    code, out = sh(line, demo, clean_env(DAGSTER_HOME=str(home)))
    assert code == 0 and out.startswith("withdrew release v1 from "), out[-3000:]
    code, out = sh("dagster-privacy audit verify", demo, clean_env(DAGSTER_HOME=str(home)))
    assert code == 0, out
    from dagster_privacy.pipeline.publication.target import PublishTarget

    published = PublishTarget(path=str(target))
    assert published.held() is None
    last = published.log()[-1]
    assert (last["action"], last["release_id"], last["by"]) == ("withdraw", "v1", "Dana Officer")


def test_console_commands_as_printed(demo) -> None:
    """add-user (the password typed twice at its prompt) and the console on port 8088 over the demo's
    instance: dana signs in as an officer and sees the demo's releases."""
    cwd = demo / ".dagster_privacy" / "demo"
    env = clean_env(DAGSTER_HOME=str(cwd / "dagster_home"))
    add_user, serve = commands(block("docs/officer-guide.md", 0).text)
    code, out = sh(add_user, cwd, env, stdin=f"{PASSWORD}\n{PASSWORD}\n")
    assert code == 0, out[-2000:]
    with Server(serve, cwd, env, "http://127.0.0.1:8088/login"):
        client = Client("http://127.0.0.1:8088")
        assert client.login("dana") == 303
        status, _, page = client.request("/")
        assert status == 200 and "dana" in page and "v2" in page, page[:2000]


def test_proxy_console_commands_as_printed(demo, tmp_path) -> None:
    """Proxy mode as printed, the secret in a folder of ours instead of /etc/dagster-privacy (the one
    change: a test may not write /etc): a request carrying the secret and the header is that user; the
    same header without the secret is not."""
    cwd = demo / ".dagster_privacy" / "demo"
    env = clean_env(DAGSTER_HOME=str(cwd / "dagster_home"))
    secret_line, serve = (c.replace("/etc/dagster-privacy", str(tmp_path)) for c in
                          commands(block("docs/officer-guide.md", 2).text))  # fmt: skip
    code, out = sh(secret_line, cwd, env)
    assert code == 0, out
    secret = (tmp_path / "proxy-secret").read_text().strip()
    assert len(secret) >= 32 and (tmp_path / "proxy-secret").stat().st_mode & 0o077 == 0
    with Server(serve, cwd, env, "http://127.0.0.1:8088/login"):
        header = "X-Forwarded-User"
        proxied = Client("http://127.0.0.1:8088", {header: "dana", "X-Dagster-Privacy-Proxy-Secret": secret})
        status, _, page = proxied.request("/")
        assert status == 200 and "dana" in page, page[:2000]
        forged = Client("http://127.0.0.1:8088", {header: "dana"})
        status, _, page = forged.request("/")
        assert status != 200 or "dana" not in page
    assert json.dumps(page).count(secret) == 0


def test_the_dg_example_as_printed(demo) -> None:
    """examples/privacy_release/README.md's commands in one shell, from a copy of the repository's
    examples/ beside the demo's output: `pip install -e .` becomes PYTHONPATH=src (a test does not
    install into the environment it runs in). Both dg checks pass, and `dg launch` on the demo's last
    release (v2, the leaky one) exits 1 and publishes nothing."""
    shutil.copytree(ROOT / "examples" / "privacy_release", demo / "examples" / "privacy_release",
                    ignore=shutil.ignore_patterns("__pycache__", "data", "*.egg-info"))  # fmt: skip
    lines = commands(block("examples/privacy_release/README.md", 0).text)
    assert lines[1].startswith("pip install -e . ")
    script = "\n".join(["set -e", lines[0], "export PYTHONPATH=src", *lines[2:-1]])
    code, out = sh(script, demo, clean_env())
    assert code == 0 and "All definitions loaded successfully." in out, out[-3000:]
    code, out = sh(f"cd examples/privacy_release && PYTHONPATH=src {lines[-1]}", demo, clean_env())
    assert code == 1 and "synthetic_table" in out, out[-3000:]
    assert not (demo / "examples" / "privacy_release" / "data" / "published.duckdb").exists()


def test_the_signoff_walkthrough_as_printed(tmp_path) -> None:
    """The officer guide's sign-off, on the reference code location with a policy that requires it:
    `dg launch` (as printed) evaluates release v1 and exits 0 with nothing published (waiting is not a
    failure); the guide's `signoff` line (without its optional [...]) records the approval and prints
    what the guide shows; `audit verify` as printed (DAGSTER_HOME=... is the instance) finds the chain
    intact; the next `dg launch` publishes v1, and `audit verify --target published.duckdb` still
    passes."""
    project = _project(tmp_path / "project", 0.0)
    (project / "policy.yaml").write_text("preset: standard\nrequire_signoff: true\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # an instance of the team's
    env = clean_env(
        DAGSTER_HOME=str(home), DAGSTER_PRIVACY_POLICY="policy.yaml", DAGSTER_PRIVACY_RELEASE_ID="v1"
    )
    launch = commands(block("README.md", 3).text)[0]
    code, out = sh(launch, project, env)
    assert code == 0, out[-3000:]
    assert not (project / "published.duckdb").exists() or "v1" not in _published(project)
    signoff = re.sub(r"\s*\[[^]]*\]", "", commands(block("docs/officer-guide.md", 3).text)[0])
    code, out = sh(signoff, project, env)
    assert code == 0, out[-3000:]
    printed = block("docs/officer-guide.md", 4).text.splitlines()
    said = out.strip().splitlines()
    assert len(said) == len(printed), (said, printed)
    for ours, shown in zip(said, printed, strict=True):  # the words before the first figure or elision
        lead = re.split(r"\s(?=\S*[0-9…])", shown.strip(), maxsplit=1)[0]
        assert ours.strip().startswith(lead), (ours, shown)
    verify = re.sub(r"\s*\[[^]]*\]", "", commands(block("docs/officer-guide.md", 5).text)[0])
    assert verify.startswith("DAGSTER_HOME=... ")
    verify = verify.replace("DAGSTER_HOME=...", f"DAGSTER_HOME={home}")
    code, out = sh(verify, project, env)
    assert code == 0, out[-3000:]
    # "the next run of published_release" (the guide's step 4): the approved evaluation stays the latest
    publish = launch.replace("--assets '*'", "--assets published_release")
    assert publish != launch
    code, out = sh(publish, project, env)
    assert code == 0 and _published(project) == ["v1"], out[-3000:]
    code, out = sh(f"{verify} --target published.duckdb", project, env)
    assert code == 0, out[-3000:]


def _published(project: Path) -> list[str]:
    from dagster_privacy.pipeline.demo_run import published_releases

    return published_releases(project / "published.duckdb")
