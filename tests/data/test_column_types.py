"""The column types users bring (issue 23): datetimes stored as text, free text, high-cardinality
categories (docs/metrics.md, "Table model")."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.cli import main
from dagster_privacy.data import tables as tb
from dagster_privacy.demo import load_demo
from dagster_privacy.engine import spaces
from dagster_privacy.evaluate import prepare
from dagster_privacy.metrics.attacks.singling_out import _prepare

IDS = ["dcr", "ims", "dcr_percentile", "singling_out_univariate", "inference_ml", "membership_inference"]
FAST = {"inference_ml": {"n_attacks": 300, "n_estimators": 10}}


def _policy() -> dict:
    return {"preset": "report-only", "metrics": {m: {"params": FAST.get(m, {})} for m in IDS}}


def _tables(n: int = 1200, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    demo = load_demo().select(["age", "education", "sex", "hours-per-week", "income"])
    rng = np.random.default_rng(seed)
    df = demo[rng.permutation(demo.height)[:n]]
    days = rng.integers(0, 9000, n)
    df = df.with_columns(
        pl.Series("opened", [dt.date(1995, 1, 1) + dt.timedelta(days=int(d)) for d in days]),
        pl.Series("code", [f"AC-{v}" for v in rng.integers(0, 50_000, n)]),
        pl.Series("note", [f"called about the card limit, reference number {v}" for v in rng.permutation(n)]),
    )
    real, hold = df[: n // 2], df[n // 2 :]
    syn = pl.concat([hold[: n // 4], real[: n // 4]])  # half the synthetic rows copied
    return real, syn, hold


def _as_text(df: pl.DataFrame, fmt: str = "%Y-%m-%d") -> pl.DataFrame:
    return df.with_columns(pl.col("opened").dt.strftime(fmt))


def _values(ev: dp.Evaluation) -> dict:
    return {r.id: (r.value, r.ci) for r in ev.results}


def test_a_date_stored_as_text_is_detected_and_reads_as_the_date_column() -> None:
    real, syn, hold = _tables()
    kw = dict(metrics=IDS, policy=_policy(), progress=False)
    as_dates = dp.evaluate(real, syn, hold, **kw)
    as_text = dp.evaluate(_as_text(real), _as_text(syn), _as_text(hold), **kw)
    col = next(c for c in as_text.schema_["columns"] if c["name"] == "opened")
    assert col == {"name": "opened", "kind": "numerical", "format": "%Y-%m-%d"}
    assert any("'opened': text parsed as datetimes" in n for n in as_text.schema_["notes"])
    assert _values(as_text) == _values(as_dates)  # the same epoch seconds, the same figures


def test_an_explicit_datetime_format_and_a_value_that_does_not_parse() -> None:
    dates = _tables()
    real, syn, hold = (_as_text(t, "%d/%m/%Y") for t in dates)
    # day-first text matches no detected format: a category until declared
    assert tb.infer_schema(real).kind("opened") == "categorical"
    kinds = {"opened": "datetime:%d/%m/%Y"}
    ctx, _ = prepare(real, syn, hold, column_kinds=kinds)
    assert ctx.schema.column("opened").format == "%d/%m/%Y"
    ref, _ = prepare(*dates)  # the same dates as a Date column
    assert (
        ctx.table("real").get_column("opened").to_list() == ref.table("real").get_column("opened").to_list()
    )
    bad = syn.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(pl.lit("CANARY-31/02"))
        .otherwise(pl.col("opened"))
        .alias("opened")
    )
    with pytest.raises(tb.TableError) as info:
        prepare(real, bad, hold, column_kinds=kinds)
    msg = str(info.value)
    assert "1 value(s) do not parse as %d/%m/%Y" in msg and "synthetic" in msg and "CANARY" not in msg
    with pytest.raises(tb.TableError, match="no datetime format fits"):
        tb.infer_schema(real.with_columns(pl.lit("soon").alias("opened")), {"opened": "datetime"})


def test_cli_datetime_kind_and_a_bad_value_exit_2_without_the_value(tmp_path, capsys) -> None:
    real, syn, hold = (_as_text(t, "%d/%m/%Y") for t in _tables(400))
    syn = syn.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit("CANARY-99/99"))
        .otherwise(pl.col("opened"))
        .alias("opened")
    )
    paths = {}
    for role, t in (("real", real), ("synthetic", syn), ("holdout", hold)):
        paths[role] = tmp_path / f"{role}.parquet"  # Parquet keeps the dates as text
        t.write_parquet(paths[role])
    argv = ["evaluate", *(f"--{r}={p}" for r, p in paths.items()), "--metrics", "dcr"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--column-kind", "opened=datetime:%d/%m/%Y"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "\n" not in err and "CANARY" not in err and "do not parse" in err


def test_free_text_is_left_out_with_its_reason_and_a_copied_note_blocks() -> None:
    real, syn, hold = _tables()
    ev = dp.evaluate(real, syn, hold, metrics=["dcr"], policy=_policy(), progress=False)
    left = {c["name"]: c for c in ev.schema_["excluded"]}
    assert left["note"]["reason"] == "free text: long, mostly distinct strings"
    assert left["note"]["synthetic_values_in_real"] == real.height // 2  # the copied rows' notes
    assert ev.verdict is dp.Status.FAIL and any("note" in f for f in ev.findings)
    doc = json.dumps(ev.to_json())
    assert "reference number" not in doc and "AC-" not in doc  # names and counts, never values
    # short repeated strings stay categories, and a long text column with few values is not free text
    remarks = [f"a long but often repeated remark, kind {i % 5}" for i in range(real.height)]
    few = real.with_columns(pl.Series("note", remarks))
    assert tb.infer_schema(few).kind("note") == "categorical"


def test_onehot_dims_keep_the_most_frequent_categories(monkeypatch) -> None:
    monkeypatch.setattr(spaces, "HIGH_CARDINALITY", 3)
    values = pl.Series("c", ["b", "a", "b", "c", "d", "d", "b", "e"])
    cats = sorted(set(values.to_list()))  # a b c d e
    # b (3) → 0, d (2) → 1, the rest (a, c, e: once each) share dimension 2
    assert spaces._onehot_dims(values, cats).tolist() == [2, 0, 2, 1, 2]
    assert spaces._onehot_dims(values.head(3), ["a", "b"]).tolist() == [0, 1]  # few categories: their own


def test_a_high_cardinality_column_is_capped_and_left_out_of_predicates() -> None:
    real, syn, hold = _tables()
    ctx, _ = prepare(real, syn, hold)
    width = ctx.euclidean("real").shape[1]
    plain, _ = prepare(real.drop("code"), syn.drop("code"), hold.drop("code"))
    assert width == plain.euclidean("real").shape[1] + tb.HIGH_CARDINALITY
    assert ctx.encoder.high_cardinality("code") and not ctx.encoder.high_cardinality("education")
    assert any("'code'" in n and "high-cardinality" in n for n in ctx.schema.notes)
    pr = _prepare(ctx)
    assert ctx.schema.names.index("code") not in pr.cols and len(pr.cols) == len(ctx.schema.names) - 1
    # unseen synthetic codes land in the shared "other" dimension for the classifier features
    capped = ctx.encoder.capped_codes(ctx.table("synthetic"), "code")
    assert capped.max() == tb.HIGH_CARDINALITY - 1 and capped.min() >= 0


def test_a_high_cardinality_secret_caps_the_classifier_classes() -> None:
    real, syn, hold = _tables()
    policy = _policy()
    policy["metrics"]["inference_ml"]["params"] = {"n_attacks": 300, "n_estimators": 5, "min_class_rows": 1}
    ev = dp.evaluate(
        real, syn, hold, metrics=["inference_ml"], policy=policy, sensitive_columns=["code"], progress=False
    )
    r = ev["inference_ml"]
    # ~600 classes of one row each: capped at HIGH_CARDINALITY − 1 labels plus "rare", not 600 models
    assert r.status is not dp.Status.ERROR and r.value is not None and 0.0 <= r.value <= 1.0
