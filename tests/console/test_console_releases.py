"""The console names releases and lets an officer reject a blocked one (issue 57): releases listed by
content hash alone could not be told apart; a blocked release offered no Reject, so a rejection and its
reason could not go on record; a release a later evaluation replaced sat under "Awaiting decision"."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Browser, needs_chromium
from test_console import PASSWORD, Client, Served, sign_in
from test_signoff import QUIET, Env

from dagster_privacy.console import ConsoleSettings
from dagster_privacy.console.identity import Users
from dagster_privacy.pipeline.demo_run import write_tables
from dagster_privacy.pipeline.evidence import GENERATOR_TAG
from dagster_privacy.pipeline.resources import RELEASE_ID_TAG


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    root = tmp_path_factory.mktemp("console_releases")
    env = Env(root)
    env.release("v1", "clean")
    write_tables(env.database, {"synthetic": env.frames["leaky"]})
    env.defs.resolve_job_def("privacy_release_job").execute_in_process(
        instance=env.instance, raise_on_error=False, run_config=QUIET,
        tags={RELEASE_ID_TAG: "v2", GENERATOR_TAG: "ctgan 0.9, epochs 300"},
    )  # fmt: skip  # its gates block it: the run's blocking checks fail
    users = root / "users.json"
    Users(users).add("dana", "officer", PASSWORD)
    settings = ConsoleSettings(instance_dir=str(env.home), audit=str(env.audit.path), target=str(env.target),
                               users=str(users))  # fmt: skip
    served = Served(settings)
    yield env, served
    served.stop()
    env.instance.dispose()


@needs_chromium()
def test_releases_are_named_superseded_apart_and_a_blocked_one_rejected(two, tmp_path) -> None:
    env, served = two
    dana = Client(served.url)
    assert dana.login("dana") == 303
    listing = dana.request("/")[2]
    assert "Superseded (1)" in listing and "Blocked by its gates (1)" in listing
    assert "Awaiting decision" not in listing  # v1 was replaced by v2's evaluation
    rows = f"{env.frames['leaky'].height:,}"
    assert rows in listing and "ctgan 0.9, epochs 300" in listing and "<th>run</th>" in listing
    old = dana.request("/release/v1")[2]
    assert "superseded this release" in old and 'name="decision"' not in old
    page = dana.request("/release/v2")[2]
    assert 'value="reject"' in page and 'value="approve"' not in page  # reject only: its gates block it
    sha = page.split('name="report_sha256" value="', 1)[1].split('"', 1)[0]
    forged = {"csrf": dana.csrf("/release/v2"), "report_sha256": sha, "decision": "approve", "reason": "x"}
    status, _, body = dana.request("/release/v2/decision", forged)
    assert status == 409 and "failed its gates" in body  # an approval is refused whatever the form says
    form = {**forged, "decision": "reject", "reason": "copies of training records", "csrf": dana.csrf("/")}
    assert dana.request("/release/v2/decision", form)[0] == 303
    assert [(r.release_id, r.decision, r.reason) for r in env.audit.rows()] == [
        ("v2", "reject", "copies of training records")
    ]
    assert "Rejected (1)" in dana.request("/")[2]
    with Browser(width=1024, height=900) as b:  # the list as the officer reads it
        sign_in(b, served.url)
        assert b.js("document.body.innerText.includes('Superseded (1)')")
        assert b.js("document.body.innerText.includes('ctgan 0.9, epochs 300')")
        assert b.js("document.documentElement.scrollWidth <= 1024")  # the wider list still fits
        b.screenshot(Path(tmp_path) / "console-releases-named.png")
