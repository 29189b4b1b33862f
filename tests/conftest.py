"""Fixtures the pipeline test modules share."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo


@dataclasses.dataclass
class Release:
    real: pl.DataFrame
    holdout: pl.DataFrame
    clean: pl.DataFrame
    leaky: pl.DataFrame


def _in_domain(df: pl.DataFrame, real: pl.DataFrame) -> pl.DataFrame:
    from dagster_privacy.pipeline.demo import in_domain

    return in_domain(df, real)


@pytest.fixture(scope="module")
def release() -> Release:
    data = load_demo().head(1200)
    clean, leaky = leaky_split(data, 0.0, seed=0), leaky_split(data, 0.3, seed=0)
    return Release(
        clean.train,
        clean.control,
        _in_domain(clean.synthetic, clean.train),
        _in_domain(leaky.synthetic, leaky.train),
    )
