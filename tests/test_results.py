"""The result type: JSON round trip, frame, no in-memory fields in the JSON."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

import dagster_privacy as dp
from dagster_privacy.evaluation import Evaluation


def test_json_round_trip_and_frame() -> None:
    real = pl.DataFrame({"x": [0, 1, 3, 7, 8], "c": ["a", "b", "a", "c", "b"]})
    ev = dp.evaluate(real, real[:3], metrics=["crp", "mdcr"], policy="standard", progress=False)
    text = ev.to_json()
    doc = json.loads(text)
    assert "flagged" not in doc["metrics"][0] and "seconds" not in doc["metrics"][0]
    assert set(doc["timings"]["metrics"]) == {"crp", "mdcr"}
    back = Evaluation.from_json(text)
    assert back.to_json() == text
    assert back["crp"].value == ev["crp"].value and back.verdict is ev.verdict
    frame = ev.to_frame()
    assert frame.columns[:3] == ["id", "family", "risk"]
    assert frame.filter(pl.col("id") == "crp")["value"][0] == ev["crp"].value
    # flagged stays in memory: the three synthetic rows are copies
    assert np.array_equal(ev["crp"].flagged, [0, 1, 2])


def test_from_json_refuses_an_unjudged_result_or_a_verdict_its_results_contradict() -> None:
    import pytest

    real = pl.DataFrame({"x": [0, 1, 3, 7, 8], "c": ["a", "b", "a", "c", "b"]})
    doc = json.loads(
        dp.evaluate(real, real[:3], metrics=["crp"], policy="standard", progress=False).to_json()
    )
    assert doc["verdict"] == "fail"  # three copies: crp blocks
    edited = {**doc, "verdict": "pass"}
    with pytest.raises(ValueError, match="disagrees"):
        Evaluation.from_json(edited)
    unjudged = {**doc, "metrics": [{**doc["metrics"][0], "status": None}]}
    with pytest.raises(ValueError, match="not judged"):
        Evaluation.from_json(unjudged)


def test_a_lineage_that_is_empty_or_absent_does_not_fail() -> None:
    """Review of the renovation: ``"lineage": []`` in a document read as not failed before the verdict
    rule moved to decision/verdict.py, and still does."""
    from dagster_privacy.decision.verdict import lineage_failed

    assert not lineage_failed(None) and not lineage_failed({}) and not lineage_failed([])  # type: ignore[arg-type]
    assert lineage_failed({"status": "fail"}) and not lineage_failed({"status": "pass"})
