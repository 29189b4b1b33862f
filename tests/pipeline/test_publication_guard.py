"""Publication never lands on an input (issue 31, cases 1 and 2): the one guard compares a target with
every input by facts that do not depend on the route to it, and a table or file is replaced only if
publication wrote it. End to end through the Dagster pipeline: the real data is byte-identical after."""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import Release
from postgres_server import create_database
from test_pipeline import POLICY, materialized, run, step_failures

from dagster_privacy.data import postgres
from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions
from dagster_privacy.pipeline.publication.input_guard import locate
from dagster_privacy.pipeline.publication.target import PublicationRefused, PublishTarget


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def socket_uri(tcp: str) -> str:
    """The same server over its Unix socket (the test server puts it in its temporary root)."""
    port = tcp.rsplit(":", 1)[1].split("/")[0]
    sock = next(
        line.split()[-1]
        for line in Path("/proc/net/unix").read_text().splitlines()
        if f".s.PGSQL.{port}" in line
    )
    return f"postgresql://postgres@{urllib.parse.quote(os.path.dirname(sock), safe='')}:{port}"


def pg_fingerprint(uri: str, table: str) -> tuple:
    with postgres.transaction(uri) as cur:
        cur.execute(f'select count(*), sum(hashtext(t::text)) from "{table}" t')
        return tuple(cur.fetchall()[0])


def test_a_socket_and_tcp_name_one_database_and_publication_into_it_is_refused(
    pg: str, tmp_path: Path, release: Release
) -> None:
    tcp = create_database(pg, "src")
    postgres.replace_tables(
        tcp, {"real": release.real, "holdout": release.holdout, "synthetic": release.clean}
    )
    sock = f"{socket_uri(pg)}/src"
    assert postgres.identity(sock) == postgres.identity(tcp)  # on main: the port was NULL over the socket
    before = pg_fingerprint(tcp, "real")
    settings = ReleaseSettings(
        database=sock, policy=POLICY, publish_target=tcp, schema_gate=False
    )  # same server, same database, another route
    res = run(
        build_release_definitions(settings=settings, on_evaluation=None), dg.DagsterInstance.ephemeral()
    )
    assert not res.success and "published_release" not in materialized(res)
    assert any("database holding the real data" in f for f in step_failures(res)), step_failures(res)
    assert pg_fingerprint(tcp, "real") == before
    with postgres.transaction(tcp) as cur:
        cur.execute("select to_regclass('publications') is null")
        assert cur.fetchall()[0][0]  # not even the log was written


def test_a_table_publication_did_not_write_is_never_replaced(pg: str, release: Release) -> None:
    """The target table named ``real`` in a database that holds real data: refused under the lock."""
    uri = create_database(pg, "holds_real")
    postgres.replace_tables(uri, {"real": release.real})
    before = pg_fingerprint(uri, "real")
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=uri, table="real").publish(release.clean, release_id="r1", sha256="s1")
    assert pg_fingerprint(uri, "real") == before


def test_the_socket_identity_is_complete(pg: str) -> None:
    ident = postgres.identity(f"{socket_uri(pg)}/postgres")
    assert len(ident) == 4 and all(ident)  # database, port, start time, system identifier


def _parquet_inputs(tmp_path: Path, release: Release) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name, df in (("real", release.real), ("holdout", release.holdout), ("synthetic", release.clean)):
        df.write_parquet(data / f"{name}.parquet")
    return data


@pytest.mark.parametrize("spelling", ["data/real.parquet", "./data/../data/real.parquet", "link.parquet"])
def test_a_target_that_is_an_input_file_is_refused_end_to_end(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    monkeypatch.chdir(tmp_path)
    data = _parquet_inputs(tmp_path, release)
    os.symlink(data / "real.parquet", tmp_path / "link.parquet")
    before = sha(data / "real.parquet")
    settings = ReleaseSettings(
        database="",
        policy=POLICY,
        schema_gate=False,
        real="select * from read_parquet('data/real.parquet')",
        holdout="select * from read_parquet('data/holdout.parquet')",
        synthetic="select * from read_parquet('data/synthetic.parquet')",
        publish_target=spelling,
    )
    res = run(
        build_release_definitions(settings=settings, on_evaluation=None), dg.DagsterInstance.ephemeral()
    )
    assert not res.success and "published_release" not in materialized(res)
    failures = step_failures(res)
    assert any("is the input" in f and "real.parquet" in f for f in failures), failures
    assert sha(data / "real.parquet") == before


def test_a_directory_target_inside_a_globbed_folder_is_refused(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "real_parts"
    data.mkdir()
    release.real.write_parquet(data / "part-0.parquet")
    inputs = locate("", ["select * from read_parquet('real_parts/*.parquet')"])
    for target in ("real_parts", "real_parts/published", str(data / "part-0.parquet")):
        with pytest.raises(PublicationRefused, match="input"):
            PublishTarget(path=target).guard("", ["select * from read_parquet('real_parts/*.parquet')"])
    assert data / "part-0.parquet" in inputs.files
    PublishTarget(path=str(tmp_path / "published")).guard(
        "", ["select * from read_parquet('real_parts/*.parquet')"]
    )


def test_hard_links_duckdb_files_and_computed_file_names(tmp_path: Path, release: Release) -> None:
    db = tmp_path / "release.duckdb"
    from dagster_privacy.pipeline.demo_run import write_tables

    write_tables(db, {"real": release.real})
    os.link(db, tmp_path / "alias.duckdb")
    with pytest.raises(PublicationRefused, match="is the input"):
        PublishTarget(path=str(tmp_path / "alias.duckdb")).guard(str(db), ["real"])
    with pytest.raises(PublicationRefused, match="computed"):  # the files cannot be told: refused
        PublishTarget(path=str(tmp_path / "out.parquet")).guard("", ["select * from read_csv('a' || '.csv')"])
    PublishTarget(path=str(tmp_path / "out.parquet")).guard(str(db), ["real"])  # a separate file: fine


def test_a_file_publication_did_not_write_is_never_replaced(tmp_path: Path, release: Release) -> None:
    mine = tmp_path / "someone_elses.parquet"
    release.real.write_parquet(mine)
    before = sha(mine)
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=str(mine)).publish(release.clean, release_id="r1", sha256="s1")
    assert sha(mine) == before
    ok = PublishTarget(path=str(tmp_path / "pub.parquet"))
    ok.publish(release.clean, release_id="r1", sha256="s1")
    ok.publish(release.clean, release_id="r2", sha256="s2")  # its own file: replaced
    assert pl.read_parquet(tmp_path / "pub.parquet").height == release.clean.height
    theirs = tmp_path / "theirs.duckdb"
    from dagster_privacy.pipeline.demo_run import write_tables

    write_tables(theirs, {"release": release.real})  # a table named like the release, no log
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=str(theirs)).publish(release.clean, release_id="r1", sha256="s1")


@pytest.mark.parametrize(
    "query",
    [
        'select * from "real_parts/*".parquet',  # a quoted schema and a table name make the path
        "select * from read_parquet('file://{d}/real_parts/part-0.parquet')",
        "from query('from read_parquet(''real_parts/part-?.parquet'')')",
        "select * from read_parquet('real_parts/part-?.parquet') -- was x.duckdb:real",
    ],
    ids=["schema-dot-table", "file-uri", "query-function", "duckdb-colon-in-comment"],
)
def test_spellings_that_read_the_same_files_are_refused(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """Review of issue 31: each read the real folder while the guard saw no file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real_parts").mkdir()
    release.real.write_parquet(tmp_path / "real_parts" / "part-0.parquet")
    with pytest.raises(PublicationRefused, match="input"):
        PublishTarget(path="real_parts").guard("", [query.format(d=tmp_path)])


def test_an_input_duckdb_file_read_through_query_is_refused_and_computed_table_functions_pass(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster_privacy.pipeline.demo_run import write_tables

    monkeypatch.chdir(tmp_path)
    (tmp_path / "db").mkdir()
    write_tables(tmp_path / "db" / "real.duckdb", {"real": release.real})
    q = "from query('from read_duckdb(''db/real.duckdb'', table_name := ''real'')')"
    with pytest.raises(PublicationRefused, match="is the input"):
        PublishTarget(path="db/real.duckdb").guard("", [q])
    # table functions that read no file may take computed arguments: not refused
    ok = "select * from read_parquet('a.parquet') t, unnest([1, 2]) u"
    PublishTarget(path=str(tmp_path / "out.duckdb")).guard("", [ok])


def test_a_duckdb_table_of_another_case_or_schema_is_not_replaced(tmp_path: Path, release: Release) -> None:
    from dagster_privacy.pipeline.demo_run import write_tables

    theirs = tmp_path / "theirs.duckdb"
    write_tables(theirs, {"real": release.real})
    before = sha(theirs)
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=str(theirs), table="REAL").publish(release.clean, release_id="r1", sha256="s1")
    assert sha(theirs) == before


def test_the_guard_and_publication_read_a_tilde_path_alike(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    written = PublishTarget(path="~/pub.parquet").publish(release.clean, release_id="r1", sha256="s1")
    assert Path(written) == (tmp_path / "pub.parquet").resolve() and not (tmp_path / "~").exists()


def test_withdrawn_content_is_refused_under_the_lock_and_audit_flags_a_republication(
    tmp_path: Path, release: Release
) -> None:
    """Issue 31 case 3: a publisher read 'not withdrawn' before taking the lock, a withdrawal won the
    race, and the withdrawn content was published again. The check now runs under the target's lock,
    on the state the publication would replace; a log that reads publish, withdraw, publish without an
    approval in between (written by an older version) is flagged by audit verify."""
    from dagster_privacy.pipeline.governance.audit import verify_publications

    target = PublishTarget(path=str(tmp_path / "pub.duckdb"))
    target.publish(release.clean, release_id="r1", sha256="s1")
    assert target.withdrawn("s1") is None  # what the racing publisher saw before the lock
    target.withdraw(release_id="r1", by="officer", reason="leak found")  # the withdrawal wins the race
    with pytest.raises(PublicationRefused, match="was withdrawn as release r1"):
        target.publish(release.clean, release_id="r1", sha256="s1")
    assert [r["action"] for r in target.log()] == ["publish", "withdraw"]
    target.publish(release.clean, release_id="r1", sha256="s1", withdrawn_ok=True)  # as the old race did
    problems = verify_publications([], target.log(), "pub.duckdb")
    assert len(problems) == 1 and "published again" in problems[0] and "without an approval" in problems[0]


@pytest.mark.parametrize(
    "text", ["ok\rApproved by Eve", "a\x1b[Kb", "name\u202eevil", "x\u2066y", "tab\there"]
)
def test_people_text_with_control_or_bidi_characters_is_refused(
    tmp_path: Path, release: Release, text: str
) -> None:
    """Issue 31 case 7: a reason holding \\r and ESC[K displayed as another officer's approval."""
    from dagster_privacy.pipeline.governance.audit import AuditError, AuditLog
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release

    target = PublishTarget(path=str(tmp_path / "pub.duckdb"))
    target.publish(release.clean, release_id="r1", sha256="s1")
    audit = AuditLog(tmp_path / "audit.duckdb")
    for by, reason in ((text, "a reason"), ("Dana", text)):
        with pytest.raises(AuditError, match="control or bidirectional characters"):
            withdraw_release(target, release_id="r1", by=by, reason=reason, audit=audit)
    assert target.held() is not None and not (tmp_path / "audit.duckdb").exists()  # nothing written


def test_the_cli_withdraws_from_postgresql_and_refuses_log_less_targets_and_audit_files_with_exit_2(
    pg: str, tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 cases 4, 5, 10: `withdraw` insisted on a DuckDB file (a PostgreSQL publication could
    not be withdrawn from the CLI); x.parquet / x.csv targets and an x.csv audit ended with exit 3; an
    audit file holding the real data's tables was written into."""
    from click.testing import CliRunner

    from dagster_privacy.cli import cli
    from dagster_privacy.pipeline.demo_run import write_tables

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    uri = create_database(pg, "cli_withdraw")
    PublishTarget(path=uri).publish(release.clean, release_id="r1", sha256="s1")
    audit = str(tmp_path / "audit.duckdb")
    args = ["withdraw", "--release", "r1", "--by", "Dana", "--reason", "leak", "--audit", audit]
    res = CliRunner().invoke(cli, [*args, "--target", uri])
    assert res.exit_code == 0, res.output
    assert PublishTarget(path=uri).held() is None
    res = CliRunner().invoke(cli, ["audit", "verify", "--audit", audit, "--target", uri])
    assert res.exit_code == 0 and "1 decision(s), hash chain intact" in res.output, res.output
    release.clean.write_parquet(tmp_path / "x.parquet")
    release.clean.write_csv(tmp_path / "x.csv")
    for bad in (["--target", "x.parquet"], ["--target", "x.csv"]):
        res = CliRunner().invoke(cli, [*args, *bad])
        assert res.exit_code == 2 and "publication target" in res.output, res.output
    res = CliRunner().invoke(cli, ["audit", "verify", "--audit", "x.csv"])
    assert res.exit_code == 2 and "DuckDB file" in res.output, res.output
    write_tables(tmp_path / "release.duckdb", {"real": release.real})  # the real data's database
    before = sha(tmp_path / "release.duckdb")
    PublishTarget(path=str(tmp_path / "pub.duckdb")).publish(release.clean, release_id="r2", sha256="s2")
    res = CliRunner().invoke(
        cli, [*args[:2], "r2", *args[3:-1], str(tmp_path / "release.duckdb"), "--target", "pub.duckdb"]
    )
    assert res.exit_code == 2 and "file of its own" in res.output, res.output
    assert sha(tmp_path / "release.duckdb") == before


def test_postgresql_uris_are_parsed_as_uris_not_form_data(pg: str, release: Release) -> None:
    """Issue 31 case 11: '+' in ?query= was decoded as a space (the query read `age` into a column
    named `fnlwgt`); other parameters were re-encoded (options=-c%20statement_timeout%3D5000 failed);
    an empty-host socket URI was mangled."""
    from dagster_privacy.data.postgres import split

    uri = create_database(pg, "uris")
    postgres.replace_tables(uri, {"real": release.real})
    got = postgres.read(f"{uri}?query=select%20age+1%20as%20a%20from%20real")
    assert got.columns == ["a"] and got["a"].to_list() == [v + 1 for v in release.real["age"].to_list()]
    opts = f"{uri}?options=-c%20statement_timeout%3D5000&table=real"
    assert split(opts) == (f"{uri}?options=-c%20statement_timeout%3D5000", "real")
    assert postgres.read(opts).height == release.real.height
    assert split("postgresql:///db?host=/run/postgresql&table=t") == (
        "postgresql:///db?host=/run/postgresql",
        "t",
    )


def test_a_uri_cannot_switch_the_servers_string_syntax_away_from_the_one_select_check(pg: str) -> None:
    """Issue 31, 'worth a line': options=-cstandard_conforming_strings=off made PostgreSQL read a
    backslash in a literal as an escape while the one-SELECT check (DuckDB's parser) reads it as a
    character, so the two could see different statements. The read transaction sets it back on:
    'a\\b' is three characters whatever the URI says."""
    uri = create_database(pg, "strings")
    off = f"{uri}?options=-cstandard_conforming_strings%3Doff"
    query = urllib.parse.quote("select length('a\\b') as n", safe="")
    assert postgres.read(f"{off}&query={query}")["n"].to_list() == [3]
    assert postgres.read(f"{uri}?query={query}")["n"].to_list() == [3]


def test_a_duckdb_target_that_publication_did_not_write_is_never_rewritten(tmp_path) -> None:
    """Issue 44, break 4: an IO manager that reports a remote mirror left the input guard nothing to
    compare, and the warehouse file holding the real table was rewritten (new inode, tables added). A
    DuckDB target now carries a mark; an existing file without it is refused, except one an earlier
    version wrote (only the release table and the publication log)."""
    import duckdb

    from dagster_privacy.pipeline.publication import duckdb_target
    from dagster_privacy.pipeline.publication.target import PublicationRefused, PublishTarget

    df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    warehouse = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(warehouse))
    con.execute("create table real as select 1 as a, 'CANARY' as b")
    con.close()
    before = (warehouse.stat().st_ino, warehouse.read_bytes())
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=str(warehouse), table="release").publish(df, release_id="v1", sha256="s1")
    assert (warehouse.stat().st_ino, warehouse.read_bytes()) == before
    fresh = tmp_path / "published.duckdb"
    PublishTarget(path=str(fresh), table="release").publish(df, release_id="v1", sha256="s1")
    assert duckdb_target.MARK in duckdb_target.tables_of(fresh)
    PublishTarget(path=str(fresh), table="release").publish(df, release_id="v2", sha256="s2")  # ours: fine
    # a file an earlier version wrote: the release table and its log, no mark: accepted, and marked
    from dagster_privacy.data.tables import fingerprint

    legacy = tmp_path / "legacy.duckdb"
    PublishTarget(path=str(legacy), table="release").publish(df, release_id="v1", sha256=fingerprint(df))
    con = duckdb.connect(str(legacy))
    con.execute(f"drop table {duckdb_target.MARK}")
    con.close()
    PublishTarget(path=str(legacy), table="release").publish(df, release_id="v2", sha256="s2")
    assert duckdb_target.MARK in duckdb_target.tables_of(legacy)
    # the same, with one more table (the real one beside an old release): refused
    con = duckdb.connect(str(legacy))
    con.execute(f"drop table {duckdb_target.MARK}")
    con.execute("create table real as select 1 as a")
    con.close()
    with pytest.raises(PublicationRefused, match="not written by publication"):
        PublishTarget(path=str(legacy), table="release").publish(df, release_id="v3", sha256="s3")
    # second review: a foreign pair of tables named like an old target (someone's `release` and a
    # `publications` table of their own) is not an old target: refused untouched
    logs = (
        'create table publications (title varchar, "rows" int)',
        "create table publications (release_id varchar, note varchar)",
        "create table publications (release_id varchar, sha256 varchar, published_at varchar)",
    )
    for log_sql in logs:
        foreign = tmp_path / f"foreign{len(log_sql)}.duckdb"
        con = duckdb.connect(str(foreign))
        con.execute("create table release as select 'CANARY' as name, '123-45-6789' as ssn")
        con.execute(log_sql)
        if "sha256" in log_sql:  # a row that does not account for the table's content
            con.execute("insert into publications values ('v0', 'not-the-fingerprint', 'x')")
        else:
            con.execute("insert into publications values ('a', 1)" if "title" in log_sql else
                        "insert into publications values ('a', 'b')")  # fmt: skip
        con.close()
        before = foreign.read_bytes()
        with pytest.raises(PublicationRefused, match="not written by publication"):
            PublishTarget(path=str(foreign), table="release").publish(df, release_id="v1", sha256="s1")
        assert foreign.read_bytes() == before
