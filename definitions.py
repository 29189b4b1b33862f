"""The reference code location: the assets of ``assets/`` and the checks of ``checks/``.

    DAGSTER_PRIVACY_DATABASE=release.duckdb DAGSTER_PRIVACY_PUBLISH_TARGET=published.duckdb \\
        dagster asset materialize -f definitions.py --select '*'
    dagster dev -w workspace.yaml

The DuckDB file holds tables ``real``, ``holdout`` and ``synthetic``; the policy defaults to
``checks/policy.yaml`` (``DAGSTER_PRIVACY_POLICY``). Without variables it points at the files
``dagster-privacy demo`` writes under ``.dagster_privacy/demo/``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # assets/ and checks/ are not installed packages

import assets  # noqa: E402
import checks  # noqa: E402
from dagster_privacy.pipeline import build_release_definitions  # noqa: E402

defs = build_release_definitions(settings=checks.settings, assets=assets.assets, checks=checks.checks)
