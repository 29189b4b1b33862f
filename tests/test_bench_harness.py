"""The benchmarks' measurement of a child's peak memory (benchmarks/bench_seed000.run_measured)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from bench_seed000 import run_measured  # noqa: E402


def test_a_childs_peak_is_its_own_not_the_benchmarks() -> None:
    """Linux starts a child's ru_maxrss from the high-water mark of the process it was forked from: a
    benchmark that had grown to 800 MB (bench_scale.py's GEMM floor at 256k rows: 1.85 GB) made a
    small child read as large as itself."""
    big = np.ones(100_000_000)  # 800 MB touched, then freed: this process's high-water mark stays
    del big
    wall, peak, rc, out, err = run_measured(
        [sys.executable, "-c", "import numpy as np; print(int(np.ones(6_250_000).sum()))"]
    )
    assert rc == 0 and out.strip() == "6250000", err
    assert 20 < peak < 400, peak  # the interpreter, numpy and its 50 MB; not 800 MB


def test_the_exit_code_and_a_missing_command() -> None:
    assert run_measured(["sh", "-c", "echo out; echo err >&2; exit 3"])[2:] == (3, "out\n", "err\n")
    assert run_measured(["/nonexistent/command"])[2] == 127
