"""Compiled kernels: the hot loops that numpy would run as many passes or a Python loop (the k-NN
selection in topk.py, the rare pairs in neighbors.py, GCAP's Hamming ties, GTCAP's matching pairs,
singling out's counts, DOMIAS's exponents) are numba functions, compiled on first use without the GIL
(blocks run side by side on threads) and cached beside their module, so later processes load them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit


def kernel(fn: Callable[..., Any] | None = None, *, fastmath: bool | set[str] = False) -> Any:
    """``@kernel`` or ``@kernel(fastmath={...})``: numba's ``njit(nogil=True, cache=True)``. Where no
    cache location is writable (a read-only install and no writable home: numba refuses to cache on
    import), the kernel is compiled in every process instead of failing the import."""

    def wrap(f: Callable[..., Any]) -> Any:
        try:
            return njit(nogil=True, cache=True, fastmath=fastmath)(f)
        except RuntimeError:  # "cannot cache function …: no locator available"
            return njit(nogil=True, cache=False, fastmath=fastmath)(f)

    return wrap(fn) if fn is not None else wrap
