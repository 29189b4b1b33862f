"""Nearest sets (dagster_privacy/engine/nearest_sets.py): both routes give every reference at the exact
minimum."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dagster_privacy.engine import nearest_sets as ns


def _brute(query: np.ndarray, ref: np.ndarray) -> list[set[int]]:
    """The definition: exact float64 squared distances, every reference within TIE_TOL of the minimum."""
    q, r = query.astype(np.float64), ref.astype(np.float64)
    d2 = ((q[:, None, :] - r[None, :, :]) ** 2).sum(axis=2)
    best = d2.min(axis=1, keepdims=True)
    return [set(np.nonzero(row <= b + ns.TIE_TOL)[0].tolist()) for row, b in zip(d2, best[:, 0], strict=True)]


def _collect(extra, ids, rows, refs):
    sets, lock = extra
    with lock:
        for i, j in zip(ids[rows].tolist(), refs.tolist(), strict=True):
            sets.setdefault(i, set()).add(j)
    return {"ties": np.bincount(rows, minlength=ids.size)[: ids.size]}


def _sets(query: np.ndarray, ref: np.ndarray) -> tuple[list[set[int]], np.ndarray]:
    found: dict[int, set[int]] = {}
    out = ns.nearest_sets(query, ref, _collect, (found, threading.Lock()))
    return [found.get(i, set()) for i in range(query.shape[0])], out["ties"]


def _tables(ties: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if ties:  # few distinct rows: most query rows tie with several references, some exactly
        ref = rng.integers(0, 3, size=(400, 5)).astype(np.float32) / 2
        query = rng.integers(0, 3, size=(900, 5)).astype(np.float32) / 2
    else:  # continuous, with copies of some references (a row at distance 0) and a few exact duplicates
        ref = rng.normal(size=(400, 7)).astype(np.float32)
        ref[300:304] = ref[:4]
        query = rng.normal(size=(900, 7)).astype(np.float32)
        query[::9] = ref[rng.integers(0, 400, size=100)]
        query[1::90] = ref[0]  # ten rows tied with references 0 and 300
    return query, ref


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("route", ["knn", "scan"])
def test_both_routes_give_the_exact_sets(monkeypatch, ties: bool, route: str) -> None:
    query, ref = _tables(ties, seed=5)
    monkeypatch.setattr(ns, "SAMPLE", 64)  # fewer rows than the query: the route is chosen
    monkeypatch.setattr(ns, "TIED_SHARE", 1.0 if route == "knn" else -1.0)
    want = _brute(query, ref)
    got, ties_count = _sets(query, ref)
    assert got == want
    assert ties_count.tolist() == [len(s) for s in want]
    if ties:  # the tables do exercise ties: a set of more than TIE_K, which the k-NN route hands on
        assert max(len(s) for s in want) > ns.TIE_K
    else:
        assert sum(len(s) > 1 for s in want) >= 5  # the duplicated references tie


def test_the_sample_picks_the_scan_for_a_table_of_ties_and_the_knn_for_a_continuous_one(monkeypatch) -> None:
    monkeypatch.setattr(ns, "SAMPLE", 64)
    routes = []
    real = ns._by_knn
    monkeypatch.setattr(ns, "_by_knn", lambda *a: routes.append("knn") or real(*a))
    _sets(*_tables(True, seed=7))
    assert routes == []
    rng = np.random.default_rng(7)
    query, ref = rng.normal(size=(900, 7)).astype(np.float32), rng.normal(size=(400, 7)).astype(np.float32)
    query[1::90] = ref[0]  # 1 % of the rows tie with a duplicated reference
    ref[300] = ref[0]
    got, _ = _sets(query, ref)
    assert routes == ["knn"] and got == _brute(query, ref)


def test_an_empty_query_and_a_one_row_reference() -> None:
    ref = np.zeros((1, 3), dtype=np.float32)
    got, ties = _sets(np.zeros((0, 3), dtype=np.float32), ref)
    assert got == [] and ties.size == 0
    query = np.random.default_rng(0).normal(size=(600, 3)).astype(np.float32)
    got, ties = _sets(query, ref)
    assert got == [{0}] * 600 and ties.tolist() == [1] * 600


def _rounded_apart(d: int = 120) -> tuple[np.ndarray, np.ndarray]:
    """q = (1, 1, 0.01, …) and two references near it: a's small coordinates picked so each float32
    partial sum of q·(−2a) rounds down, b's so each rounds up (two accumulators, even and odd terms, as
    this machine's BLAS adds them). b is nearer in float64 (by 4e-6), a nearer in float32 (by 2.4e-5),
    more than the former fixed slack of 2e-6 · (1 + ‖q‖² + max ‖r‖²) allowed for."""
    rng = np.random.default_rng(1)
    q = np.full(d, 0.01, np.float32)
    q[:2] = 1.0

    def build(sign: int) -> np.ndarray:
        r = np.empty(d, np.float32)
        r[:2] = 1.0
        acc = [np.float32(-2.0), np.float32(-2.0)]
        for j in range(2, d):
            cand = (0.01 + rng.uniform(-0.001, 0.001, 256)).astype(np.float32)
            exact = np.float64(acc[j % 2]) + -2.0 * float(q[j]) * cand.astype(np.float64)
            err = exact.astype(np.float32).astype(np.float64) - exact
            pick = int(np.argmin(err) if sign < 0 else np.argmax(err))
            r[j], acc[j % 2] = cand[pick], np.float32(exact[pick])
        return r

    a, b = build(-1), build(+1)
    a[-1] = q[-1] + 0.001
    far = np.full((62, d), 0.01, np.float32)
    far[:, :2] = 0.0
    return np.ascontiguousarray(np.tile(q, (600, 1))), np.ascontiguousarray(np.vstack([a, b, far]))


@pytest.mark.parametrize("route", ["knn", "scan"])
def test_a_reference_float32_rounding_puts_behind_is_still_the_nearest(monkeypatch, route: str) -> None:
    query, ref = _rounded_apart()
    want = _brute(query, ref)
    assert want[0] == {1}  # b, by the float64 definition
    monkeypatch.setattr(ns, "TIED_SHARE", 1.0 if route == "knn" else -1.0)
    got, _ = _sets(query, ref)
    assert got == want


def test_a_coordinate_that_is_not_finite_is_an_error_on_either_route() -> None:
    from dagster_privacy.errors import MetricError

    rng = np.random.default_rng(2)
    ref = rng.normal(size=(50, 3)).astype(np.float32)
    ref[7, 1] = np.nan
    for n in (300, 600):  # below and above the sample: the scan, then the k-NN route
        with pytest.raises(MetricError, match="not a finite number"):
            _sets(rng.normal(size=(n, 3)).astype(np.float32), ref)
