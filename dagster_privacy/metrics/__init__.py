"""The metric families. Importing this package registers every metric (one registry, registry.py)."""

from . import distance, simulation  # noqa: F401  (registration order = report order)
