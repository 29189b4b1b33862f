"""Compiled kernels still import and run where numba has nowhere to cache them."""

from __future__ import annotations

import pytest
from numba import njit

from dagster_privacy.engine.compiled import kernel


def test_a_kernel_without_a_cache_location_compiles_per_process() -> None:
    ns: dict = {}
    exec("def plus_one(x):\n    return x + 1\n", ns)  # no source file: no cache location at all
    with pytest.raises(RuntimeError, match="cannot cache"):  # what a read-only install meets on import
        njit(cache=True)(ns["plus_one"])
    assert kernel(ns["plus_one"])(2) == 3
    assert kernel(fastmath={"nnan"})(ns["plus_one"])(2.5) == 3.5
