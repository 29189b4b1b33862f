"""The console's lineage pages (issue 56), served by uvicorn and read in headless Chromium: the list of
lineages, one lineage's releases with what each exposed and added, a withdrawn release still counted, a
ledger edited behind the console's back shown as not verifying; no real value on any page."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from browser import Browser, needs_chromium
from test_console import PASSWORD, Client, Served, sign_in

sys.path.insert(0, str(Path(__file__).parents[1] / "lineage"))
from lineage_data import copies, evaluate, release, with_canary  # noqa: E402

from dagster_privacy.console import ConsoleSettings  # noqa: E402
from dagster_privacy.console.identity import Users  # noqa: E402
from dagster_privacy.lineage import FileLedger, commit, judge_lineage  # noqa: E402

CANARY = "CANARY-CONSOLE-LINEAGE-41b9"
K = 5


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    root = tmp_path_factory.mktemp("console_lineage")
    (root / "home").mkdir()
    train, row = with_canary(CANARY)
    ledger = FileLedger(root / "ledger.duckdb")
    for i in range(3):
        rel = release(i, copies(i, K)) if i else pl.concat([release(0, copies(0, K)[1:]), train[[row]]])
        ev = evaluate(rel, train=train)
        judge_lineage(ev, lineage="monthly/adult", ledger=ledger, release_id=f"2026-0{i + 1}", record=True)
    commit(ledger, "monthly/adult", "2026-01", "withdrawn")
    users = root / "users.json"
    Users(users).add("dana", "officer", PASSWORD)
    settings = ConsoleSettings(instance_dir=str(root / "home"), users=str(users), ledger=str(ledger.path))
    served = Served(settings)
    yield served, ledger
    served.stop()


@needs_chromium()
def test_the_lineage_pages_in_a_browser(console, tmp_path) -> None:
    served, _ = console
    with Browser(width=1024, height=900) as b:
        sign_in(b, served.url)
        b.goto(served.url + "/lineages")
        b.wait_for("document.body.innerText.includes('1 lineage(s)')")
        b.js("document.querySelector('main a').click()")
        b.wait_for("document.body.innerText.includes('hash chain intact')")
        text = b.js("document.body.innerText")
        assert "Lineage monthly/adult" in text and "3 release(s)" in text
        cells = b.js(
            "[...document.querySelectorAll('#lineage-releases tbody tr')].map(r => r.children[2].innerText)"
        )
        assert cells == ["withdrawn", "reserved", "reserved"]  # the withdrawn one still listed and counted
        union = b.js(
            "[...document.querySelectorAll('#lineage-releases tbody tr')].map(r => +r.children[6].innerText)"
        )
        assert union == sorted(union) and union[-1] >= 3 * K  # the union grows: 15 copies and chance
        assert b.js("document.documentElement.scrollWidth <= 1024")
        b.screenshot(tmp_path / "console-lineage.png")


def test_no_real_value_and_an_edited_ledger_shows(console) -> None:
    served, ledger = console
    dana = Client(served.url)
    assert dana.login("dana") == 303
    for path in ("/lineages", "/lineage/monthly%2Fadult", "/lineage/nope"):
        status, _, body = dana.request(path)
        assert CANARY not in body, path
        assert status == (404 if path.endswith("nope") else 200), path
    with duckdb.connect(str(ledger.path)) as con:
        con.execute("update lineage_ledger set summary = '{}' where seq = 2")
    status, _, body = dana.request("/lineage/monthly%2Fadult")
    assert status == 200 and "does not verify" in body and "was altered" in body


def test_a_ledger_in_postgresql_reads_the_same(pg, tmp_path) -> None:
    """The console given a postgresql:// ledger (its keys in the instance's folder, as the lineage
    check keeps them): the same page, the database named without its user."""
    from postgres_server import create_database

    from dagster_privacy.lineage import open_ledger

    uri, home = create_database(pg, "console_ledger"), tmp_path / "home"
    home.mkdir()
    led = open_ledger(uri, home=home / "dagster_privacy")
    for i in range(2):
        judge_lineage(evaluate(release(i, copies(i, K))), lineage="monthly/adult", ledger=led,
                      release_id=f"2026-0{i + 1}", record=True)  # fmt: skip
    users = tmp_path / "users.json"
    Users(users).add("dana", "officer", PASSWORD)
    served = Served(ConsoleSettings(instance_dir=str(home), users=str(users), ledger=uri))
    try:
        dana = Client(served.url)
        assert dana.login("dana") == 303
        status, _, body = dana.request("/lineage/monthly%2Fadult")
        assert status == 200 and "2 release(s), hash chain intact" in body
        assert "lineage_ledger" in body and "postgres@" not in body
    finally:
        served.stop()
