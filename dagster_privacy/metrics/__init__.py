"""The metric families. Importing this package registers every metric (one registry, registry.py)."""

from . import distance, simulation  # noqa: F401  (registration order = report order)
from . import classifiers  # noqa: F401  (D-MLP and MIR, seed 000 §2.2.3, §2.2.11)
from . import holdout  # noqa: F401  (holdout-referenced indicators, seed 004 §4.2, seeds 001, 003)
from . import attacks  # noqa: F401  (attack simulations with control baselines, seed 004 §4.3)
