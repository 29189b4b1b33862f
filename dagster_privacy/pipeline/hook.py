"""The evaluation hook type ``build_privacy_checks(on_evaluation=...)`` takes, apart so that the evidence
report (evidence.py), which is such a hook, and the checks, which write it by default, import it
without importing each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg

from ..evaluation import Evaluation

#: called inside the check with the Evaluation (e.g. the HTML report); may return extra metadata that is
#: attached to every check result. Raising fails the checks closed.
EvaluationHook = Callable[[Evaluation, dg.AssetCheckExecutionContext], Mapping[str, Any] | None]
#: ``on_evaluation``'s default: the evidence report (build_report_hook for the checks' own asset,
#: policy and prefix); pass None for no report
REPORT = "report"

__all__ = ["REPORT", "EvaluationHook"]
