"""Hostile input through `dagster-privacy evaluate` (issue 18): fail closed, leak nothing.

Contract: bad input → exit 2, stderr exactly one line "dagster-privacy: error: …", no traceback; no canary
(a value planted in the real table) in stdout, stderr or any file written; no file outside the declared
outputs; a leaky release never exits 0. Each test runs the CLI in a subprocess inside tmp_path (HOME too).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gates import signed_yaml

ADULT = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "adult.csv"
CANARIES = ("CANARY-7Q2X", "31337731", "BRIEN-CANARY", "555-01-")  # planted values, and the ssn prefix
METRICS = "crp,ims,dcr,dcr_percentile,nndr"
ERR = "dagster-privacy: error:"
MPL = str(Path.home() / ".cache" / "matplotlib")  # the font cache is not an output of the run


@functools.lru_cache(maxsize=1)
def adult() -> tuple[list[str], list[list[str]]]:
    """Header and rows 0-399: 0-199 real, 200-299 holdout, 300-399 unseen rows of the same population."""
    with ADULT.open(newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:401]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@dataclasses.dataclass
class Run:
    rc: int
    out: str = dataclasses.field(repr=False)
    err: str
    written: dict[str, bytes] = dataclasses.field(repr=False)  # files new or changed by the run
    stray: list[str]  # ... and not among the declared outputs


def run(d: Path, *args: str, outputs: tuple[str, ...] = ()) -> Run:
    """`python -m dagster_privacy.cli ARGS` with cwd and HOME in d (PYTHONPATH picks the code under test)."""
    before, env = snapshot(d), {**os.environ, "HOME": str(d / "home"), "COLUMNS": "200", "MPLCONFIGDIR": MPL}
    env.pop("DAGSTER_PRIVACY_DEBUG", None)
    p = subprocess.run(
        [sys.executable, "-m", "dagster_privacy.cli", *args],
        cwd=d,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
        check=False,
    )
    changed = [k for k, h in snapshot(d).items() if before.get(k) != h]
    written = {k: (d / k).read_bytes() for k in changed}
    return Run(p.returncode, p.stdout, p.stderr, written, [k for k in changed if k not in outputs])


def assert_no_leak(r: Run, extra: tuple[str, ...] = ()) -> None:
    assert "Traceback" not in r.out + r.err, r
    for c in CANARIES + extra:
        assert c not in r.out, f"{c!r} in stdout: {r}"
        assert c not in r.err, f"{c!r} in stderr: {r}"
        for name, data in r.written.items():
            assert c.encode() not in data, f"{c!r} in written file {name}"
    assert not r.stray, f"files written outside the declared outputs: {r.stray}"


def assert_bad_input(r: Run, extra: tuple[str, ...] = ()) -> None:
    assert r.rc == 2, r
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERR) and lines[0][len(ERR) :].strip(), r
    assert_no_leak(r, extra)


def assert_closed(r: Run, extra: tuple[str, ...] = ()) -> None:
    """A leaky release: exit 1 (fail) or 2 (refused as bad input), never 0 or 3."""
    assert r.rc in (1, 2), r
    (assert_bad_input if r.rc == 2 else assert_no_leak)(r, extra)


@pytest.fixture
def d(tmp_path: Path) -> Path:
    """real.csv (canaries planted), holdout.csv, syn.csv (leaky: 50 real copies + 50 unseen), clean.csv."""
    h, rows = adult()
    real = [r[:] for r in rows[:200]]
    real[3][h.index("native-country")] = "CANARY-7Q2X"
    real[5][h.index("fnlwgt")] = "31337731"
    write_csv(tmp_path / "real.csv", h, real)
    write_csv(tmp_path / "holdout.csv", h, rows[200:300])
    write_csv(tmp_path / "syn.csv", h, real[:50] + rows[300:350])
    write_csv(tmp_path / "clean.csv", h, rows[300:400])
    (tmp_path / "home").mkdir()
    return tmp_path


def ev(*extra: str, real="real.csv", syn="syn.csv", holdout="holdout.csv", metrics=METRICS) -> list[str]:
    """evaluate's arguments; the policy is the default, `standard`, unless extra gives --policy."""
    return [
        "evaluate",
        "--real",
        real,
        "--synthetic",
        syn,
        "--holdout",
        holdout,
        "--metrics",
        metrics,
        *extra,
    ]


def edit(d: Path, src: str, dst: str, fn) -> None:
    """dst = src with fn(header, rows) applied (fn edits in place)."""
    with (d / src).open(newline="") as f:
        h, *rows = list(csv.reader(f))
    fn(h, rows)
    write_csv(d / dst, h, rows)


def column(name: str, value) -> object:
    """An edit (for `edit`) appending column `name` with value(i) in row i."""

    def add(h, rows):
        h.append(name)
        for i, r in enumerate(rows):
            r.append(value(i))

    return add


#: narrow policies, each loosening of standard waived (issue 54): they test what their gates see
GATE = signed_yaml(
    "metrics:\n  dcr: {threshold: 0.42, severity: ERROR}\n  nndr: {threshold: 0.85, severity: ERROR}\n"
)


# ----------------------------------------------------------------------------- controls (pass today)


def test_control_leaky_fails(d):
    assert_closed(run(d, *ev()))


def test_control_clean_passes(d):
    # issue 32: 200 training and 100 holdout rows cannot show that ims and dcr_percentile stay under
    # 0.02 (one natural duplicate; a 2 % quantile of 2 rows): the clean release lacks evidence there,
    # exit 1 with that reason, never a gate failure; crp passes it
    r = run(d, *ev(syn="clean.csv", metrics="crp,dcr,nndr"))
    assert r.rc == 1 and "not assessed: singling out, linkability, inference, membership" in r.out, r.out
    assert_no_leak(r)
    r = run(d, *ev(syn="clean.csv"))
    blocks = [line for line in r.out.splitlines() if line.startswith("blocked by:")]
    assert r.rc == 1 and blocks == [
        "blocked by: not assessed: singling out, linkability, inference (no gate of the policy ran for it)"
    ], r  # a subset assessing membership alone: never a failing gate on the clean release
    assert_no_leak(r)


def test_control_gate_policy_fails_leaky(d):
    (d / "gate.yaml").write_text(GATE)
    assert run(d, *ev("--policy", "gate.yaml", metrics="dcr,nndr")).rc == 1


def test_control_single_select_still_reads(d):
    assert_closed(run(d, *ev(real="select * from read_csv('real.csv')")))


# ------------------------------------------------------------------------ 1 non-finite numbers


@pytest.mark.parametrize("token", ["inf", "-inf", "1e300", "-1.7976931348623157e308"])
def test_1_inf_in_synthetic_age_does_not_open_gate(d, token):
    """An infinite number is bad input; a huge finite one is compared (clipped, far from every row)."""
    (d / "gate.yaml").write_text(GATE)
    edit(d, "syn.csv", "syn.csv", lambda h, rows: rows[60].__setitem__(h.index("age"), token))
    assert_closed(run(d, *ev("--policy", "gate.yaml", metrics="dcr,nndr")))


@pytest.mark.parametrize("token", ["nan", "-inf"])
def test_extra_nonfinite_in_holdout(d, token):
    edit(d, "holdout.csv", "holdout.csv", lambda h, rows: rows[0].__setitem__(h.index("age"), token))
    assert_closed(run(d, *ev()))


def test_extra_real_range_beyond_float64(d):
    """The real age column spans more than float64 holds: the distance metrics error, the gate fails."""

    def extremes(h, rows):
        rows[0][h.index("age")], rows[1][h.index("age")] = "-1.7e308", "1.7e308"

    edit(d, "real.csv", "real.csv", extremes)
    (d / "gate.yaml").write_text(GATE)
    assert_closed(run(d, *ev("--policy", "gate.yaml", metrics="dcr,nndr")))


# ------------------------------------------------------------------------ 2 columns left out


def test_2_copied_ssn_column_fails(d):
    add_ssn = column("ssn", lambda i: f"555-01-{i:04d}")
    edit(d, "real.csv", "real.csv", add_ssn)
    edit(d, "clean.csv", "syn_ssn.csv", add_ssn)  # unseen records, but the real table's SSNs copied
    r = run(d, *ev(syn="syn_ssn.csv"))
    assert r.rc == 1, r
    assert_no_leak(r)


# ------------------------------------------------------------------------ 3 SQL that writes

READ = "select * from read_csv('real.csv')"


@pytest.mark.parametrize(
    "sql",
    [
        f"select 1; copy ({READ}) to 'out.csv'; {READ}",
        f"select 1; attach 'evil.duckdb' as e; create table e.t as {READ}; {READ}",
        f"select 1; install httpfs; {READ}",
        f"select 1; copy ({READ}) to '/dev/stdout'; {READ}",
        f"with t as (select 1) select 1; copy ({READ}) to 'out.parquet' (format parquet); {READ}",
    ],
    ids=["copy", "attach-create", "install", "copy-stdout", "with-copy-parquet"],
)
def test_3_sql_input_that_writes_is_refused(d, sql):
    assert_bad_input(run(d, *ev(real=sql)))


@pytest.mark.parametrize(
    "what",
    [
        "copy (select * from real) to 'x.csv'",
        "select 1; copy (select * from real) to 'x.csv'; select * from real",
    ],
    ids=["copy", "stacked-copy"],
)
def test_3_duckdb_file_input_that_writes_is_refused(d, what):
    import duckdb

    with duckdb.connect(str(d / "db.duckdb")) as con:
        con.execute(f"create table real as select * from read_csv('{d / 'real.csv'}')")
    assert_bad_input(run(d, *ev(real=f"db.duckdb:{what}")))


# ------------------------------------------------------------------------ 4 library messages


@pytest.mark.parametrize(
    "sql",
    [
        """select cast("native-country" as integer) as x, * from read_csv('real.csv') where """
        """"native-country" like 'CANA%'""",
        "select cast(max(fnlwgt) as smallint) as x from read_csv('real.csv')",
        """select cast(occupation as integer) as x, * from read_csv('real.csv') where occupation """
        """like 'O''B%'""",
    ],
    ids=["cast-text", "cast-number", "apostrophe"],
)
def test_4_cast_error_does_not_leak(d, sql):
    edit(
        d,
        "real.csv",
        "real.csv",
        lambda h, rows: rows[7].__setitem__(h.index("occupation"), "O'BRIEN-CANARY"),
    )
    assert_bad_input(run(d, *ev(real=sql)))


def test_4_apostrophe_value_in_error_path(d):
    # a value with an apostrophe in a column the synthetic table types differently (numerical vs text)
    edit(d, "syn.csv", "syn_txt.csv", lambda h, rows: rows[70].__setitem__(h.index("age"), "O'BRIEN-CANARY"))
    assert_bad_input(run(d, *ev(syn="syn_txt.csv")))


# ------------------------------------------------------------------------ 5 malformed CSV


def test_5_headerless_real_csv(d):
    lines = (d / "real.csv").read_text().splitlines(keepends=True)
    (d / "real.csv").write_text("".join(lines[4:] + lines[1:4]))  # no header; the canary row first
    assert_bad_input(run(d, *ev()), extra=("State-gov", "Never-married"))


def test_5_ragged_last_line(d):
    (d / "real.csv").write_text((d / "real.csv").read_text() + "39,State-gov,77516\n")
    r = run(d, *ev())
    assert_bad_input(r)
    assert "usable column" not in r.err, r


# ------------------------------------------------------------------------ 6 policy


def test_6_metric_not_in_policy_does_not_pass(d):
    (d / "only_crp.yaml").write_text(signed_yaml("metrics:\n  crp: {threshold: 0.05, severity: ERROR}\n"))
    assert_closed(run(d, *ev("--policy", "only_crp.yaml", metrics="ims,dcr_percentile")))


def test_6_error_entry_without_threshold(d):
    (d / "p.yaml").write_text("metrics:\n  crp: {severity: ERROR}\n")
    assert_bad_input(run(d, *ev("--policy", "p.yaml")))


@pytest.mark.parametrize(
    "text",
    [
        "- crp\n- ims\n",
        "metrics:\n  crp: {threshold: abc, severity: ERROR}\n",
        "metrics:\n  crp: {threshold: .nan, severity: ERROR}\n",
        "metrics: [crp]\n",
        "metrics:\n  crp: {threshold: 0.05, severity: ERROR, on: ci_lower}\n",
        "seed: -5\n",
        "metrics: {crp: {threshold: 0.05}}\n\tbad: [\n",
    ],
    ids=["list", "abc", "nan", "metrics-list", "on-unknown", "seed-negative", "tab-yaml"],
)
def test_extra_bad_policy_file(d, text):
    (d / "p.yaml").write_text(text)
    assert_bad_input(run(d, *ev("--policy", "p.yaml")))


# ------------------------------------------------------------------------ 7 paths that look like SQL


@pytest.mark.parametrize(
    "role,path",
    [
        ("real", "table.csv"),
        ("syn", "from-vendor/syn.csv"),
        ("holdout", "values 2024.csv"),
        ("syn", "select.csv"),
        ("syn", "with data/syn.csv"),
    ],
)
def test_7_existing_path_is_a_path(d, role, path):
    (d / path).parent.mkdir(parents=True, exist_ok=True)
    (d / path).write_bytes((d / f"{role}.csv").read_bytes())
    r = run(d, *ev(**{role: path}))
    assert r.rc == 1, r  # read as a file: the leaky release fails
    assert_no_leak(r)


# ------------------------------------------------------------------------ 8 exit codes


@pytest.mark.parametrize(
    "opt,target",
    [  # a missing directory; a path under a file; a directory
        ("--json", "missing/out.json"),
        ("--json", "real.csv/out.json"),
        ("--report", "real.csv/out.html"),
        ("--json", "home"),
        ("--report", "home"),
    ],
)
def test_8_unwritable_output(d, opt, target):
    assert_bad_input(run(d, *ev(opt, target)))


@pytest.mark.parametrize("seed", ["-5", str(2**70)], ids=["negative", "huge"])
def test_8_bad_seed(d, seed):
    assert_bad_input(run(d, *ev("--seed", seed)))


def test_8_two_valued_column_with_1e19(d):
    def big(h, rows):
        for i, r in enumerate(rows):  # same parity in real and its copies: copies stay exact
            r[h.index("capital-loss")] = "1e19" if i % 2 else "0"

    for name in ("real.csv", "syn.csv", "holdout.csv"):
        edit(d, name, name, big)
    r = run(d, *ev())
    assert r.rc != 3, r
    assert_closed(r, extra=("1e19", "1e+19", "e19", "10000000000000000000"))


# ------------------------------------------------------------------------ extras


def test_extra_json_over_an_input_is_refused(d):
    before = (d / "real.csv").read_bytes()
    r = run(d, *ev("--json", "real.csv"))
    assert (d / "real.csv").read_bytes() == before, f"the real table was overwritten: {r}"
    assert_bad_input(r)


def test_extra_outputs_hold_no_canary(d):
    r = run(d, *ev("--json", "out.json", "--report", "out.html"), outputs=("out.json", "out.html"))
    assert r.rc == 1, r
    assert_no_leak(r)


def test_extra_empty_synthetic(d):
    (d / "empty.csv").write_text((d / "syn.csv").read_text().splitlines()[0] + "\n")
    assert_bad_input(run(d, *ev(syn="empty.csv")))


def test_extra_non_utf8_bytes(d):
    data = (d / "real.csv").read_bytes().replace(b"CANARY-7Q2X", b"CANARY-7Q2X-\xe9\xff")
    (d / "real.csv").write_bytes(data)
    assert_closed(run(d, *ev()))


def test_extra_duplicate_column_names(d):
    lines = (d / "real.csv").read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace("fnlwgt", "age", 1)
    (d / "real.csv").write_text("".join(lines))
    assert_bad_input(run(d, *ev()))


def test_extra_sql_injection_column_name(d):
    evil = 'a"; drop table x; --'
    for name in ("real.csv", "syn.csv", "holdout.csv"):
        edit(d, name, name, lambda h, rows: h.__setitem__(h.index("race"), evil))
    r = run(d, *ev("--key-columns", f"age,{evil}", "--column-kind", f"{evil}=categorical"))
    assert r.rc == 1, r
    assert_no_leak(r)


@pytest.mark.parametrize(
    "args",
    [
        ("--column-kind", "nosuch=categorical"),
        ("--column-kind", "age=bogus"),
        ("--key-columns", "nosuch"),
        ("--source-index-column", "nosuch"),
        ("--metrics", "nosuch"),
        ("--policy", "nosuch"),
    ],
    ids=lambda a: "-".join(a).strip("-"),
)
def test_extra_bad_options(d, args):
    assert_bad_input(run(d, *ev(*args)))


@pytest.mark.parametrize("real", [".", "nosuch.csv", "real.csv.xlsx", "db.duckdb:real"])
def test_extra_bad_paths(d, real):
    (d / "real.csv.xlsx").write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    assert_bad_input(run(d, *ev(real=real)))


def test_extra_holdout_with_extra_column(d):
    edit(d, "holdout.csv", "holdout.csv", lambda h, rows: [h.append("x"), *[r.append("1") for r in rows]])
    assert_bad_input(run(d, *ev()))


def test_extra_quoted_newline_value(d):
    edit(
        d,
        "real.csv",
        "real.csv",
        lambda h, rows: rows[9].__setitem__(h.index("occupation"), "CANARY-7Q2X\nx,y"),
    )
    assert_closed(run(d, *ev()))


# ------------------------------------------------------------------- a second reviewer's breaks

DHD = signed_yaml("metrics:\n  dcr_holdout_diff: {threshold: 0.10, severity: ERROR}\n")


@pytest.mark.parametrize("token", ["10000", "1e200", "-1e308"])
def test_one_huge_finite_cell_does_not_swamp_a_mean_of_distances(d, token):
    """One synthetic age far outside the real range used to drive dcr_holdout_diff to 0.0 (exit 0)."""
    (d / "dhd.yaml").write_text(DHD)
    edit(d, "syn.csv", "syn.csv", lambda h, rows: rows[60].__setitem__(h.index("age"), token))
    r = run(d, *ev("--policy", "dhd.yaml", "--column-kind", "fnlwgt=numerical", metrics="dcr_holdout_diff"))
    assert r.rc == 1, r
    assert_no_leak(r)


def test_copies_stored_as_float32_are_copies(d):
    import polars as pl

    def scaled(h, rows):
        for r in rows:
            r[h.index("fnlwgt")] = str(int(r[h.index("fnlwgt")]) / 100)

    for name in ("real.csv", "syn.csv", "holdout.csv"):
        edit(d, name, name, scaled)
    pl.read_csv(d / "syn.csv").with_columns(pl.col("fnlwgt").cast(pl.Float32)).write_parquet(
        d / "syn.parquet"
    )
    (d / "copies.yaml").write_text(signed_yaml("metrics:\n  crp: {threshold: 0.05, severity: ERROR}\n"))
    r = run(d, *ev("--policy", "copies.yaml", syn="syn.parquet", metrics="crp"))
    assert r.rc == 1, r  # 50 of 100 synthetic rows are real rows: crp ≈ 0.25 > 0.05


def test_headerless_all_text_csv_names_no_column_by_a_record(d):
    h, rows = adult()
    text = [
        i
        for i, c in enumerate(h)
        if c in ("workclass", "education", "marital-status", "occupation", "native-country")
    ]
    real = [[rows[3][i] if j else "CANARY-7Q2X" for j, i in enumerate(text)]] + [
        [r[i] for i in text] for r in rows[:199]
    ]
    (d / "txt.csv").write_text("".join(",".join(r) + "\n" for r in real))
    assert_bad_input(
        run(d, *ev(real="txt.csv", syn="txt.csv", holdout="txt.csv", metrics="crp")),
        extra=("Handlers-cleaners",),
    )


@pytest.mark.parametrize("case", ["duckdb-input", "sql-input", "symlink"])
def test_outputs_never_replace_an_input_or_a_non_output(d, case):
    import duckdb

    with duckdb.connect(str(d / "db.duckdb")) as con:
        con.execute(f"create table real as select * from read_csv('{d / 'real.csv'}')")
    before = {p: (d / p).read_bytes() for p in ("db.duckdb", "real.csv")}
    if case == "duckdb-input":
        args = ev("--json", "db.duckdb", real="db.duckdb:real", metrics="crp")
    elif case == "sql-input":
        args = ev("--report", "real.csv", real="select * from read_csv('real.csv')", metrics="crp")
    else:
        (d / "out.html").symlink_to(d / "real.csv")
        args = ev("--report", "out.html", metrics="crp")
    assert_bad_input(run(d, *args))
    assert {p: (d / p).read_bytes() for p in before} == before


def test_a_left_out_identifier_copied_in_another_rendering_fails(d):
    edit(d, "real.csv", "real.csv", column("acct", lambda i: f"{7000000 + i:010d}"))  # '0007000000'
    edit(d, "clean.csv", "syn_acct.csv", column("acct", lambda i: f"{7000000 + i}"))  # the same, as integers
    edit(d, "holdout.csv", "holdout.csv", column("acct", lambda i: "x"))
    r = run(d, *ev("--column-kind", "fnlwgt=numerical", syn="syn_acct.csv", metrics="crp"))
    assert r.rc == 1 and "left out of every metric" in r.out, r


@pytest.mark.parametrize(
    "text",
    [
        "metrics:\n  crp: {threshold: 0.05, severity: ERROR}\n  crp: {threshold: 1.0, severity: WARN}\n",
        "metrics:\n  crp: {threshold: 0.05, severity: ERROR, severity: WARN}\n",
        "metrics:\n  crp: {threshold: 0.05, params: &a {x: [*a, *a]}}\n",
        "seed: " + "9" * 5000 + "\nmetrics:\n  crp: {threshold: 0.05}\n",
    ],
    ids=["duplicate-entry", "duplicate-key", "alias", "5000-digit-seed"],
)
def test_policy_that_reads_otherwise_than_it_looks_is_refused(d, text):
    (d / "p.yaml").write_text(text)
    assert_bad_input(run(d, *ev("--policy", "p.yaml", metrics="crp")))


def test_policy_that_is_not_utf8_is_refused(d):
    (d / "p.yaml").write_bytes(b"\xff\xfe\x00metrics")
    assert_bad_input(run(d, *ev("--policy", "p.yaml", metrics="crp")))


def test_a_time_of_day_column_is_a_number(d):
    for name in ("real.csv", "syn.csv", "holdout.csv"):
        edit(d, name, name, column("visit", lambda i: f"{i % 24:02d}:{i % 60:02d}:00"))
    r = run(d, *ev(metrics="crp"))
    assert r.rc == 1, r


def test_api_frame_conversion_errors_carry_no_value():
    import pandas as pd

    import dagster_privacy as dp

    real = pd.DataFrame({"age": [30, 40, 50, 60], "c": ["a", "b", "a", "b"]})
    bad = real.astype({"age": object})
    bad.loc[2, "age"] = "CANARY-7Q2X"
    with pytest.raises(dp.TableError) as info:
        dp.evaluate(bad, real, metrics=["crp"], policy="report-only", progress=False)
    assert "CANARY" not in str(info.value) and info.value.__cause__ is None
