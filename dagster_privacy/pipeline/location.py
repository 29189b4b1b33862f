"""The reference code location, shipped in the package (no repository needed):

    dagster dev -m dagster_privacy.pipeline.location
    dagster definitions validate -m dagster_privacy.pipeline.location

It reads the same settings as ``dagster-privacy demo`` prints (``DAGSTER_PRIVACY_DATABASE``,
``DAGSTER_PRIVACY_POLICY``, ``DAGSTER_PRIVACY_PUBLISH_TARGET``; without them, the files the demo writes
under ``.dagster_privacy/demo/`` of the working directory) and builds the release pipeline with
``build_release_definitions``, as the repository's ``definitions.py`` does with its own folders.
"""

from __future__ import annotations

from .release import build_release_definitions
from .settings import ReleaseSettings

defs = build_release_definitions(settings=ReleaseSettings.from_env())
