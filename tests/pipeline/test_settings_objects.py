"""The factories' settings objects (issue 58): ``CheckSettings`` / ``PublicationSettings`` and their
fields as keywords build the same definitions, and the keyword types mirror the fields exactly."""

from __future__ import annotations

import dataclasses
import typing

import dagster as dg
import pytest

from dagster_privacy.pipeline import PublicationSettings, build_privacy_checks, build_published_release
from dagster_privacy.pipeline.checks import CheckOptions, CheckSettings
from dagster_privacy.pipeline.publish import PublicationOptions
from dagster_privacy.pipeline.schema_gate import (
    SchemaGateOptions,
    SchemaGateSettings,
    build_schema_gate_check,
)


@pytest.mark.parametrize(("settings", "options"), [(CheckSettings, CheckOptions),
                                                   (PublicationSettings, PublicationOptions),
                                                   (SchemaGateSettings, SchemaGateOptions)])  # fmt: skip
def test_the_keywords_are_the_settings_fields(settings, options) -> None:
    fields = {f.name: f.type for f in dataclasses.fields(settings)}
    assert set(typing.get_type_hints(options)) == set(fields)
    assert options.__optional_keys__ == frozenset(fields)  # every keyword may be left out


def _check_names(defs) -> set[str]:
    return {k.name for d in defs for k in d.check_keys}


def test_a_settings_object_and_keywords_build_the_same_checks() -> None:
    kw = {"name_prefix": "strict_", "on_evaluation": None, "release_resource_key": None}
    by_keywords = build_privacy_checks(asset="synthetic_table", policy="standard", real="real", **kw)
    by_object = build_privacy_checks(
        asset="synthetic_table", policy="standard", real="real", settings=CheckSettings(**kw)
    )
    assert _check_names(by_keywords) == _check_names(by_object)
    assert all(n.startswith("strict_") for n in _check_names(by_object))
    # keywords override the object's fields
    mixed = build_privacy_checks(asset="synthetic_table", policy="standard", real="real",
                                 settings=CheckSettings(**kw), name_prefix="other_")  # fmt: skip
    assert all(n.startswith("other_") for n in _check_names(mixed))
    with pytest.raises(TypeError):
        build_privacy_checks(asset="synthetic_table", policy="standard", real="real", prefix="x")  # type: ignore[call-arg]


def test_a_settings_object_and_keywords_build_the_same_publication() -> None:
    checks = ["privacy_risk_membership"]
    a = build_published_release(required_checks=checks, real="real", key="published", group_name="g")
    b = build_published_release(required_checks=checks, real="real",
                                settings=PublicationSettings(key="published", group_name="g"))  # fmt: skip
    assert a.key == b.key == dg.AssetKey("published")
    assert a.specs_by_key[a.key].group_name == b.specs_by_key[b.key].group_name == "g"


def test_a_settings_object_and_keywords_build_the_same_schema_gate() -> None:
    [a] = build_schema_gate_check(asset="synthetic_table", real="real", name="gx_gate", resource_key="tables")
    gate = SchemaGateSettings(name="gx_gate", resource_key="tables")
    [b] = build_schema_gate_check(asset="synthetic_table", real="real", settings=gate)
    assert {k.name for k in a.check_keys} == {k.name for k in b.check_keys} == {"gx_gate"}
    assert a.required_resource_keys == b.required_resource_keys >= {"tables", "privacy_release"}
