"""The Dagster side of dagster_privacy: read-only DuckDB resource, table assets, privacy checks, the GX
schema gate, gated publication, jobs, schedule, sensor, the YAML component and the demo release.

Importing this package imports Dagster; ``import dagster_privacy`` alone does not.
"""

from .assets import build_table_asset as build_table_asset
from .automation import build_checks_job as build_checks_job
from .automation import build_checks_schedule as build_checks_schedule
from .automation import build_new_release_sensor as build_new_release_sensor
from .automation import build_partitioned_checks_schedule as build_partitioned_checks_schedule
from .automation import build_release_job as build_release_job
from .checks import CheckSettings as CheckSettings
from .checks import build_privacy_checks as build_privacy_checks
from .checks import required_check_names as required_check_names
from .evidence import build_report_hook as build_report_hook
from .governance.signoff import build_signoff_check as build_signoff_check
from .governance.signoff import verify_signoff as verify_signoff
from .governance.signoff_record import record_signoff as record_signoff
from .publish import PublicationRefused as PublicationRefused
from .publish import PublicationSettings as PublicationSettings
from .publish import PublishTarget as PublishTarget
from .publish import build_published_release as build_published_release
from .publish import verify_release as verify_release
from .release import build_release_assets as build_release_assets
from .release import build_release_checks as build_release_checks
from .release import build_release_definitions as build_release_definitions
from .release import build_release_resources as build_release_resources
from .resources import PostgresTables as PostgresTables
from .resources import PrivacyRelease as PrivacyRelease
from .resources import ReadOnlyDuckDB as ReadOnlyDuckDB
from .schema_gate import SchemaGateSettings as SchemaGateSettings
from .schema_gate import build_schema_gate_check as build_schema_gate_check
from .settings import ReleaseSettings as ReleaseSettings
from .translator import PrivacyCheckTranslator as PrivacyCheckTranslator

__all__ = [
    "CheckSettings",
    "PrivacyRelease",
    "PublicationRefused",
    "PublicationSettings",
    "PublishTarget",
    "PostgresTables",
    "ReadOnlyDuckDB",
    "ReleaseSettings",
    "SchemaGateSettings",
    "build_checks_job",
    "build_checks_schedule",
    "build_partitioned_checks_schedule",
    "build_new_release_sensor",
    "build_privacy_checks",
    "build_published_release",
    "build_release_assets",
    "build_release_checks",
    "build_release_definitions",
    "build_release_job",
    "build_release_resources",
    "build_report_hook",
    "build_schema_gate_check",
    "build_signoff_check",
    "build_table_asset",
    "PrivacyCheckTranslator",
    "required_check_names",
    "record_signoff",
    "verify_release",
    "verify_signoff",
]
