"""Sources by title, for readers: the registry cites the documents the metrics were built from as
"seed NNN §…" (docs/sources.md); a report names the paper or page instead."""

from __future__ import annotations

import re

TITLES = {
    "000": "Trudslev et al., A Review of Privacy Metrics for Privacy-Preserving Synthetic Data Generation",
    "001": "distance-metrics documentation (DCR / NNDR against a holdout)",
    "003": "privacy-score documentation (train-to-train vs train-to-synthetic proximity)",
    "004": "Plasencia Palacios et al., Empirical evaluation of structured synthetic data privacy metrics "
    "(2025)",
}


def cite(source: str) -> str:
    """``seed 004 §4.3`` → ``Plasencia Palacios et al., … (2025) §4.3``; other text unchanged."""
    return re.sub(r"seeds? (\d{3})", lambda m: TITLES.get(m.group(1), m.group(0)), source)


__all__ = ["TITLES", "cite"]
