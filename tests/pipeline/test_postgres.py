"""PostgreSQL as a source and a publication target (issue 23), against a real server started here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import polars as pl
import pytest
from postgres_server import create_database

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.cli import main
from dagster_privacy.data import postgres
from dagster_privacy.data.loading import load
from dagster_privacy.demo import load_demo
from dagster_privacy.errors import TableError
from dagster_privacy.pipeline.demo_run import demo_policy, run_demo
from dagster_privacy.pipeline.publication.target import PublicationRefused, PublishTarget

CANARY = "CANARY-7f3a"


@pytest.fixture(scope="module")
def split():
    data = load_demo().head(2400)
    return leaky_split(data, 0.3, seed=0)


@pytest.fixture(scope="module")
def source(pg, split) -> str:
    uri = create_database(pg, "source")
    postgres.replace_tables(
        uri, {"real": split.train, "holdout": split.control, "synthetic": split.synthetic}
    )
    return uri


def _doc(ev: dp.Evaluation) -> dict:
    d = json.loads(ev.to_json())
    d.pop("timings")
    return d


def test_postgres_tables_read_as_the_same_frames_and_the_same_json(source, split) -> None:
    got = load(f"{source}?table=real", role="real")
    assert got.shape == split.train.shape and got.columns == split.train.columns
    assert got.sort(got.columns).equals(split.train.sort(got.columns))
    ids = list(demo_policy().metrics)
    kw = dict(metrics=ids, policy=demo_policy(), progress=False)
    from_pg = dp.evaluate(
        f"{source}?table=real", f"{source}?table=synthetic", f"{source}?table=holdout", **kw
    )
    from_frames = dp.evaluate(split.train, split.synthetic, split.control, **kw)
    assert _doc(from_pg) == _doc(from_frames)  # same figures, same fingerprints: the tables are the same
    # a query on the connection, schema-qualified names
    q = load(f"{source}?query=select * from public.real where age > 40", role="real")
    assert q.height == split.train.filter(pl.col("age") > 40).height
    assert load(f"{source}?table=public.real", role="real").height == split.train.height


def test_cli_evaluates_postgres_sources_and_writes_json(source, tmp_path, capsys) -> None:
    out = tmp_path / "ev.json"
    argv = ["evaluate", "--metrics", "ims,dcr", "--json", str(out)]
    argv += [f"--{r}={source}?table={t}" for r, t in (("real", "real"), ("synthetic", "synthetic"))]
    argv += [f"--holdout={source}?table=holdout"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code in (0, 1)
    assert {m["id"] for m in json.loads(out.read_text())["metrics"]} == {"ims", "dcr"}


@pytest.mark.parametrize(
    "query",
    [
        "drop table real",  # not a SELECT
        "select 1; drop table real",  # two statements
        "select nextval('s')",  # a write inside a SELECT: the READ ONLY transaction refuses it
        f"select * from real where workclass = '{CANARY}' and 1/0 = 1",  # an error quoting the text
    ],
)
def test_hostile_queries_fail_closed_in_one_line_without_their_text(source, query) -> None:
    with pytest.raises(TableError) as info:
        load(f"{source}?query={query}", role="real")
    msg = str(info.value)
    assert "\n" not in msg and CANARY not in msg and "drop table" not in msg and "nextval" not in msg
    assert load(f"{source}?table=real", role="real").height > 0  # nothing was dropped


def test_a_password_and_a_missing_table_never_travel(pg, source, capsys) -> None:
    with_password = source.replace("postgres@", f"postgres:{CANARY}@") + "?table=nope"
    with pytest.raises(TableError) as info:
        load(with_password, role="real")
    assert CANARY not in str(info.value) and "table nope" in str(info.value)
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--real", with_password, "--synthetic", with_password, "--metrics", "dcr"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and CANARY not in err and err.count("\n") == 1


def _publisher(uri: str, worker: int, n: int) -> str:
    return textwrap.dedent(
        f"""
        import polars as pl
        from dagster_privacy.pipeline.publication.target import PublishTarget
        t = PublishTarget(path={uri!r})
        for i in range({n}):
            df = pl.DataFrame({{"worker": [{worker}] * 50, "i": [i] * 50, "x": list(range(50))}})
            t.publish(df, release_id=f"w{worker}-{{i}}", sha256=f"sha-w{worker}-{{i}}")
        """
    )


def test_two_publishers_race_into_postgres_and_the_log_keeps_every_publication(pg) -> None:
    uri = create_database(pg, "race")
    procs = [
        subprocess.Popen([sys.executable, "-c", _publisher(uri, w, 20)], stderr=subprocess.PIPE)
        for w in (1, 2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-500:]
    target = PublishTarget(path=uri)
    log = target.log()
    assert len(log) == 40 and len({r["release_id"] for r in log}) == 40  # no lost update
    for w in (1, 2):  # each publisher's releases in its own order
        mine = [int(r["release_id"].split("-")[1]) for r in log if r["release_id"].startswith(f"w{w}-")]
        assert mine == list(range(20))
    held = target.held()
    assert held is not None
    df, row = held
    assert row == log[-1] and df.height == 50
    assert f"w{df['worker'][0]}-{df['i'][0]}" == row["release_id"]  # the table is the last logged release


def test_withdrawal_and_an_edited_log_are_refused_or_recorded(pg) -> None:
    uri = create_database(pg, "withdraw")
    target = PublishTarget(path=uri)
    target.publish(pl.DataFrame({"a": [1, 2]}), release_id="r1", sha256="s1")
    with pytest.raises(PublicationRefused, match="holds r1, not release r2"):
        target.withdraw(release_id="r2", by="officer", reason="test")
    info = target.withdraw(release_id="r1", by="officer", reason="test")
    assert info["action"] == "withdraw" and target.held() is None
    assert [r["action"] for r in target.log()] == ["publish", "withdraw"]
    assert target.withdrawn("s1")["release_id"] == "r1"
    postgres.replace_tables(uri, {"release": pl.DataFrame({"a": [9]})})  # written outside publication
    with pytest.raises(PublicationRefused, match="disagree"):
        target.held()


def test_the_target_is_never_the_source_database_however_it_is_spelt(pg, source) -> None:
    port = source.rsplit(":", 1)[1].split("/")[0]
    for alias in (
        source,
        source.replace("127.0.0.1", "localhost"),  # another host name for the same server
        f"postgresql://postgres@127.0.0.1:{port}/?dbname=source",  # the database as a parameter
        f"postgresql://postgres@127.0.0.1:{port}/%73ource",  # percent-encoded
    ):
        with pytest.raises(PublicationRefused, match="database holding the real data"):
            PublishTarget(path=alias).guard(source)
    with pytest.raises(PublicationRefused, match="cannot tell"):  # unreachable: fail closed
        PublishTarget(path=f"{pg}/does_not_exist").guard(source)
    PublishTarget(path=create_database(pg, "elsewhere")).guard(source)  # another database: fine


def test_two_release_tables_in_one_target_keep_their_own_logs(pg) -> None:
    uri = create_database(pg, "two_tables")
    a, b = PublishTarget(path=uri, table="adult"), PublishTarget(path=uri, table="census")
    a.publish(pl.DataFrame({"x": [1, 2, 3]}), release_id="A-1", sha256="aaa")
    b.publish(pl.DataFrame({"x": [4]}), release_id="B-1", sha256="bbb")
    assert a.held()[1]["release_id"] == "A-1" and a.held()[0].height == 3
    with pytest.raises(PublicationRefused, match="holds A-1, not release B-1"):
        a.withdraw(release_id="B-1", by="officer", reason="wrong table")
    a.withdraw(release_id="A-1", by="officer", reason="test")
    assert a.held() is None and b.held()[1]["release_id"] == "B-1"
    assert [r["release_id"] for r in b.log()] == ["B-1"]
    for bad in ("publications", "s2.rel", "a" * 41, 'x"y'):  # refused in one line, nothing written
        with pytest.raises(ValueError, match="plain name"):
            PublishTarget(path=uri, table=bad).publish(pl.DataFrame({"x": [1]}), release_id="r", sha256="s")


def test_names_parameters_and_types_postgres_gives(source, split, capsys) -> None:
    postgres.replace_tables(
        source, {"s2.t": pl.DataFrame({"dotted": [1, 2]})}
    )  # one table, a dot in its name
    assert load(f'{source}?table="s2.t"', role="real").columns == ["dotted"]
    with pytest.raises(TableError, match="one table= or one query="):
        load(f"{source}?table=real&table=holdout", role="real")
    bad_port = source.rsplit(":", 1)[0] + ":99999/source?table=real"
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--real", bad_port, "--synthetic", bad_port, "--metrics", "dcr"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    q = load(f"{source}?query=select age::numeric(6,1) / 2 as half from real", role="real")
    assert q.schema["half"] == pl.Float64 and q["half"].sum() == pytest.approx(split.train["age"].sum() / 2)
    with pytest.raises(TableError, match="'span' of the real table is a PostgreSQL interval"):
        load(f"{source}?query=select interval '1 day' as span", role="real")


def test_the_demo_story_from_postgres_tables_to_a_postgres_target(pg, tmp_path) -> None:
    src, pub = create_database(pg, "demo_src"), create_database(pg, "demo_pub")
    lines: list[str] = []
    on_pg = run_demo(tmp_path / "pg", echo=lines.append, database=src, publish_target=pub)
    on_duckdb = run_demo(tmp_path / "duckdb", echo=lambda _: None)
    assert on_pg.as_expected, "\n".join(lines)
    assert on_pg.published_ids == ["v1"] and PublishTarget(path=pub).held()[1]["release_id"] == "v1"
    for a, b in zip(on_pg.releases, on_duckdb.releases, strict=True):  # the same figures per check
        assert a.published == b.published and a.checks == b.checks
    assert not any("postgres@" in line for line in lines if "publication target" in line)
