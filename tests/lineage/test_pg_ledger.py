"""The ledger in PostgreSQL (issue 56): the same decisions as in a file, one database reached over TCP
and a Unix socket, an edited or deleted row caught, a process killed after its reservation and two
candidates judged at once (real processes, a real server), bad URIs and tables refused in one line, no
real value in the table or the keys."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from lineage_data import child, copies, evaluate, release, with_canary
from postgres_server import create_database

from dagster_privacy.lineage import FileLedger, LineageError, commit, judge_lineage, open_ledger, releases
from dagster_privacy.lineage.pg_ledger import PostgresLedger

K = 5  # as test_lineage.py: each release alone passes, the union fails within eight looks


def _sql(uri: str, sql: str) -> list[tuple]:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri, autocommit=True) as con, con.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall() if cur.description else []


def _ledger(pg: str, name: str, home: Path) -> PostgresLedger:
    led = open_ledger(create_database(pg, name), home=home)
    assert isinstance(led, PostgresLedger)
    return led


def _judge(led, i: int, *, record: bool = True):  # -> the lineage's decision
    ev = evaluate(release(i, copies(i, K)))
    return judge_lineage(ev, lineage="demo", ledger=led, release_id=f"r{i}", record=record).lineage


#: what does not depend on where the ledger lives
SAME = ("status", "look", "people", "people_holdout", "chance", "candidate_people", "added_people", "level")


def test_the_lineage_decides_the_same_in_postgresql_as_in_a_file(pg, tmp_path) -> None:
    file, db = FileLedger(tmp_path / "ledger.duckdb"), _ledger(pg, "same", tmp_path / "home")
    for i in range(8):
        a, b = _judge(file, i), _judge(db, i)
        assert {k: a[k] for k in SAME} == {k: b[k] for k in SAME}, i
        assert a["recorded"]["event"] == b["recorded"]["event"]
        assert a["records"]["rows"] == b["records"]["rows"]
        if b["status"] == "fail":
            assert {h["release_id"] for h in b["held_by"]} == {f"r{j}" for j in range(i)}
            break
    assert b["status"] == "fail" and i >= 1, "releases that pass alone fail together"
    assert [r.status for r in releases(db.entries("demo", db.key("demo")))] == ["reserved"] * i + ["refused"]
    assert db.keys.parent == tmp_path / "home" and db.keys.stat().st_mode & 0o777 == 0o700


def test_one_database_over_tcp_and_a_unix_socket_is_one_ledger(pg, tmp_path) -> None:
    tcp = _ledger(pg, "routes", tmp_path)
    _judge(tcp, 0)
    folder = _sql(f"{pg}/routes", "select current_setting('unix_socket_directories')")[0][0].split(",")[0]
    port = pg.rsplit(":", 1)[1]
    sock = open_ledger(f"postgresql:///routes?host={folder}&port={port}&user=postgres", home=tmp_path)
    assert sock.keys == tcp.keys  # the same database named two ways: one keys folder, one lineage
    assert [r.release_id for r in releases(sock.entries("demo", sock.key("demo")))] == ["r0"]
    assert _judge(sock, 1)["look"] == 2


def test_an_edited_or_deleted_row_is_caught(pg, tmp_path) -> None:
    led = _ledger(pg, "edited", tmp_path)
    for i in range(3):
        _judge(led, i)
    key = led.key("demo")
    _sql(led.uri, "update lineage_ledger set exposed = '{}' where seq = 2")  # a release drops out
    with pytest.raises(LineageError, match="altered: lineage 'demo', row 2"):
        led.entries("demo", key)
    tail = _ledger(pg, "tail", tmp_path / "other")
    for i in range(2):
        _judge(tail, i)
    _sql(tail.uri, "delete from lineage_ledger where seq = 2")  # the chain alone cannot see a lost tail
    with pytest.raises(LineageError, match="lacks lineage 'demo'"):
        tail.entries("demo", tail.key("demo"))


def test_a_withdrawn_release_still_counts(pg, tmp_path) -> None:
    led = _ledger(pg, "withdrawn", tmp_path)
    _judge(led, 0)
    commit(led, "demo", "r0", "published")
    commit(led, "demo", "r0", "withdrawn")
    after = _judge(led, 1, record=False)
    assert set(copies(0, K).tolist()) <= set(after["records"]["rows"])
    assert [r.status for r in releases(led.entries("demo", led.key("demo")))] == ["withdrawn"]


def test_a_process_killed_after_its_reservation_leaves_no_release_missed(pg, tmp_path) -> None:
    led = _ledger(pg, "killed", tmp_path)
    p = child(0, led.uri, "kill", sync=tmp_path, home=tmp_path, k=K)
    _, err = p.communicate(timeout=300)
    assert p.returncode == -9, err[-500:]
    rel = releases(led.entries("demo", led.key("demo")))
    assert [(r.release_id, r.status) for r in rel] == [("r0", "reserved")]
    assert set(copies(0, K).tolist()) <= set(_judge(led, 1, record=False)["records"]["rows"])
    assert not _sql(led.uri, "select * from pg_locks where locktype = 'advisory'")  # the server freed it


def test_two_candidates_judged_at_once_cannot_both_pass_the_last_of_the_budget(pg, tmp_path) -> None:
    """As in a file (test_lineage.py): releases 0–3 recorded, then 4 and 5, each passing on the lineage
    alone at look 5, judged at the same moment by two processes on the database's lock."""
    led = _ledger(pg, "race", tmp_path)
    for i in range(4):
        assert _judge(led, i)["status"] == "pass"
    for i in (4, 5):
        dry = _judge(led, i, record=False)
        assert dry["status"] == "pass" and dry["look"] == 5
    procs = {i: child(i, led.uri, "race", sync=tmp_path, home=tmp_path, k=K) for i in (4, 5)}
    deadline = time.time() + 300
    while not all((tmp_path / f"ready{i}").exists() for i in procs):
        assert time.time() < deadline and all(p.poll() is None for p in procs.values())
        time.sleep(0.05)
    (tmp_path / "go").touch()
    outs = {i: p.communicate(timeout=300) for i, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), {i: o[1][-300:] for i, o in outs.items()}
    assert sorted(int(o[0].split()[1]) for o in outs.values()) == [5, 6]  # one after the other
    assert sorted(o[0].split()[0] for o in outs.values()) == ["refused", "reserved"]


def test_bad_uris_and_tables_are_refused_in_one_line(pg, tmp_path) -> None:
    uri = create_database(pg, "bad")
    with pytest.raises(LineageError, match="password out of the ledger"):
        open_ledger(uri.replace("postgres@", "postgres:secret@"), home=tmp_path)
    with pytest.raises(LineageError, match="no table="):
        open_ledger(uri + "?table=people", home=tmp_path)
    with pytest.raises(LineageError, match="cannot be reached") as caught:
        open_ledger(f"{pg}/does_not_exist", home=tmp_path)
    assert "\n" not in str(caught.value)
    _sql(uri, "create table lineage_ledger (id int, name text)")  # someone's table under the name
    _sql(uri, "insert into lineage_ledger values (1, 'keep me')")
    led = open_ledger(uri, home=tmp_path)
    with pytest.raises(LineageError, match="another shape"):
        _judge(led, 0)
    assert _sql(uri, "select * from lineage_ledger") == [(1, "keep me")]


def test_no_real_value_reaches_the_database_or_the_keys(pg, tmp_path) -> None:
    import polars as pl

    canary = "CANARY-PG-LEDGER-41d9"
    train, row = with_canary(canary)
    rel = pl.concat([release(0, np.array([], dtype=int)), train[[row]]])
    led = _ledger(pg, "canary", tmp_path)
    out = judge_lineage(evaluate(rel, train=train), lineage="demo", ledger=led, release_id="r0", record=True)
    assert row in out.lineage["records"]["rows"]
    assert canary not in json.dumps(out.to_dict())
    dump = _sql(led.uri, "select l::text from lineage_ledger l")
    assert dump and all(canary not in r[0] for r in dump)
    assert all(canary.encode() not in f.read_bytes() for f in led.keys.iterdir())


def test_the_cli_records_and_shows_a_lineage_kept_in_postgresql(pg, tmp_path) -> None:
    import os
    import subprocess
    import sys

    from lineage_data import POLICY_YAML, split

    uri, s = create_database(pg, "cli"), split()
    s.train.write_csv(tmp_path / "train.csv")
    s.holdout.write_csv(tmp_path / "holdout.csv")
    release(0, copies(0, K)).write_csv(tmp_path / "r0.csv")
    (tmp_path / "policy.yaml").write_text(POLICY_YAML)
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}  # the keys: $DAGSTER_HOME/dagster_privacy

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dagster_privacy.cli", *args], capture_output=True,
                              text=True, timeout=600, env=env, cwd=tmp_path)  # fmt: skip

    done = cli("evaluate", "--real", "train.csv", "--holdout", "holdout.csv", "--synthetic", "r0.csv",
               "--policy", "policy.yaml", "--lineage", "demo", "--ledger", uri, "--release-id", "r0",
               "--record")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "lineage demo: pass at look 1" in done.stdout
    shown = cli("lineage", "show", "demo", "--ledger", uri)
    assert shown.returncode == 0, shown.stderr
    assert "1 release(s)" in shown.stdout and " r0 " in shown.stdout and "published" in shown.stdout
    assert (tmp_path / "home" / "dagster_privacy").is_dir()
    bad = cli("lineage", "show", "demo", "--ledger", uri.replace("postgres@", "postgres:pw@"))
    assert bad.returncode == 2 and "password" in bad.stderr and "pw" not in bad.stderr.replace("password", "")


# ------------------------------------------------------------------ a reviewer's attacks (issue 56)


def test_a_password_in_any_parameter_and_a_uri_that_does_not_parse_are_refused(pg, tmp_path) -> None:
    uri = create_database(pg, "params")
    spellings = ("?password=s3cr3t", "?%70assword=s3cr3t", "?sslmode=disable&PASSWORD=s3cr3t")
    for bad in (uri + p for p in spellings):
        with pytest.raises(LineageError, match="password out of") as caught:
            open_ledger(bad, home=tmp_path)
        assert "s3cr3t" not in str(caught.value)
    with pytest.raises(LineageError, match="does not parse"):
        open_ledger("postgresql://postgres@[::1/db", home=tmp_path)


def test_the_ledger_is_named_as_the_server_says_not_as_the_uri_claims(pg, tmp_path) -> None:
    create_database(pg, "named")
    port = pg.rsplit(":", 1)[1]
    led = open_ledger(f"postgresql://postgres@prod.example:5432/official?host=127.0.0.1&port={port}"
                      "&dbname=named", home=tmp_path)  # fmt: skip
    assert "database named" in led.where and "prod.example" not in led.where and "official" not in led.where


def test_a_view_a_temporary_table_or_a_swallowed_row_is_refused(pg, tmp_path) -> None:
    uri = create_database(pg, "shapes")
    led = _ledger(pg, "shapes_real", tmp_path)
    _judge(led, 0)
    _sql(led.uri, "create view lineage_view as select * from lineage_ledger where lineage <> 'demo'")
    _sql(led.uri, "alter table lineage_ledger rename to ledger_kept")
    _sql(led.uri, "alter view lineage_view rename to lineage_ledger")  # the lineage hidden behind a view
    with pytest.raises(LineageError, match="a view"):
        led.lineages()
    # a search_path that leads to the session's temporary schema: the row would vanish with the session
    temp = open_ledger(f"{uri}?options=-csearch_path%3Dpg_temp", home=tmp_path / "temp")
    with pytest.raises(LineageError, match="no schema for the ledger"):
        _judge(temp, 0)
    # a trigger that swallows every insert: the release is not reported as recorded
    trig = _ledger(pg, "trigger", tmp_path / "trig")
    _judge(trig, 0)
    _sql(trig.uri, "create function drop_row() returns trigger language plpgsql as 'begin return null; end'")
    _sql(trig.uri, "create trigger swallow before insert on lineage_ledger for each row "
         "execute function drop_row()")  # fmt: skip
    with pytest.raises(LineageError, match="did not keep the row"):
        _judge(trig, 1)


def test_another_role_finds_the_ledger_or_is_refused_never_a_new_count(pg, tmp_path) -> None:
    led = _ledger(pg, "roles", tmp_path / "owner")
    _judge(led, 0)
    for sql in ("create role alice login", "create schema alice authorization alice", "create role bob login",
                "grant usage, create on schema public to alice, bob",
                "grant select, insert on lineage_ledger to alice"):  # fmt: skip
        _sql(led.uri, sql)
    port = pg.rsplit(":", 1)[1]
    # alice's own schema comes first on her search_path: the ledger in public is still the one found,
    # and without the lineage's key (another machine's keys folder) it is refused, not started anew
    alice = open_ledger(f"postgresql://alice@127.0.0.1:{port}/roles", home=tmp_path / "alice")
    with pytest.raises(LineageError, match="no key"):
        _judge(alice, 1)
    # bob may not read it: refused as unreadable, not taken for an empty ledger
    bob = open_ledger(f"postgresql://bob@127.0.0.1:{port}/roles", home=tmp_path / "bob")
    with pytest.raises(LineageError, match="cannot be read"):
        bob.lineages()


def test_a_lock_held_forever_is_refused_in_time(pg, tmp_path, monkeypatch) -> None:
    import adbc_driver_postgresql.dbapi as pgapi

    from dagster_privacy.lineage import pg_ledger

    led = _ledger(pg, "held", tmp_path)
    monkeypatch.setattr(pg_ledger, "LOCK_WAIT_SECONDS", 2)
    with pgapi.connect(led.uri, autocommit=True) as con, con.cursor() as cur:
        cur.execute(f"select pg_advisory_lock({pg_ledger.LOCK_KEY})")
        cur.fetchall()
        started = time.time()
        with pytest.raises(LineageError, match="cannot be locked"):
            _judge(led, 0)
        assert time.time() - started < 60
