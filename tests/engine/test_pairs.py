"""Each pair once (pairs.py): a self-query and a query with its mirror give exactly the neighbours of
the unpaired queries (neighbors.knn_euclidean), which are the exact k nearest by (distance, index)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.engine import pairs
from dagster_privacy.engine.neighbors import knn_euclidean
from dagster_privacy.engine.pairs import knn_pair, knn_self
from dagster_privacy.engine.topk import empty_top, smallest_update_cols


def _tables(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "offset":  # float32 scores cannot tell neighbours apart: re-ranked against whole tiles
        x = (300 + rng.random((1200, 5)) * 1e-2).astype(np.float32)
        x[600:650] = x[:50]  # exact duplicates: ties to the lowest index
        return x, x[::3].copy()
    # one-hot with rare values (added outside the product) and copies of x in y
    onehot = np.zeros((1300, 40), np.float32)
    onehot[np.arange(1300), np.where(rng.random(1300) < 0.8, 0, rng.integers(1, 40, 1300))] = 1
    x = np.hstack([rng.random((1300, 2)).astype(np.float32), onehot])
    return x, x[rng.integers(0, 1300, 900)].copy()


@pytest.mark.parametrize("kind", ["onehot", "offset"])
@pytest.mark.parametrize("tile", [64, 96, 320, 512, 800, 1024, None])
def test_each_pair_once_gives_the_unpaired_neighbours(kind: str, tile: int | None) -> None:
    x, y = _tables(kind, np.random.default_rng(0))
    want_x = knn_euclidean(x, y, 4, ref_tile=tile, farthest=True)
    want_y = knn_euclidean(y, x, 2, ref_tile=tile)
    got_x, got_y = knn_pair(x, y, 4, 2, ref_tile=tile, farthest=True)
    for got, want in ((got_x, want_x), (got_y, want_y)):
        np.testing.assert_array_equal(got.idx, want.idx)
        np.testing.assert_array_equal(got.dist, want.dist)
    assert got_x.farthest is not None and want_x.farthest is not None
    # x's rows in the unpaired query's blocks: the same float32 scores, the same farthest
    np.testing.assert_array_equal(got_x.farthest[1], want_x.farthest[1])
    np.testing.assert_array_equal(got_x.farthest[0], want_x.farthest[0])
    want = knn_euclidean(x, x, 5, exclude_self=True, ref_tile=tile)
    got = knn_self(x, 5, ref_tile=tile)
    np.testing.assert_array_equal(got.idx, want.idx)
    np.testing.assert_array_equal(got.dist, want.dist)


def test_a_self_query_in_tiles_that_do_not_divide_its_blocks() -> None:
    # found in review: tiles of 96 rows cut at multiples of 512 left rows 512–575 without candidates in
    # their own tile (the block at 480 skipped as "read along its columns already")
    x = np.random.default_rng(0).random((600, 2)).astype(np.float32)
    for tile in (96, 160, 480, 544):
        want = knn_euclidean(x, x, 1, exclude_self=True, ref_tile=tile)
        np.testing.assert_array_equal(knn_self(x, 1, ref_tile=tile).idx, want.idx)


def test_a_pair_with_an_empty_side_answers_as_the_unpaired_queries() -> None:
    y = np.random.default_rng(0).random((5, 2)).astype(np.float32)
    empty = np.empty((0, 2), np.float32)
    assert knn_euclidean(empty, y, 1).idx.shape == (0, 1)
    with pytest.raises(ValueError, match="no reference row"):  # as knn_euclidean(y, empty, 1)
        knn_pair(empty, y, 1, 1)


def test_too_many_waiting_candidates_run_unpaired(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _tables("onehot", np.random.default_rng(1))
    paired = knn_pair(x, y, 3, 3, ref_tile=512)
    monkeypatch.setattr(pairs, "CANDIDATE_BYTES", 0)
    for got, want in zip(knn_pair(x, y, 3, 3, ref_tile=512), paired, strict=True):
        np.testing.assert_array_equal(got.idx, want.idx)


@pytest.mark.parametrize("width", [7, 64, 100, 130])
def test_column_updates_take_the_smallest_then_the_lowest_row(width: int) -> None:
    # small integers: many exact ties, each column's score = entry − its norm + the row's norm
    rng = np.random.default_rng(width)
    block = rng.integers(0, 5, (37, width)).astype(np.float32)
    col = rng.integers(0, 3, width).astype(np.float32)
    row = rng.integers(0, 3, 37).astype(np.float32)
    values, rows = empty_top(width, 4)
    valid = width - 3  # the last three columns are padding: never updated
    smallest_update_cols(block[:20], 0, col, row[:20], valid, values, rows)
    smallest_update_cols(block[20:], 20, col, row[20:], valid, values, rows)
    score = block - col[None, :] + row[:, None]
    for p in range(valid):
        want = np.lexsort((np.arange(37), score[:, p]))[:4]
        assert rows[p].tolist() == want.tolist() and values[p].tolist() == score[want, p].tolist()
    assert np.isinf(values[valid:]).all()


def _evaluation() -> dict:
    split = leaky_split(load_demo()[:900], 0.2, seed=0)
    ev = dp.evaluate(split.train, split.synthetic, split.control, policy="standard", progress=False)
    out = json.loads(ev.to_json())
    out.pop("timings")
    return out


def test_each_pair_once_changes_no_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster_privacy.engine import neighbors as nb

    monkeypatch.setattr(nb, "REF_TILE", 256)  # many tiles on both sides
    calls: list[bool] = []
    run = pairs._paired
    monkeypatch.setattr(pairs, "_paired", lambda *a, **kw: calls.append(kw["same"]) or run(*a, **kw))
    paired = _evaluation()
    assert calls.count(False) >= 2 and calls.count(True) >= 3  # mirrors (one-hot, projected), self-queries
    monkeypatch.setattr(pairs, "CANDIDATE_BYTES", 0)  # every query unpaired
    assert _evaluation() == paired
