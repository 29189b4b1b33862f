"""A copy is a copy after a few edits (issue 55): the margin strata count records a synthetic row is nearer
to than any other real record by a margin (in cells, in the distance gates' space, on the key columns);
values the real tables never hold block on every route; remediate leaves no counted copy."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.engine import exposure as ex
from dagster_privacy.engine import exposure_cells as cells


def test_margin_part_known_answer() -> None:
    own = (np.array([0.0, 2.0, 4.0, 5.0]), np.array([4.0, 1.0]))
    syn = (np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.0, 0.0]))
    nearest = np.array([3, 2, 1, 0])
    two = ex.margin_part(own, syn, nearest, 5, cells=2)  # rare: own ≥ 4; exposed: syn ≤ 2
    assert two.rare_train.tolist() == [False, False, True, True]
    assert two.exposed_train.tolist() == [False, False, True, False]
    assert two.exposed_holdout.tolist() == [True, False] and two.rare_holdout.tolist() == [True, False]
    assert two.exposing.tolist() == [False, True, False, False, False]  # the exposed record's nearest row
    tenth = ex.margin_part(own, (np.array([0.0, 0.1, 0.5, 0.4]), syn[1]), nearest, 5, ratio=0.1)
    assert tenth.exposed_train.tolist() == [
        False,
        True,
        False,
        True,
    ]  # 0.1 < 0.2, 0.4 < 0.5; 0.5 ≥ 0.4; twin: no


@pytest.fixture(scope="module")
def split():
    return leaky_split(load_demo().head(3000), 0.0, seed=3)


def _evaluate(train, synthetic, control, **kw) -> dp.Evaluation:
    return dp.evaluate(train, synthetic, holdout=control, metrics=["exposed_records"], progress=False, **kw)


def _part(ev: dp.Evaluation, name: str) -> dict:
    return next(p for p in ev["exposed_records"].decision["parts"] if p["part"] == name)


def _own_cells(train: pl.DataFrame, control: pl.DataFrame) -> np.ndarray:
    """Each training record's cells to its nearest other record of both tables (a pairwise reference)."""
    both = pl.concat([train, control]).to_numpy()
    t = train.to_numpy()
    out = np.empty(len(t), dtype=int)
    for i, row in enumerate(t):
        d = (both != row).sum(axis=1)
        d[i] = 10**6
        out[i] = d.min()
    return out


def _two_cells_changed(rows: pl.DataFrame, train: pl.DataFrame, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    text = [c for c, t in train.schema.items() if t == pl.String]
    out = []
    for row in rows.iter_rows(named=True):
        for c in rng.choice(text, size=2, replace=False):
            pool = [v for v in train.get_column(c).unique().drop_nulls().to_list() if v != row[c]]
            row[c] = pool[int(rng.integers(0, len(pool)))]
        out.append(row)
    return pl.DataFrame(out, schema=train.schema)


def test_copies_with_two_cells_changed_fail_where_chance_is_thin(split) -> None:
    own = _own_cells(split.train, split.control)
    far = split.train.filter(pl.Series(own >= 4)).head(30)  # nearer to their person by ≥ 2 cells
    assert far.height == 30
    clean = _evaluate(split.train, split.release, split.control)
    altered = _two_cells_changed(far, split.train, 0)
    ev = _evaluate(split.train, pl.concat([split.release, altered]), split.control)
    before, after = _part(clean, "cells_2"), _part(ev, "cells_2")
    assert before["rare"] == after["rare"] == int((own >= 4).sum())  # the stratum is the records' alone
    assert after["exposed"] - before["exposed"] >= 29  # each copy counted (one may land on another)
    assert ev["exposed_records"].status is dp.Status.FAIL and clean["exposed_records"].passed
    assert any(p in ev["exposed_records"].reason for p in ("cells_2", "sole_2"))


def _cells_to(rows: pl.DataFrame, real: pl.DataFrame) -> np.ndarray:
    """(rows, real records) cells that differ: a pairwise reference."""
    r = real.to_numpy()
    return np.stack([(r != row).sum(axis=1) for row in rows.to_numpy()])


def test_two_cell_copies_of_records_three_cells_from_another_fail_on_sole_2(split) -> None:
    # a record with another record three cells away is in no record-side stratum at two cells, but its
    # copy, two cells off, is four or more from everyone else: it singles its person out
    own = _own_cells(split.train, split.control)
    near = split.train.filter(pl.Series(own == 3)).head(120)
    altered = _two_cells_changed(near, split.train, 1)
    both = pl.concat([split.train, split.control])
    d = _cells_to(altered, both)
    at = np.flatnonzero(own == 3)[:120]
    to_own = d[np.arange(len(at)), at]
    d[np.arange(len(at)), at] = 10**6
    keep = (to_own == 2) & (d.min(axis=1) >= 4)
    copies = altered.filter(pl.Series(keep)).head(25)
    assert copies.height == 25
    clean = _evaluate(split.train, split.release, split.control)
    ev = _evaluate(split.train, pl.concat([split.release, copies]), split.control)
    assert _part(ev, "cells_2")["exposed"] == _part(clean, "cells_2")["exposed"]  # not its records
    assert _part(ev, "sole_2")["exposed"] - _part(clean, "sole_2")["exposed"] == 25
    assert ev["exposed_records"].status is dp.Status.FAIL and clean["exposed_records"].passed
    assert "sole_2" in ev["exposed_records"].reason


def test_sole_parts_match_a_pairwise_reference() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 6, (650, 9))
    x[400:] = x[rng.integers(0, 400, 250)]  # copies of real rows (some twins among the real ones) …
    x[450:, 0] = (x[450:, 0] + 1) % 6  # … with one cell altered
    x[550:, 1] = (x[550:, 1] + 1) % 6  # … and a second
    cuts = ((0, 300), (300, 450), (450, 650))  # training, holdout, synthetic
    frames = [pl.DataFrame({f"c{j}": x[a:b, j].astype(str) for j in range(9)}) for a, b in cuts]
    keys = {r: cells.cell_keys(f) for r, f in zip("ths", frames, strict=True)}
    total = {r: k.sum(axis=1, dtype=np.uint64) for r, k in keys.items()}
    pooled = (np.concatenate([keys["t"], keys["h"]]), np.concatenate([total["t"], total["h"]]))
    parts = cells.sole_parts(keys, total, pooled, 300)
    real = pl.concat(frames[:2])
    d = _cells_to(frames[2], real)
    twin = (_cells_to(real, real) == 0).sum(axis=1) > 1
    for k in (1, 2):
        first = d.min(axis=1)
        nearest = d.argmin(axis=1)
        second = np.sort(d, axis=1)[:, 1]
        rows = (first == k) & (second >= k + 2)
        expect = np.zeros(real.height, dtype=bool)
        expect[nearest[rows]] = True
        expect &= ~twin
        part = parts[f"sole_{k}"]
        assert np.concatenate([part.exposed_train, part.exposed_holdout]).tolist() == expect.tolist()
        assert part.exposing.tolist() == (rows & (nearest < 300) & expect[nearest]).tolist()
        assert expect.sum() >= 10, expect.sum()  # the reference sees some at each k


def test_a_weight_plus_one_is_nearer_to_its_record_than_any_other(split) -> None:
    rows = split.train.filter(~split.train.is_duplicated()).sample(40, seed=1)
    nudged = rows.with_columns(pl.col("fnlwgt") + 1)
    clean = _evaluate(split.train, split.release, split.control)
    ev = _evaluate(split.train, pl.concat([split.release, nudged]), split.control)
    assert _part(ev, "tenth")["exposed"] - _part(clean, "tenth")["exposed"] >= 38
    assert _part(ev, "hundredth")["exposed"] - _part(clean, "hundredth")["exposed"] >= 38
    assert _part(ev, "verbatim")["exposed"] == _part(clean, "verbatim")["exposed"]  # not a verbatim copy
    assert ev["exposed_records"].status is dp.Status.FAIL


def test_a_copy_kept_on_its_key_columns_singles_out_its_person(split) -> None:
    keys = ["age", "fnlwgt", "sex"]
    pooled = (
        pl.concat([split.train, split.control]).select(keys).is_duplicated().to_numpy()[: split.train.height]
    )
    rows = split.train.filter(pl.Series(~pooled)).sample(60, seed=2)  # chance on these keys is about 1 %
    changed = rows.with_columns(pl.lit("Other-service").alias("occupation"), pl.col("hours-per-week") + 7,
                                pl.lit("Divorced").alias("marital-status"))  # fmt: skip
    kw = {"key_columns": keys}
    clean = _evaluate(split.train, split.release, split.control, **kw)
    ev = _evaluate(split.train, pl.concat([split.release, changed]), split.control, **kw)
    assert _part(ev, "keys")["exposed"] - _part(clean, "keys")["exposed"] >= 59
    assert ev["exposed_records"].status is dp.Status.FAIL


def test_recoded_labels_block_on_the_api_route_unless_declared(split) -> None:
    rows = split.train.filter(~split.train.is_duplicated()).sample(20, seed=4)
    recoded = rows.with_columns(pl.col("sex").replace({"Male": "M", "Female": "F"}))
    release = pl.concat([split.release, recoded])
    ev = _evaluate(split.train, release, split.control)
    lines = [f for f in ev.findings if "never holds" in f]
    assert (
        ev.verdict is dp.Status.FAIL
        and len(lines) == 1
        and "'sex'" in lines[0]
        and "20 synthetic" in lines[0]
    )
    assert "Male" not in lines[0] and "M," not in lines[0]  # counts and names, never a value
    declared = {"preset": "standard", "waivers": {"new_values.sex": "the generator recodes sex on purpose"}}
    ok = _evaluate(split.train, release, split.control, policy=declared)
    assert not [f for f in ok.findings if "never holds" in f]
    clean = _evaluate(split.train, split.release, split.control)
    assert not [f for f in clean.findings if "never holds" in f]  # unseen real rows: chance, not a block


def test_remediate_leaves_no_counted_copy(split, tmp_path) -> None:
    from click.testing import CliRunner

    from dagster_privacy.cli import cli

    own = _own_cells(split.train, split.control)
    altered = _two_cells_changed(split.train.filter(pl.Series(own >= 4)).head(30), split.train, 5)
    nudged = (
        split.train.filter(~split.train.is_duplicated()).sample(30, seed=6).with_columns(pl.col("fnlwgt") + 1)
    )
    for name, df in (("t", split.train), ("h", split.control),
                     ("s", pl.concat([split.release, altered, nudged]))):  # fmt: skip
        df.write_csv(tmp_path / f"{name}.csv")
    out = tmp_path / "fixed.parquet"
    args = ["remediate", "--real", str(tmp_path / "t.csv"), "--holdout", str(tmp_path / "h.csv"),
            "--synthetic", str(tmp_path / "s.csv"), "--out", str(out), "--policy", "standard"]  # fmt: skip
    CliRunner().invoke(cli, args)
    fixed = pl.read_parquet(out)
    for planted in (altered, nudged):
        assert not fixed.join(planted, on=fixed.columns, how="semi").height  # every altered copy dropped
    again = _evaluate(split.train, fixed, split.control)
    assert again["exposed_records"].flagged is not None and again["exposed_records"].flagged.size == 0


def test_two_cells_emptied_across_columns_block_as_rows(split) -> None:
    """Two cells emptied per copy spread the nulls thin over the columns (a few per column, within each
    column's chance): the rows holding a new value in any column are tested together."""
    rng = np.random.default_rng(7)
    rows = split.train.filter(~split.train.is_duplicated()).sample(20, seed=7)
    cols = rows.columns
    emptied = pl.DataFrame(
        [{c: (None if c in set(rng.choice(cols, 2, replace=False)) else v) for c, v in r.items()}
         for r in rows.iter_rows(named=True)],
        schema=rows.schema,
    )  # fmt: skip
    ev = _evaluate(split.train, pl.concat([split.release, emptied]), split.control)
    assert any("never holds" in f and "missing" in f for f in ev.findings), ev.findings
    assert ev.verdict is dp.Status.FAIL


def test_a_holdout_too_small_to_test_new_values_falls_back_to_the_tolerance(split) -> None:
    """Second reading: a 3-row holdout let a whole re-coded column through (the exact test cannot reach
    its level there); where the holdout shows no new value, more than the tolerated rows block."""
    from dagster_privacy.data import new_values as nv
    from dagster_privacy.data.tables import infer_schema

    schema = infer_schema(split.train)
    recoded = split.release.with_columns(pl.col("sex").replace({"Male": "M", "Female": "F"}))
    assert "sex" in nv.blocked(nv.new_values(split.train, split.control.head(3), recoded, schema))
    assert nv.blocked(nv.new_values(split.train, split.control.head(3), split.release, schema)) == {}


def test_the_banded_p_value_by_hand() -> None:
    """cells_1 with its far band weighing 3 (issue 55): T = X_band + 3·X_far, each binomial given its
    exposed count. One band exposure (π 2/3) and one far one (π 2/3): T ≥ 4 only when both are
    training records, 4/9; with the far one on the holdout side T = 1 is reached whenever X_band = 1 or
    X_far = 1: 1 − (1/3)(1/3) = 8/9."""
    from dagster_privacy.decision.exposure_count import p_value_banded

    assert p_value_banded((2, 4, 0, 2), (1, 2, 0, 1), 3) == pytest.approx(4 / 9)
    assert p_value_banded((1, 4, 1, 2), (0, 2, 1, 1), 3) == pytest.approx(8 / 9)
    assert p_value_banded((0, 4, 2, 2), (0, 2, 1, 1), 3) == 1.0
    # weight 1: the merged count's binomial when both bands share π
    from dagster_privacy.decision.exposure_count import p_value

    assert p_value_banded((9, 60, 3, 30), (4, 20, 1, 10), 1) == pytest.approx(p_value(9, 3, 2 / 3))


def test_the_banded_test_keeps_its_level_and_far_copies_weigh_more() -> None:
    """Under no memorisation (each exposure a training record with its band's π) the banded test fails
    at most its level over many draws; a far copy lowers the p-value more than a band copy does."""
    from dagster_privacy.decision.exposure_count import p_value_banded

    rng = np.random.default_rng(55)
    level, draws, fails = 0.01, 4000, 0
    for _ in range(draws):
        m_b, m_f = rng.poisson(18), rng.poisson(1.0)
        x_b, x_f = rng.binomial(m_b, 2 / 3), rng.binomial(m_f, 2 / 3)
        band, far = (x_b + x_f, 6000, m_b + m_f - x_b - x_f, 3000), (x_f, 2000, m_f - x_f, 1000)
        fails += p_value_banded(band, far, 3) <= level
    assert fails / draws <= level + 3 * (level / draws) ** 0.5
    base = p_value_banded((20, 6000, 8, 3000), (2, 2000, 0, 1000), 3)
    assert p_value_banded((21, 6000, 8, 3000), (3, 2000, 0, 1000), 3) < p_value_banded(
        (21, 6000, 8, 3000), (2, 2000, 0, 1000), 3) < base  # fmt: skip


def test_the_far_band_is_the_records_three_cells_clear_and_within_one(split) -> None:
    """cells_1_far counts, among records no other real record comes within three cells of (the pairwise
    reference), those a synthetic row lies within one cell of; one-cell edits of such records land
    there and the gate's cells_1 row carries the band."""
    own = _own_cells(split.train, split.control)
    far_rows = split.train.filter(pl.Series(own >= 4))
    assert far_rows.height >= 15
    rng = np.random.default_rng(8)
    edited = []
    for row in far_rows.head(15).iter_rows(named=True):
        row["age"] = int(row["age"]) + 40 + int(rng.integers(0, 5))
        edited.append(row)
    release = pl.concat([split.release, pl.DataFrame(edited, schema=split.train.schema)])
    parts = cells.cells_strata(split.train, split.control, release)
    far = parts["cells_1_far"]
    assert far.rare_train.tolist() == (own >= 4).tolist()
    before = cells.cells_strata(split.train, split.control, split.release)["cells_1_far"]
    assert far.exposed_train.sum() - before.exposed_train.sum() == 15
    assert (far.exposed_train <= parts["cells_1"].exposed_train).all()  # a band of cells_1
    ev = _evaluate(split.train, release, split.control)
    row = _part(ev, "cells_1")
    assert row["band"] == {"part": "cells_1_far", "weight": 3}
    assert _part(ev, "cells_1_far")["p_value"] is None  # no level of its own


def test_a_far_band_that_is_not_within_its_part_falls_back_to_the_merged_test() -> None:
    """Review: a far band with more records than its part (only a hash collision could do it) gave NaN,
    which no level rejects; it reads the merged count's p-value."""
    from dagster_privacy.decision.exposure_count import p_value, p_value_banded

    got = p_value_banded((5, 100, 1, 50), (7, 20, 0, 10), 3)
    assert got == pytest.approx(p_value(5, 1, 100 / 150)) and 0.0 <= got <= 1.0


def _narrow(n: int, seed: int) -> pl.DataFrame:
    """Two flags and two exact amounts (ISLR Default's shape): no record is two cells clear of another
    with the same flags, so cells_1 has no record to count."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "default": rng.choice(["No", "Yes"], n, p=[0.97, 0.03]), "student": rng.choice(["No", "Yes"], n),
        "balance": np.round(rng.gamma(2.0, 400.0, n), 6), "income": np.round(rng.normal(33000, 13000, n), 6),
    })  # fmt: skip


def test_nudged_copies_on_a_narrow_table_of_exact_numbers_fail_on_cells_1_wide() -> None:
    """Review of the battery: on ISLR Default 100 nudged copies (income + a quarter of its sd) reached no
    part (0 of 20). Within one cell of a record no other real record comes within one cell of: chance
    is near zero on exact amounts, so 40 such copies fail and the clean release does not."""
    train, hold, clean = _narrow(3000, 1), _narrow(1500, 2), _narrow(1500, 3)
    copies = train.sample(40, seed=4).with_columns(pl.col("income") + 0.25 * train.get_column("income").std())
    parts = cells.cells_strata(train, hold, pl.concat([clean, copies]))
    assert "cells_1" not in parts or not parts["cells_1"].rare_train.any()
    wide = parts["cells_1_wide"]
    assert wide.rare_train.mean() > 0.99 and wide.exposed_train.sum() >= 40
    assert wide.exposed_holdout.sum() == 0
    ev = _evaluate(train, pl.concat([clean, copies]), hold)
    r = ev["exposed_records"]
    assert r.status.value == "fail" and "cells_1_wide" in r.reason
    assert _evaluate(train, clean, hold)["exposed_records"].status.value != "fail"


def test_two_cell_copies_on_a_small_wide_table_fail() -> None:
    # 25 columns: 2,300 column triples, more than MAX_MASKS, but few records (600 pooled): the strata at
    # two cells are affordable there and were left out (Attrition, 31 columns: two-cell edits 5 of 20)
    rng = np.random.default_rng(11)
    x = rng.integers(0, 4, (1000, 25)).astype(str)
    frame = pl.DataFrame({f"c{j}": x[:, j] for j in range(25)})
    train, hold, fresh = frame[:400], frame[400:600], frame[600:]
    copies = train[:30].with_columns(pl.lit("x").alias("c0"), pl.lit("y").alias("c1"))  # two cells altered
    parts = cells.cells_strata(train, hold, pl.concat([fresh, copies]))
    assert parts["sole_2"].exposed_train[:30].all() and parts["sole_2"].exposed_holdout.sum() <= 2
    ev = _evaluate(train, pl.concat([fresh, copies]), hold)
    assert ev["exposed_records"].status is dp.Status.FAIL
