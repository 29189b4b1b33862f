"""How many threads an evaluation may use, and every pool it runs held to that number.

The count: ``held(n)`` / ``evaluate(threads=n)`` / ``--threads n``, else ``DAGSTER_PRIVACY_THREADS``,
else the CPUs this process may use — its affinity mask and its cgroup's CPU quota (a Kubernetes CPU
limit), never ``os.cpu_count()``, which counts the whole machine. The pools: the in-process executor's
threads (executors.InProcess), BLAS (one thread: see ``held``) and OpenMP (threadpoolctl), Arrow's CPU
pool, DuckDB's ``threads`` on our connections, and polars — whose pool is sized
when polars is imported, so the package sets ``POLARS_MAX_THREADS`` (unless already set) before it
imports polars, and the CLI's ``--threads`` restarts the process with it. numba runs no parallel
kernel here (no ``prange``): its threading layer is never started. glibc's malloc keeps its freed pages
while the evaluation runs and caps new arenas at its threads (allocator.py). More threads than CPUs only add
busy-waiting: on a machine shared with other work, OpenBLAS and OpenMP threads spin for their share.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import allocator

THREADS_ENV = "DAGSTER_PRIVACY_THREADS"
_held: int | None = None


def _cgroup_quota() -> int | None:
    """CPUs the cgroup may use (quota / period, rounded up); None without a quota."""
    try:
        v2 = Path("/sys/fs/cgroup/cpu.max")
        own = _own_cgroup()
        if own is not None and (Path("/sys/fs/cgroup") / own / "cpu.max").is_file():
            v2 = Path("/sys/fs/cgroup") / own / "cpu.max"  # this process's own group (systemd, a pod)
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
        q, p = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
        if q.is_file() and p.is_file():
            quota_us = int(q.read_text())
            return None if quota_us <= 0 else max(1, math.ceil(quota_us / int(p.read_text())))
    except (OSError, ValueError):
        pass
    return None


def _own_cgroup() -> str | None:
    """This process's cgroup v2 path (``0::/path`` in /proc/self/cgroup), relative; None elsewhere."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::/"):
                return line[4:].strip() or None
    except OSError:
        pass
    return None


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity, capped by its cgroup's quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(n, quota) if quota else n)


def _from_env() -> int | None:
    text = os.environ.get(THREADS_ENV, "").strip()
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def thread_count() -> int:
    """The threads an evaluation uses now: ``held``'s, else the environment's, else the CPUs."""
    return _held or _from_env() or available_cpus()


def size_import_pools() -> None:
    """Before polars is imported: its pool at the evaluation's thread count (an explicit
    ``POLARS_MAX_THREADS`` wins)."""
    os.environ.setdefault("POLARS_MAX_THREADS", str(_from_env() or available_cpus()))


_LOCK = threading.Lock()
_USERS = 0
_SAVED: tuple[Any, int | None] | None = None  # (threadpoolctl's limits, Arrow's CPU count) before


@contextlib.contextmanager
def held(threads: int | None = None) -> Iterator[int]:
    """Every pool of this process at ``threads`` (default ``thread_count()``) while the block runs.
    Process-wide, like the limits it sets: overlapping callers (two evaluations in two threads) share
    one count of users — the first saves the settings, the last restores them, whatever the order they
    leave in (as executors.one_blas_thread)."""
    global _held, _USERS, _SAVED
    from threadpoolctl import threadpool_limits

    n = max(1, int(threads or thread_count()))
    with _LOCK:
        if _USERS == 0:
            arrow = _arrow_cpus()
            # BLAS on one thread everywhere: the parallelism is the executor's blocks, and a
            # multi-threaded BLAS both rounds differently (figures would depend on the thread count)
            # and busy-waits — the MLP of detection_mlp, 43k × 108, fit in 0.5 s on one thread and
            # 1.1–2.4 s on two beside a busy process; OpenMP (LightGBM) at most n
            _SAVED = (threadpool_limits(limits={"blas": 1, "openmp": n}), arrow)
            allocator.hold(n)  # the trim threshold, released below; the arena cap stays (allocator.py)
        _USERS += 1
        _held = n
        _arrow_cpus(n)
    try:
        yield n
    finally:
        with _LOCK:
            _USERS -= 1
            if _USERS == 0 and _SAVED is not None:
                limits, arrow = _SAVED
                limits.restore_original_limits()
                _arrow_cpus(arrow)
                allocator.release()
                _SAVED, _held = None, None


def _arrow_cpus(n: int | None = None) -> int | None:
    """Arrow's CPU pool size, set to ``n`` when given; None without pyarrow."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    before = pa.cpu_count()
    if n is not None:
        pa.set_cpu_count(n)
    return before


size_import_pools()  # on import: the package imports this module before anything imports polars

__all__ = ["THREADS_ENV", "available_cpus", "held", "size_import_pools", "thread_count"]
