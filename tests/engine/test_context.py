"""The evaluation context shares each neighbour query between metrics."""

from __future__ import annotations

from dagster_privacy.calibration import leaky_split
from dagster_privacy.decision.policy import resolve
from dagster_privacy.demo import load_demo
from dagster_privacy.evaluate import prepare, run_metrics


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


def _figures(ev) -> dict:
    return {r.id: (r.value, r.raw, r.details) for r in ev.results}


def test_spaces_and_queries_are_freed_before_the_metrics_that_read_none_and_no_figure_moves() -> None:
    split = leaky_split(load_demo()[:800], 0.2, seed=0)
    runs = {}
    for ids in (["dcr", "singling_out_multivariate"], ["dcr"], ["singling_out_multivariate"]):
        ctx, fp = prepare(split.train, split.synthetic, split.control)
        runs[tuple(ids)] = (ctx, run_metrics(ctx, resolve("report-only", ids), fingerprints=fp))
    both_ctx, both = runs[("dcr", "singling_out_multivariate")]
    dcr_ctx, dcr = runs[("dcr",)]
    _, so = runs[("singling_out_multivariate",)]
    # dcr's space and query freed before singling out ran (it reads codes only), kept where dcr is the last
    # metric (the histograms' queries come after the metrics, in either)
    assert not both_ctx._projected and not [k for k in both_ctx._nn if k[0] == "projected"]
    assert dcr_ctx._projected and ("projected", None, "real", "synthetic") in dcr_ctx._nn
    assert _figures(both) == {**_figures(dcr), **_figures(so)}
    assert both.distances == dcr.distances == so.distances and both.distances["sides"]


def test_a_metric_that_declares_no_spaces_reads_none() -> None:
    from dagster_privacy.metrics import registry
    from dagster_privacy.metrics.registration import run

    split = leaky_split(load_demo()[:600], 0.2, seed=1)
    declared = [spec for spec in registry().values() if not spec.spaces]
    assert {s.id for s in declared} >= {"singling_out_univariate", "singling_out_multivariate"}
    for spec in declared:
        ctx, _ = prepare(split.train, split.synthetic, split.control)
        run(spec, ctx, {})
        assert not ctx._euclid and not ctx._nn and not ctx._projected, spec.id


def test_every_query_of_the_standard_evaluation_is_computed_once_though_queries_are_freed() -> None:
    """Each metric declares the queries it reads (registry ``queries=``); a query no metric left reads is
    freed. A read left undeclared would compute its query a second time: counted here."""
    split = leaky_split(load_demo()[:800], 0.2, seed=3)
    computed: list[str] = []
    ctx, fp = prepare(split.train, split.synthetic, split.control)
    ctx._on_query = computed.append
    ev = run_metrics(ctx, resolve("standard"), fingerprints=fp)
    assert len(computed) == len(set(computed)) >= 8, computed
    assert ev.distances["sides"]
    assert {k[2:] for k in ctx._nn} == {("synthetic", "real"), ("holdout", "real")}  # the histograms'


def test_a_query_asked_after_its_mirror_was_freed_is_computed_alone() -> None:
    """The histograms ask synthetic→real after the metrics; cvp's real→synthetic (its mirror, paired with
    it while planned) was freed before singling out: synthetic→real alone, not the pair again."""
    split = leaky_split(load_demo()[:600], 0.2, seed=4)
    computed: list[str] = []
    ctx, fp = prepare(split.train, split.synthetic, split.control)
    ctx._on_query = computed.append
    run_metrics(ctx, resolve("standard", ["cvp", "singling_out_univariate"]), fingerprints=fp)
    assert len(computed) == len(set(computed)), computed


def test_a_context_others_borrow_from_keeps_what_it_computed() -> None:
    split = leaky_split(load_demo()[:600], 0.2, seed=4)
    ctx, fp = prepare(split.train, split.synthetic, split.control)
    run_metrics(ctx, resolve("standard", ["mdcr", "singling_out_univariate"]), fingerprints=fp, free=False)
    assert ctx._euclid and ("euclidean", None, "real", "real") in ctx._nn
