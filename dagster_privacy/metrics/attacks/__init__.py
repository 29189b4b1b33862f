"""Attack simulations with control baselines (seed 004 §4.3, §5.3.2): family "attacks"."""

from . import domias, inference, linkability, membership, singling_out  # noqa: F401  (importing registers)
