"""dagster_privacy: privacy gates for synthetic-data releases.

The engine (tables → spaces → context → metrics → results) knows nothing of Dagster; the Dagster side
(``dagster_privacy.pipeline``) knows nothing of how a metric is computed.
"""

from typing import Any

from . import threads as threads  # first: it sizes polars' pool before polars is imported
from .data.loading import TableLike as TableLike
from .decision.policy import EvaluationPlan as EvaluationPlan
from .decision.policy import Policy as Policy
from .decision.policy import PolicyError as PolicyError
from .decision.policy import PolicyLike as PolicyLike
from .decision.policy import load_policy as load_policy
from .decision.policy import resolve as resolve
from .engine.executors import RayExecutor as RayExecutor
from .errors import NotApplicable as NotApplicable
from .errors import TableError as TableError
from .evaluate import evaluate as evaluate
from .evaluation import Evaluation as Evaluation
from .metrics import registry as registry
from .metrics.registration import Expect as Expect
from .metrics.registration import metric as metric
from .remediate import remediate as remediate
from .results import Measurement as Measurement
from .results import MetricResult as MetricResult
from .results import Risk as Risk
from .results import Severity as Severity
from .results import Status as Status

__version__ = "0.1.0"

#: the Dagster side, imported on first use so that ``import dagster_privacy`` (and the CLI) stays light
_PIPELINE = {
    "build_privacy_checks": "checks",
    "build_schema_gate_check": "schema_gate",
    "build_published_release": "publish",
    "build_release_definitions": "release",
    "build_release_assets": "release",
    "build_release_checks": "release",
    "ReleaseSettings": "release",
    "PostgresTables": "resources",
    "ReadOnlyDuckDB": "resources",
    "PrivacyChecksComponent": "component",
    "PrivacyCheckTranslator": "translator",
}


def __getattr__(name: str) -> Any:  # PEP 562
    if name in _PIPELINE:
        import importlib

        return getattr(importlib.import_module(f".pipeline.{_PIPELINE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:  # dg's component registry scans dir(module): list the lazy names too
    return sorted([*globals(), *_PIPELINE])


__all__ = [
    "PolicyLike",
    "TableLike",
    "Evaluation",
    "EvaluationPlan",
    "Expect",
    "Measurement",
    "NotApplicable",
    "PrivacyCheckTranslator",
    "Risk",
    "PrivacyChecksComponent",
    "PostgresTables",
    "RayExecutor",
    "ReadOnlyDuckDB",
    "ReleaseSettings",
    "MetricResult",
    "Policy",
    "PolicyError",
    "Severity",
    "Status",
    "TableError",
    "build_privacy_checks",
    "build_published_release",
    "build_release_assets",
    "build_release_checks",
    "build_release_definitions",
    "build_schema_gate_check",
    "evaluate",
    "load_policy",
    "metric",
    "registry",
    "remediate",
    "resolve",
]
