"""dagster_privacy: privacy gates for synthetic-data releases.

The engine (tables → spaces → context → metrics → results) knows nothing of Dagster; the Dagster side
(``dagster_privacy.pipeline``) knows nothing of how a metric is computed.
"""

from .evaluate import evaluate as evaluate
from .policy import Policy as Policy
from .policy import PolicyError as PolicyError
from .policy import load_policy as load_policy
from .registry import metric as metric
from .registry import registry as registry
from .remediate import remediate as remediate
from .results import Evaluation as Evaluation
from .results import MetricResult as MetricResult
from .results import Severity as Severity
from .results import Status as Status
from .tables import TableError as TableError

__version__ = "0.1.0"

__all__ = [
    "Evaluation",
    "MetricResult",
    "Policy",
    "PolicyError",
    "Severity",
    "Status",
    "TableError",
    "evaluate",
    "load_policy",
    "metric",
    "registry",
    "remediate",
]
