"""The neighbour engine against brute force (scipy), self-exclusion, ties and copies."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from dagster_privacy.engine import exact as ex
from dagster_privacy.engine import neighbors as nb
from dagster_privacy.engine.exact import dup_rank
from dagster_privacy.engine.neighbors import MixedRows, knn_euclidean, knn_mixed
from dagster_privacy.engine.sparse_dims import SparseDims
from dagster_privacy.engine.topk import NO_SELF, empty_top, largest_update, smallest_update


def _brute(q: np.ndarray, r: np.ndarray, k: int, *, metric: str = "euclidean", same: bool = False):
    d = cdist(q.astype(np.float64), r.astype(np.float64), metric=metric)
    if same:
        np.fill_diagonal(d, np.inf)
    return np.sort(d, axis=1)[:, :k]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
def test_euclidean_matches_brute_force(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nb, "KNN_BLOCK_BYTES", 1)  # 16-row query tiles: exercise tile boundaries
    rng = np.random.default_rng(0)
    q = rng.random((37, 6)).astype(np.float32)
    r = rng.random((50, 6)).astype(np.float32)
    nn = knn_euclidean(q, r, k)
    np.testing.assert_allclose(nn.dist, _brute(q, r, k), atol=1e-6)
    # the returned indices are the neighbours at those distances
    exact = np.linalg.norm(q[:, None, :].astype(np.float64) - r[nn.idx].astype(np.float64), axis=2)
    np.testing.assert_allclose(exact, nn.dist, atol=1e-12)


def _exact(q: np.ndarray, r: np.ndarray, k: int, *, same: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest by (float64 distance of the encoded rows, then index): what the engine promises."""
    d = np.array([np.sqrt(np.einsum("ij,ij->i", row - r, row - r)) for row in q.astype(np.float64)])
    if same:
        np.fill_diagonal(d, np.inf)
    idx = np.lexsort((np.broadcast_to(np.arange(r.shape[0]), d.shape), d), axis=1)[:, :k]
    return np.take_along_axis(d, idx, 1), idx


@pytest.mark.parametrize("offset", [3.0, 300.0])
@pytest.mark.parametrize(("k", "same"), [(1, False), (4, False), (1, True), (5, True)])
def test_the_nearest_are_exact_where_float32_scores_cannot_tell_them_apart(
    offset: float, k: int, same: bool
) -> None:
    # rows 1e-2 apart far from the origin: a float32 score ‖r‖² − 2q·r rounds by ~offset²·1e-7, as much as
    # (300) or more than (3: sometimes) the gaps between neighbours. Found on main: the k float32
    # candidates of a tile missed the true nearest (2.3 % of real rows in the entropy-weighted space of
    # 16k Adult-shaped rows)
    rng = np.random.default_rng(5)
    r = (offset + rng.random((700, 6)) * 1e-2).astype(np.float32)
    r[350:360] = r[0:10]  # exact duplicates: ties settled by index
    q = r if same else (offset + rng.random((90, 6)) * 1e-2).astype(np.float32)
    want_d, want_i = _exact(q, r.astype(np.float64), k, same=same)
    nn = knn_euclidean(q, r, k, exclude_self=same, ref_tile=256)
    np.testing.assert_array_equal(nn.idx, want_i)
    np.testing.assert_allclose(nn.dist, want_d, rtol=0, atol=1e-12)


@pytest.mark.parametrize("same", [False, True])
def test_more_candidates_per_tile_settle_more_tiles_and_find_the_same_neighbours(same: bool) -> None:
    # neighbours about as near as a float32 score far from the origin can tell (as in the entropy-weighted
    # space): with more candidates per tile fewer (row, tile) pairs are re-ranked against the whole tile
    # (here none with 8); the k nearest are the same
    from dagster_privacy.engine.pairs import knn_self

    rng = np.random.default_rng(8)
    r = (30.0 + rng.random((900, 6))).astype(np.float32)
    q = r if same else (30.0 + rng.random((120, 6))).astype(np.float32)
    want_d, want_i = _exact(q, r, 2, same=same)
    got = {}
    for pad in (2, 8):
        nn = knn_self(r, 2, ref_tile=256, pad=pad) if same else knn_euclidean(q, r, 2, ref_tile=256, pad=pad)
        np.testing.assert_array_equal(nn.idx, want_i)
        np.testing.assert_allclose(nn.dist, want_d, rtol=0, atol=1e-12)
        got[pad] = nn.rechecked
    assert got[8] < got[2]


@pytest.mark.parametrize(("k", "same"), [(1, False), (5, False), (3, True)])
def test_later_tiles_seeded_with_the_kth_keep_fewer_candidates_and_the_same_neighbours(
    k: int, same: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # after each reference tile the ranking seeds the next tile's top-k with the score above which a
    # reference is surely farther than the k-th kept: later tiles keep fewer candidates, the same k
    # nearest (exact copies across tiles: ties settled by index)
    rng = np.random.default_rng(11)
    r = rng.random((2000, 8)).astype(np.float32)
    r[1500:1520] = r[10:30]
    q = r if same else rng.random((300, 8)).astype(np.float32)
    kept = []
    candidates = nb._candidates

    def counted(values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx, ok = candidates(values, rows)
        kept.append(int(ok.sum()))
        return idx, ok

    monkeypatch.setattr(nb, "_candidates", counted)
    want_d, want_i = _exact(q, r, k, same=same)
    got = {}
    for seeded in (True, False):
        if not seeded:  # every seed +inf: each tile keeps its own k + PAD
            monkeypatch.setattr(ex, "above", lambda x: np.full(x.shape, np.inf, np.float32))
        kept.clear()
        nn = knn_euclidean(q, r, k, exclude_self=same, ref_tile=256)
        got[seeded] = sum(kept)
        np.testing.assert_array_equal(nn.idx, want_i)
        np.testing.assert_allclose(nn.dist, want_d, rtol=0, atol=1e-12)
    assert got[True] < 0.5 * got[False]


@pytest.mark.parametrize("same", [False, True])
def test_mixed_nearest_are_exact_below_float32_resolution(same: bool) -> None:
    # every pair differs in its one category (1) and by less than half an ulp of 1 in its one number: the
    # float32 sums tie, the exact ones do not (the nearest: the nearest number, not the lowest index)
    rng = np.random.default_rng(3)
    n = 300
    codes = np.arange(n + 7, dtype=np.int32)[:, None]  # every row its own code
    ref = MixedRows((rng.random((n, 1)) * 2e-8).astype(np.float32), codes[:n], 1.0)
    query = ref if same else MixedRows(np.zeros((7, 1), np.float32), codes[n:], 1.0)
    got = knn_mixed(query, ref, 3, exclude_self=same, ref_tile=64)
    qn, rn = query.num.astype(np.float64), ref.num.astype(np.float64)
    d = np.abs(qn[:, None, :] - rn[None, :, :]).sum(axis=2) + (query.cat[:, None, 0] != ref.cat[None, :, 0])
    if same:
        np.fill_diagonal(d, np.inf)
    want = np.lexsort((np.broadcast_to(np.arange(n), d.shape), d), axis=1)[:, :3]
    np.testing.assert_array_equal(got.idx, want)


def _rare_onehot(rng: np.random.Generator, n: int) -> np.ndarray:
    """Rows of two numbers and a 40-value category, one-hot: one common value, 39 rare ones."""
    cat = np.where(rng.random(n) < 0.8, 0, rng.integers(1, 40, n))
    onehot = np.zeros((n, 40), dtype=np.float32)
    onehot[np.arange(n), cat] = 1.0
    return np.hstack([rng.random((n, 2)).astype(np.float32), onehot])


@pytest.mark.parametrize("same", [False, True])
def test_rare_dimensions_added_outside_the_product_match_brute_force(
    same: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nb, "KNN_BLOCK_BYTES", 1)  # 16-row query tiles
    monkeypatch.setattr(nb, "BLOCK_COLS", 48)  # blocks of 48 columns: the pairs land in several blocks
    rng = np.random.default_rng(7)
    r = _rare_onehot(rng, 300)
    q = r if same else _rare_onehot(rng, 90)
    split = SparseDims.split(q, r)
    assert 2 < split.dense.size < r.shape[1] and split.q_ptr.size - 1 > 5  # the rare values leave the product
    nn = knn_euclidean(q, r, 4, exclude_self=same, ref_tile=128)  # three reference tiles
    np.testing.assert_allclose(nn.dist, _brute(q, r, 4, same=same), atol=1e-6)
    exact = np.linalg.norm(q[:, None, :].astype(np.float64) - r[nn.idx].astype(np.float64), axis=2)
    np.testing.assert_allclose(exact, nn.dist, atol=1e-12)
    if not same:  # the farthest reference, read off the same blocks, is the brute-force farthest
        far = knn_euclidean(q, r, 1, farthest=True, ref_tile=128).farthest
        assert far is not None
        d = cdist(q.astype(np.float64), r.astype(np.float64))
        np.testing.assert_allclose(d[np.arange(q.shape[0]), far[1]], d.max(axis=1), atol=1e-5)


def test_self_exclusion_keeps_duplicates_of_other_rows() -> None:
    x = np.array([[0.0], [0.0], [1.0], [3.0]], dtype=np.float32)
    nn = knn_euclidean(x, x, 1, exclude_self=True)
    # row 0's nearest other row is its duplicate (row 1) at distance 0, not itself
    assert nn.idx[:, 0].tolist() == [1, 0, 0, 2]
    assert nn.dist[:, 0].tolist() == [0.0, 0.0, 1.0, 2.0]


def test_ties_take_the_lowest_reference_index() -> None:
    q = np.array([[1.0]], dtype=np.float32)
    r = np.array([[3.0], [0.0], [2.0], [0.0], [2.0]], dtype=np.float32)  # 0 and 2 both at distance 1
    nn = knn_euclidean(q, r, 3)
    assert nn.idx[0].tolist() == [1, 2, 3]
    assert nn.dist[0].tolist() == [1.0, 1.0, 1.0]


def test_identical_row_has_distance_exactly_zero() -> None:
    rng = np.random.default_rng(1)
    r = rng.random((200, 30)).astype(np.float32)
    q = r[[5, 17]].copy()
    nn = knn_euclidean(q, r, 1)
    assert nn.idx[:, 0].tolist() == [5, 17]
    assert nn.dist[:, 0].tolist() == [0.0, 0.0]


def test_hamming_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    qc = rng.integers(0, 4, (30, 5)).astype(np.int32)
    rc = rng.integers(0, 4, (45, 5)).astype(np.int32)
    rc[:, 4] = rng.integers(0, 2000, 45)  # a wide column: compared by equality, not one-hot
    qc[:, 4] = rng.integers(0, 2000, 30)
    empty = np.empty((30, 0), np.float32)
    nn = knn_mixed(MixedRows(empty, qc), MixedRows(np.empty((45, 0), np.float32), rc), 3)
    brute = _brute(qc, rc, 3, metric="hamming") * 5  # scipy's hamming is a proportion
    np.testing.assert_allclose(nn.dist, brute, atol=1e-9)


def test_gower_matches_hand_computation() -> None:
    # two numerical columns already min-max scaled, one categorical; m = 3 columns
    q = MixedRows(np.array([[0.0, 0.5]], np.float32) / 3, np.array([[1]], np.int32), 1 / 3)
    r = MixedRows(
        np.array([[0.25, 0.5], [0.0, 0.0], [1.0, 1.0]], np.float32) / 3,
        np.array([[1], [2], [1]], np.int32),
        1 / 3,
    )
    nn = knn_mixed(q, r, 3)
    # row 0: (0.25 + 0 + 0)/3; row 1: (0 + 0.5 + 1)/3; row 2: (1 + 0.5 + 0)/3
    assert nn.idx[0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(nn.dist[0], [0.25 / 3, 1.5 / 3, 1.5 / 3], atol=1e-7)


def test_k_larger_than_reference_is_capped() -> None:
    x = np.eye(3, dtype=np.float32)
    assert knn_euclidean(x, x, 10, exclude_self=True).k == 2


@pytest.mark.parametrize("k", [2, 5, 9])
def test_blocked_selection_is_exact_with_many_ties(k: int) -> None:
    # integer grid points: many references at equal distances; lowest index wins every tie
    rng = np.random.default_rng(4)
    r = rng.integers(0, 4, (1000, 3)).astype(np.float32)
    q = rng.integers(0, 4, (120, 3)).astype(np.float32)
    nn = knn_euclidean(q, r, k)
    d = cdist(q.astype(np.float64), r.astype(np.float64))
    order = np.lexsort((np.broadcast_to(np.arange(1000), d.shape), d), axis=1)[:, :k]
    np.testing.assert_array_equal(nn.idx, order)
    np.testing.assert_allclose(nn.dist, np.take_along_axis(d, order, 1), atol=1e-12)


def test_blocked_selection_in_the_mixed_space_with_self_exclusion() -> None:
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, (700, 4)).astype(np.int32)
    rows = MixedRows(np.empty((700, 0), np.float32), codes)
    nn = knn_mixed(rows, rows, 4, exclude_self=True)
    d = cdist(codes, codes, metric="hamming") * 4
    np.fill_diagonal(d, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(700), d.shape), d), axis=1)[:, :4]
    np.testing.assert_array_equal(nn.idx, order)


def _lex_brute(d: np.ndarray, k: int) -> np.ndarray:
    return np.lexsort((np.broadcast_to(np.arange(d.shape[1]), d.shape), d), axis=1)[:, :k]


@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("same", [False, True])
def test_grouped_selection_over_many_tiles_keeps_the_tie_rule(k: int, same: bool) -> None:
    # 2,500 references on an integer grid (ties everywhere), tiles of 512 positions (16 groups of 32;
    # the last tile padded) and one tile: every row's k neighbours by (distance, lowest index)
    rng = np.random.default_rng(6)
    r = rng.integers(0, 3, (2500, 3)).astype(np.float32)
    q = r if same else rng.integers(0, 3, (300, 3)).astype(np.float32)
    d = cdist(q.astype(np.float64), r.astype(np.float64))
    h = cdist(q, r, metric="hamming") * 3
    if same:
        np.fill_diagonal(d, np.inf)
        np.fill_diagonal(h, np.inf)
    empty = np.empty((0, 0), np.float32)
    qc = MixedRows(empty.reshape(q.shape[0], 0), q.astype(np.int32))
    rc = MixedRows(empty.reshape(r.shape[0], 0), r.astype(np.int32))
    for tile in (512, nb.REF_TILE):
        nn = knn_euclidean(q, r, k, ref_tile=tile, exclude_self=same)
        np.testing.assert_array_equal(nn.idx, _lex_brute(d, k))
        mx = knn_mixed(qc, rc, k, ref_tile=tile, exclude_self=same)
        np.testing.assert_array_equal(mx.idx, _lex_brute(h, k))


def _top(block: np.ndarray, k: int, cols: int, self_first: int = NO_SELF, n_ref: int | None = None):
    """The running top-k of a block folded in column blocks of ``cols``."""
    values, rows = empty_top(block.shape[0], k)
    for c0 in range(0, block.shape[1], cols):
        part = np.ascontiguousarray(block[:, c0 : c0 + cols])
        smallest_update(part, c0, self_first, n_ref if n_ref is not None else block.shape[1], values, rows)
    return values, rows


def test_smallest_update_takes_the_smallest_then_the_lowest_row_of_the_tied() -> None:
    block = np.array(
        [
            [3.0, 1.0, 1.0, 2.0, 1.0],  # three 1s: k = 2 takes the first two
            [2.0, 0.0, -0.0, np.inf, -1.0],  # -0 and +0 are equal: by row
            [np.inf, np.inf, 5.0, np.inf, np.inf],  # infinities tie like any value
        ],
        dtype=np.float32,
    )
    for cols in (1, 2, 5):  # whatever the blocking
        assert _top(block, 2, cols)[1].tolist() == [[1, 2], [4, 1], [2, 0]]
        assert _top(block, 3, cols)[1].tolist() == [[1, 2, 4], [4, 1, 2], [2, 0, 1]]
        assert _top(block, 5, cols)[1].tolist() == [[1, 2, 4, 3, 0], [4, 1, 2, 0, 3], [2, 0, 1, 3, 4]]
    # row i is query row 1 + i: row 0 skips column 1, row 1 column 2, row 2 column 3
    assert _top(block, 2, 2, self_first=1)[1].tolist() == [[2, 4], [4, 1], [2, 0]]
    values, rows = _top(block[:, :1], 2, 1)  # fewer columns than k: an empty slot stays empty
    assert rows[:, 1].tolist() == [2**62] * 3 and np.isinf(values[:, 1]).all()
    # columns past n_ref are padding: never taken, however small their score
    padded = np.hstack([block, np.full((3, 2), -1e30, np.float32)])
    assert _top(padded, 2, 3, n_ref=5)[1].tolist() == [[1, 2], [4, 1], [2, 0]]
    big_v, big_r = np.full(3, -np.inf, np.float32), np.zeros(3, np.int64)
    largest_update(np.hstack([block, np.full((3, 2), 1e30, np.float32)]), 0, 5, big_v, big_r)
    assert big_r.tolist() == [0, 3, 0] and big_v.tolist() == [3.0, np.inf, np.inf]


@pytest.mark.parametrize("k", [1, 4, 16])
def test_smallest_and_largest_update_match_a_lexicographic_sort(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(40):
        rows, width = int(rng.integers(1, 30)), int(rng.integers(1, 400))
        block = rng.integers(-3, 4, (rows, width)).astype(np.float32)  # heavy ties
        block[rng.random(block.shape) < 0.05] = -0.0
        block[rng.random(block.shape) < 0.02] = np.inf
        self_first = int(rng.integers(-5, width))
        cols = int(rng.integers(1, 200))
        values, got = _top(block, k, cols, self_first)
        masked = block.copy()
        own = self_first + np.arange(rows)
        inside = (own >= 0) & (own < width)
        masked[np.nonzero(inside)[0], own[inside]] = np.nan  # never chosen
        for i in range(rows):
            keep = np.nonzero(~np.isnan(masked[i]))[0]
            want = keep[np.lexsort((keep, masked[i, keep] + 0.0))][:k]  # + 0.0: -0 reads as +0
            assert got[i, : want.size].tolist() == want.tolist()
            assert (got[i, want.size :] == 2**62).all()
        big_v, big_r = np.full(rows, -np.inf, np.float32), np.zeros(rows, np.int64)
        for c0 in range(0, width, cols):
            largest_update(np.ascontiguousarray(block[:, c0 : c0 + cols]), c0, width, big_v, big_r)
        np.testing.assert_array_equal(big_v, block.max(axis=1))
        np.testing.assert_array_equal(big_r, (block == block.max(axis=1, keepdims=True)).argmax(axis=1))


def test_farthest_reference_read_off_the_same_blocks() -> None:
    rng = np.random.default_rng(7)
    q = rng.random((90, 4)).astype(np.float32)
    r = rng.random((700, 4)).astype(np.float32)
    d = cdist(q.astype(np.float64), r.astype(np.float64))
    for tile in (128, nb.REF_TILE):  # several tiles (the last padded) and one
        nn = knn_euclidean(q, r, 2, farthest=True, ref_tile=tile)
        assert nn.farthest is not None
        score, idx = nn.farthest
        np.testing.assert_array_equal(idx, d.argmax(axis=1))
        np.testing.assert_allclose(score, d.max(axis=1) ** 2, rtol=1e-5)
    with pytest.raises(ValueError):
        knn_euclidean(r, r, 1, farthest=True, exclude_self=True)


def test_farthest_ties_take_the_lowest_reference_index() -> None:
    # rows 1 and 32 are equally far (5), in different groups of the layout: the lower index wins
    r = np.zeros((64, 2), np.float32)
    r[1] = r[32] = [3, 4]
    nn = knn_euclidean(np.zeros((1, 2), np.float32), r, 1, farthest=True)
    assert nn.farthest is not None and nn.farthest[1].tolist() == [1]


def test_a_coordinate_too_large_for_float32_scores_is_an_error() -> None:
    from dagster_privacy.errors import MetricError

    r = np.array([[0.0], [1e20]], np.float32)
    with pytest.raises(MetricError):
        knn_euclidean(r, r, 1)


def test_candidates_skipped_by_the_rounding_bound_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # large coordinates (big float32 rounding), near-ties and exact duplicates spread over many tiles
    rng = np.random.default_rng(11)
    r = (300.0 + rng.random((900, 6)) * 1e-2).astype(np.float32)
    r[450:] = r[:450]  # every row twice, 450 rows apart: ties across tiles
    q = (r[::7] + rng.normal(0, 1e-3, (129, 6))).astype(np.float32)
    got = [knn_euclidean(q, r, k, ref_tile=64) for k in (1, 5)]
    monkeypatch.setattr(ex, "SCORE_SLACK", 1e30)  # no candidate skipped
    want = [knn_euclidean(q, r, k, ref_tile=64) for k in (1, 5)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.idx, w.idx)
        np.testing.assert_array_equal(g.dist, w.dist)
    monkeypatch.setattr(ex, "SCORE_SLACK", -1e4)  # a bound that is wrong: the test must see it
    assert not np.array_equal(knn_euclidean(q, r, 5, ref_tile=64).idx, want[1].idx)


def test_a_score_does_not_depend_on_where_its_block_ends() -> None:
    # 513 references: without padding the last block is one column, a matrix-vector product that rounds
    # differently from the matrix product every other column gets. Row 512 is everyone's farthest:
    # its float32 score must be the one it gets when more rows follow it.
    rng = np.random.default_rng(0)
    r = (rng.random((513, 40)) + 5).astype(np.float32)
    r[512] += 100.0
    q = rng.random((600, 40)).astype(np.float32)
    alone = knn_euclidean(q, r, 3, farthest=True)
    more = knn_euclidean(q, np.vstack([r, r[:31]]), 3, farthest=True)
    assert alone.farthest is not None and more.farthest is not None
    assert (alone.farthest[1] == 512).all() and (more.farthest[1] == 512).all()
    np.testing.assert_array_equal(alone.farthest[0], more.farthest[0])
    np.testing.assert_array_equal(alone.idx, more.idx)


def test_many_rare_dimensions_widen_the_rounding_bound() -> None:
    # 5,000 rare dimensions shared by one pair: each float32 addition is below half an ulp of the score
    # and rounds away, so the score is high by ~0.06·5,000 ulps; a fixed bound skipped the true nearest
    m = 5000
    v = np.float32(np.sqrt(0.03))
    q = np.zeros((64, 1 + m), np.float32)
    q[0, 1:] = v
    r = np.zeros((64, 1 + m), np.float32)
    r[:, 0] = 1034.0  # far away
    r[0, 0], r[0, 1:] = np.float32(1024.0001220703125), v  # tile 0: d² = 2^20 + 0.25
    r[32, 0], r[32, 1:] = 1024.0, v  # tile 1: d² = 2^20, the nearest
    nn = knn_euclidean(q, r, 1, ref_tile=32)
    assert nn.idx[0, 0] == 32 and nn.dist[0, 0] == 1024.0


def _copy_block(extra: None, start: int, block: np.ndarray) -> np.ndarray:
    return block.copy()


def test_map_chunks_blocks_are_one_full_product_unless_asked() -> None:
    # rare one-hot dimensions: by default the block is exactly one BLAS product (DOMIAS's densities read
    # the float32 scores as they are); with sparse=True the rare ones are added afterwards, within rounding
    from dagster_privacy.engine.chunks import map_chunks
    from dagster_privacy.engine.executors import one_blas_thread

    rng = np.random.default_rng(3)
    q, r = _rare_onehot(rng, 200), _rare_onehot(rng, 300)
    # the blocks run BLAS on one thread: so must the reference, or OpenBLAS's multi-threaded kernel
    # (2 threads, OPENBLAS_CORETYPE=Haswell) rounds 1,724 of 60,000 cells another way (issue 32)
    with one_blas_thread():
        want = np.matmul(q, np.ascontiguousarray(r.T * np.float32(-2.0))) + np.einsum(
            "ij,ij->i", r, r, dtype=np.float32
        )
    full = np.vstack(map_chunks(_copy_block, None, q, r))
    np.testing.assert_array_equal(full, want)
    split = np.vstack(map_chunks(_copy_block, None, q, r, sparse=True))
    np.testing.assert_allclose(split, want, atol=1e-5)


def test_subnormal_scores_are_within_the_bound() -> None:
    # q·r and ‖r‖² in float32's subnormal range carry an absolute error γ's relative bound does not see
    rng = np.random.default_rng(0)
    r = (rng.standard_normal((300, 3)) * 1e-22).astype(np.float32)
    q = (rng.standard_normal((40, 3)) * 1e-22).astype(np.float32)
    _, want = _exact(q, r.astype(np.float64), 3)
    np.testing.assert_array_equal(knn_euclidean(q, r, 3).idx, want)


def test_a_row_whose_squared_norm_overflows_float32_is_an_error() -> None:
    # each coordinate passes the 1e18 guard, but ‖r‖² is inf in float32: the score would be NaN
    from dagster_privacy.errors import MetricError

    q = np.full((1, 400), 9.5e17, np.float32)
    with pytest.raises(MetricError, match="too large"):
        knn_euclidean(q, np.vstack([q, np.zeros((20, 400), np.float32)]), 1)


def test_a_collapsed_reference_is_settled_on_the_first_identical_rows() -> None:
    # 3,000 identical references: each ties every other; the k nearest are the k lowest indices, and
    # a re-rank skips every copy that k lower identical rows precede (a re-rank of all would take GBs)
    r = np.tile(np.linspace(0, 1, 20, dtype=np.float32), (3000, 1))
    q = (r[:50] + np.float32(1e-3)).astype(np.float32)
    for same, query in ((False, q), (True, r)):
        nn = knn_euclidean(query, r, 5, exclude_self=same, ref_tile=512)
        want = np.array([[j for j in range(7) if not (same and j == i)][:5] for i in range(query.shape[0])])
        np.testing.assert_array_equal(nn.idx, want)
    assert dup_rank(np.array([[1, 2], [3, 4], [1, 2], [1, 2]], np.int32)).tolist() == [0, 0, 1, 2]


@pytest.mark.parametrize("same", [False, True])
def test_a_far_outlier_does_not_widen_every_rows_rounding_bound(same: bool) -> None:
    # one reference at norm 1000 beside a cloud of norm ~3: a score's rounding bound over every norm is
    # ~1000 · ‖q‖ · γ, wider than the cloud's gaps, and (main) sent nearly every (row, tile) to a whole-tile
    # re-rank. A reference that could be among the k nearest lies within ‖q‖ + d_k of the origin: under
    # that bound the candidates settle; the neighbours stay the brute force's
    from dagster_privacy.engine.pairs import knn_self

    rng = np.random.default_rng(11)
    r = rng.normal(size=(1500, 8)).astype(np.float32)
    r[700] = 1000.0 / np.sqrt(8)
    q = r if same else rng.normal(size=(300, 8)).astype(np.float32)
    want_d, want_i = _exact(q, r.astype(np.float64), 3, same=same)
    for nn in [knn_euclidean(q, r, 3, exclude_self=same, ref_tile=256)] + (
        [knn_self(r, 3, ref_tile=256)] if same else []
    ):
        np.testing.assert_array_equal(nn.idx, want_i)
        np.testing.assert_allclose(nn.dist, want_d, rtol=0, atol=1e-12)
        tiles = -(-r.shape[0] // 256)
        assert nn.rechecked <= 0.01 * q.shape[0] * tiles, nn.rechecked


def test_mixed_blocks_add_the_numbers_as_numpys_passes_round_them() -> None:
    # the numerical terms are added in one compiled pass: each distance rounds as numpy's passes over the
    # block (|q − r| per column, added in column order, float32) rounded it, bit for bit; the kept
    # columns' terms are those |q − r|
    from dagster_privacy.engine.mixed_space import mixed_block, mixed_plan

    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, (300, 2)).astype(np.int32)
    num = (rng.random((300, 5)) * rng.choice([1e-3, 1.0, 1e3], 5)).astype(np.float32)
    q, r = MixedRows(num[:40], codes[:40], 0.5), MixedRows(num[40:], codes[40:], 0.5)
    no_num = np.zeros((300, 0), np.float32)
    cat_q, cat_r = MixedRows(no_num[:40], codes[:40], 0.5), MixedRows(no_num[40:], codes[40:], 0.5)
    want = np.empty((40, 130), dtype=np.float32)
    mixed_block(cat_q, cat_r, 0, 40, mixed_plan(cat_q, cat_r), want, refs=(100, 230))  # categories only
    for j in range(5):  # numpy's passes
        want += np.abs(q.num[:, j][:, None] - r.num[None, 100:230, j])
    got, kept = np.empty((40, 130), dtype=np.float32), np.empty((2, 40, 130), dtype=np.float32)
    mixed_block(q, r, 0, 40, mixed_plan(q, r), got, terms=([3, 1], kept), refs=(100, 230))
    np.testing.assert_array_equal(got, want)
    for slot, j in enumerate((3, 1)):
        np.testing.assert_array_equal(kept[slot], np.abs(q.num[:, j][:, None] - r.num[None, 100:230, j]))


def test_a_negative_pad_is_an_error_not_a_crash() -> None:
    from dagster_privacy.engine.pairs import knn_self

    x = np.random.default_rng(0).random((50, 3)).astype(np.float32)
    for query in (lambda: knn_euclidean(x, x, 1, pad=-1), lambda: knn_self(x, 1, pad=-1)):
        with pytest.raises(ValueError, match="pad"):
            query()
