"""Every file the product writes goes through data/atomic.py (issue 54, item 2): remediate wrote its
output at the fixed name ``.OUT.tmp`` and a link planted there overwrote the training table. Here the
random temporary name is made predictable (uuid4 fixed), and a link or a plain file is planted at it and
at the final name, for each writer: remediate, the JSON and the report of evaluate, calibrate, the
publication target. The planted file's target is never written; the input never changes."""

from __future__ import annotations

import hashlib
import uuid

import polars as pl
import pytest
from click.testing import CliRunner
from gates import OTHER_RISKS

from dagster_privacy.calibration import leaky_split
from dagster_privacy.cli import cli
from dagster_privacy.data import atomic
from dagster_privacy.demo import load_demo

FIXED = uuid.UUID(int=0xFEED)


@pytest.fixture
def predictable(monkeypatch):
    monkeypatch.setattr(atomic.uuid, "uuid4", lambda: FIXED)
    return FIXED.hex


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    sp = leaky_split(load_demo().head(600), 0.1, seed=1)
    for name, df in (("t", sp.train), ("h", sp.control), ("s", sp.synthetic)):
        df.write_csv(d / f"{name}.csv")
    (d / "p.yaml").write_text(
        "preset: standard\nmetrics:\n"
        + "".join(f"  {m}: {{threshold: {e['threshold']}}}\n" for m, e in OTHER_RISKS.items())  # fmt: skip
    )
    return d


def _sha(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _copy(tables, tmp_path):
    for f in tables.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    return _sha(tmp_path / "t.csv")


METRICS = "exposed_records,linkability,inference_distance,singling_out_univariate"


@pytest.mark.parametrize("planted", ["link", "file"])
def test_the_helper_never_writes_through_its_temporary_name(tmp_path, predictable, planted) -> None:
    victim = tmp_path / "victim.csv"
    victim.write_text("precious\n")
    out = tmp_path / "out.json"
    tmp = tmp_path / f".out.json.{predictable}.tmp"
    tmp.symlink_to(victim) if planted == "link" else tmp.write_text("planted\n")
    with pytest.raises(FileExistsError):
        atomic.write_bytes_atomically(out, b"{}")
    assert victim.read_text() == "precious\n" and not out.exists()
    assert tmp.is_symlink() if planted == "link" else tmp.read_text() == "planted\n"  # not ours: kept


def test_the_helper_refuses_an_output_that_is_an_input_by_identity(tmp_path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("a\n1\n")
    hard = tmp_path / "also.csv"
    hard.hardlink_to(data)  # another spelling of the same file
    with pytest.raises(atomic.OutputRefused, match="one of the input tables"):
        atomic.write_bytes_atomically(hard, b"x", inputs=[str(data)])
    link = tmp_path / "l.csv"
    link.symlink_to(data)
    with pytest.raises(atomic.OutputRefused):
        atomic.write_bytes_atomically(link, b"x", inputs=[f"{data}"])
    assert data.read_text() == "a\n1\n"


@pytest.mark.parametrize("planted", ["link", "file"])
def test_remediate_never_overwrites_the_training_table(tables, tmp_path, monkeypatch, planted) -> None:
    monkeypatch.chdir(tmp_path)
    sha = _copy(tables, tmp_path)
    args = [
        "remediate",
        "--real",
        "t.csv",
        "--holdout",
        "h.csv",
        "--synthetic",
        "s.csv",
        "--policy",
        "p.yaml",
    ]
    # the break as found: a link at the old fixed temporary name, pointing at the training table
    old = tmp_path / ".fixed.parquet.tmp"
    old.symlink_to(tmp_path / "t.csv") if planted == "link" else old.write_text("planted\n")
    res = CliRunner().invoke(cli, [*args, "--out", "fixed.parquet"])
    assert res.exit_code in (0, 1, 4), res.output
    assert _sha(tmp_path / "t.csv") == sha and pl.read_parquet(tmp_path / "fixed.parquet").height > 0
    # a link at the final name is refused before anything is written
    (tmp_path / "again.csv").symlink_to(tmp_path / "t.csv")
    res = CliRunner().invoke(cli, [*args, "--out", "again.csv"])
    assert res.exit_code == 2 and _sha(tmp_path / "t.csv") == sha


@pytest.mark.parametrize("option", ["--json", "--report"])
def test_evaluate_outputs_refuse_a_planted_temporary(
    tables, tmp_path, monkeypatch, predictable, option
) -> None:
    monkeypatch.chdir(tmp_path)
    sha = _copy(tables, tmp_path)
    name = "o.json" if option == "--json" else "o.html"
    (tmp_path / f".{name}.{predictable}.tmp").symlink_to(tmp_path / "t.csv")
    res = CliRunner().invoke(cli, ["evaluate", "--real", "t.csv", "--holdout", "h.csv", "--synthetic",
                                   "s.csv",
                                   "--policy", "p.yaml", "--metrics", METRICS, option, name])  # fmt: skip
    assert res.exit_code == 2 and "cannot write an output" in res.output, res.output
    assert _sha(tmp_path / "t.csv") == sha and not (tmp_path / name).exists()


def test_calibrate_and_publication_refuse_a_planted_temporary(tmp_path, predictable) -> None:
    from dagster_privacy.calibration.outcome import _replace
    from dagster_privacy.pipeline.publication.target import PublishTarget

    victim = tmp_path / "victim.csv"
    victim.write_text("precious\n")
    (tmp_path / f".calibration.json.{predictable}.json").symlink_to(victim)
    with pytest.raises(FileExistsError):
        _replace(tmp_path / "calibration.json", lambda p: p.write_text("{}"))
    # the publication target removes its own stale temporaries under its lock (a link is unlinked, its
    # target untouched), then creates the temporary exclusively
    (tmp_path / f".pub.parquet.{predictable}.parquet.tmp").symlink_to(victim)
    target = PublishTarget(path=str(tmp_path / "pub.parquet"))
    target.publish(pl.DataFrame({"a": [1]}), release_id="r1", sha256="0" * 64)
    assert victim.read_text() == "precious\n" and pl.read_parquet(tmp_path / "pub.parquet").height == 1
