"""The shipped demo data: a 10,000-row subset of UCI Adult (CC BY 4.0, see DATA.md)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

DEMO_CSV = Path(__file__).parent / "adult_demo.csv.gz"
CITATION = (
    "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20 (CC BY 4.0)"
)


def load_demo() -> pl.DataFrame:
    """The demo table, read through DuckDB like every other input."""
    from ..data.loading import load

    return load(DEMO_CSV, role="demo")
