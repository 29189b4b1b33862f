"""glibc's malloc held for an evaluation: temporaries reuse their pages instead of faulting them in again.

The neighbour engine and the metrics allocate numpy temporaries of a few MB by the thousand, on the
executor's threads. With glibc's defaults each thread may get an arena of its own, and memory freed at
the top of an arena above the trim threshold (dynamic, from 128 KB), or a block above the mmap
threshold, goes back to the kernel (madvise / munmap): the next temporary of that size faults every
page in again, zeroed by the kernel. Measured at 64k Adult-shaped rows, all ids, 2 cores: 10.7 s of
system time in a 45.5 s evaluation; held as below, 2.4 s of system time, 40.0 s wall, the peak
785 MB instead of 800 MB, and the JSON identical (only where memory comes from changes, not what is
computed). docs/scale.md "Threads and memory".

Process-wide and once per process, like the pools of threads.py: as many arenas as the evaluation's
threads (more only hold more free memory), ``TRIM_BYTES`` of free memory kept at the top of each, and
blocks up to ``MMAP_BYTES`` served from the arenas. Left alone when the environment already tunes
malloc (``GLIBC_TUNABLES``, ``MALLOC_*_``) or says ``DAGSTER_PRIVACY_MALLOC=system``, and off glibc.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

#: mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
#: free memory an arena keeps at its top: 16 MB cost 0.7 s more at 64k (3.9 s of system time), 64 MB
#: and 256 MB the same 40.0 s
TRIM_BYTES = 64 * 2**20
#: blocks from this size on are mmapped (fresh pages): glibc's own ceiling for its dynamic threshold, so
#: a 512 × 16,384 float32 block (32 MB) and larger come and go whole
MMAP_BYTES = 32 * 2**20
OPT_OUT_ENV = "DAGSTER_PRIVACY_MALLOC"
_TUNED = ("GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")

_LOCK = threading.Lock()
_done = False


def _user_tuned() -> bool:
    if os.environ.get(OPT_OUT_ENV, "").strip().lower() == "system":
        return True
    return any(os.environ.get(name) for name in _TUNED)


def hold(threads: int) -> bool:
    """Set glibc's malloc for an evaluation on ``threads`` threads, once per process. True when set now
    or before; False when left alone (not glibc, the environment tunes malloc, or mallopt refused)."""
    global _done
    with _LOCK:
        if _done:
            return True
        if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or _user_tuned():
            return False
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):  # pragma: no cover - glibc always has mallopt
            return False
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        ok = all(
            mallopt(param, value) == 1
            for param, value in (
                (M_ARENA_MAX, max(1, int(threads))),
                (M_TRIM_THRESHOLD, TRIM_BYTES),
                (M_MMAP_THRESHOLD, MMAP_BYTES),
            )
        )
        _done = ok
        return ok


__all__ = ["hold"]
