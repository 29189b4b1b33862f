"""The reference code location: the assets of ``assets/`` and the checks of ``checks/``.

    DAGSTER_PRIVACY_DATABASE=release.duckdb DAGSTER_PRIVACY_PUBLISH_TARGET=published.duckdb \\
        dg launch --assets '*' -f definitions.py
    dagster dev -w workspace.yaml

The DuckDB file holds tables ``real``, ``holdout`` and ``synthetic``; the policy defaults to
``checks/policy.yaml`` (``DAGSTER_PRIVACY_POLICY``). Without variables it points at the files
``dagster-privacy demo`` writes under ``.dagster_privacy/demo/``.
"""

import sys
from pathlib import Path

# assets/ and checks/ are the project's own top-level folders (not installed packages): Dagster puts the
# working directory on sys.path, this line makes the file load from any directory as well
sys.path.insert(0, str(Path(__file__).parent))

import assets  # noqa: E402
import checks  # noqa: E402
from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions  # noqa: E402

# one settings object, read once here and handed to both folders: neither imports the other
settings = ReleaseSettings.from_env(default_policy=checks.DEFAULT_POLICY)
defs = build_release_definitions(
    settings=settings, assets=assets.build(settings), checks=checks.build(settings)
)
