"""The metric families. Importing this package registers every metric (one registry, registration.py);
the report order is the registry's family order (registration.FAMILIES), then import order within a family
(distance before identification, holdout before proximity).
``registry()`` is the complete registry: ask for it here, where every family has been imported."""

from __future__ import annotations

from . import (  # noqa: F401
    attacks,  # attack simulations with control baselines (seed 004 §4.3)
    classifiers,  # D-MLP and MIR (seed 000 §2.2.3, §2.2.11)
    distance,  # seed 000 §2.2
    exposure,  # exposed records counted against chance (issue 45; its own family, after holdout)
    holdout,  # holdout-referenced indicators (seed 004 §4.2, seed 001)
    identification,  # identifiability, hidden and hitting rate (seed 000 §2.2.5, §2.2.12, §2.2.13)
    proximity,  # seed 003's proximity ratio score (a holdout indicator, registered after holdout's)
    simulation,  # seed 000 §2.1
)
from .registration import MetricSpec, registered


def registry() -> dict[str, MetricSpec]:
    """Every metric, by family (registration.FAMILIES), then in registration order.

    Returns:
        Metric id → its ``MetricSpec``: id, family, source, ``Risk``, the tables it needs, its function
        and parameters, its default policy entry, what the common tests expect of it, its queries.

    Example:
        ``registry()["dcr_percentile"].needs`` gives ``("real", "synthetic", "holdout")``.
    """
    return registered()


def get(id: str) -> MetricSpec:
    """One metric's spec (KeyError: no such id)."""
    return registry()[id]
