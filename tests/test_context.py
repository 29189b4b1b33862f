"""The evaluation context shares each neighbour query between metrics."""

from __future__ import annotations

from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.evaluate import prepare, run_metrics
from dagster_privacy.policy import resolve


def test_each_shared_query_is_computed_once_at_the_largest_declared_k() -> None:
    split = leaky_split(load_demo()[:800], 0.2, seed=0)
    ctx, fp = prepare(split.train, split.synthetic, split.control)
    # mdcr asks euclidean real→synthetic with k = 1 before the holdout indicators ask it with k = 5
    run_metrics(
        ctx, resolve("report-only", ["mdcr", "nnaa", "dcr_percentile", "knn_percentile"]), fingerprints=fp
    )
    labels = [label for label in ctx.query_seconds if label.startswith("euclidean real→synthetic")]
    assert labels == ["euclidean real→synthetic k=5"]
    assert [la for la in ctx.query_seconds if la.startswith("euclidean synthetic→real")] == [
        "euclidean synthetic→real k=5"
    ]
    # a later k = 1 request is served from the cache
    before = dict(ctx.query_seconds)
    assert ctx.neighbors("euclidean", "real", "synthetic", 1).k == 1
    assert ctx.query_seconds == before
