"""The schema gate: a blocking check, run with Great Expectations 1.x directly (dagster-ge needs GX < 1).

The synthetic table must be compatible with the real one: the same columns, compatible types and no
nulls where the real table (or the caller) forbids them; and no column that the metrics leave out
(identifier, empty, unsupported, excluded) may hold values of the real column — it would be published
unexamined. A synthetic category the real table lacks is counted but does not block by default
(``unseen_categories="count"``): a value the training data does not hold cannot disclose a training
record (README); ``"block"`` makes it blocking. GX is imported lazily (≈ 3 s) and run with
``partial_unexpected_count: 0``, so its results carry
counts but no row values; the check records only counts and a per-expectation table (type, column,
success, counts) — never GX's own result objects, whose expectation configuration repeats the real
category domain (``value_set``) verbatim.
"""

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict

import dagster as dg
import polars as pl

from ..data.left_out import left_out_overlap
from ..data.tables import dtype_family, infer_schema
from ..decision import policy as pol
from ..errors import TableError, safe_reason
from . import metadata as md
from .assets import DUCKDB_KEY, RELEASE_KEY
from .checks import PolicyLike, failed_closed
from .resources import PrivacyRelease, ReadOnlyDuckDB

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # pragma: no cover
    from typing_extensions import Unpack

NUMERIC_TYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
]
BOOL_TYPES = ["bool", "boolean"]
TIME_TYPES = [f"datetime64[{u}]" for u in ("s", "ms", "us", "ns")]
#: result format that carries counts and no row values (dagster-facts §7)
RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": 0}


def _to_pandas(df: pl.DataFrame) -> Any:
    """pandas frame for GX: text columns as Python objects, so GX checks each value's type
    (GX 1.24 cannot match pandas 3's ``str`` dtype by name)."""
    pdf = df.to_pandas()
    for name, dtype in df.schema.items():
        if dtype_family(dtype) == "text":
            pdf[name] = pdf[name].astype(object).where(pdf[name].notna(), None)
    return pdf


def schema_expectations(
    real: pl.DataFrame,
    *,
    column_kinds: dict[str, str] | None = None,
    not_null: Sequence[str] | Literal["real"] | None = "real",
) -> list[Any]:
    """The expectations the synthetic table must meet, derived from the real table."""
    import great_expectations.expectations as gxe

    schema = infer_schema(real, column_kinds)
    categorical = set(schema.of_kind("categorical", "binary"))
    no_nulls = (
        [c for c in real.columns if real.get_column(c).null_count() == 0]
        if not_null == "real"
        else list(not_null or [])
    )
    exps: list[Any] = [gxe.ExpectTableColumnsToMatchSet(column_set=list(real.columns), exact_match=True)]
    for name, dtype in real.schema.items():
        fam = dtype_family(dtype)
        types = {"number": NUMERIC_TYPES, "boolean": BOOL_TYPES, "time": TIME_TYPES, "text": ["str"]}[fam]
        exps.append(gxe.ExpectColumnValuesToBeInTypeList(column=name, type_list=types))
        if name in categorical:
            domain = real.get_column(name).drop_nulls().unique().to_list()
            exps.append(gxe.ExpectColumnValuesToBeInSet(column=name, value_set=domain))
        if name in no_nulls:
            exps.append(gxe.ExpectColumnValuesToNotBeNull(column=name))
    return exps


UnseenCategories = Literal["count", "block"]
#: the expectation that finds synthetic categories outside the real domain
IN_SET = "expect_column_values_to_be_in_set"


def run_schema_gate(
    real: pl.DataFrame,
    synthetic: pl.DataFrame,
    *,
    column_kinds: dict[str, str] | None = None,
    not_null: Sequence[str] | Literal["real"] | None = "real",
    unseen_categories: UnseenCategories = "count",
) -> tuple[bool, list[dict[str, Any]]]:
    """Validate ``synthetic`` against ``real`` with GX; returns (success, one row of counts per expectation).

    Rows hold the expectation type, the column name, success, whether it blocks, and counts — no values.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (
        ctx.data_sources.add_pandas("privacy")
        .add_dataframe_asset("synthetic")
        .add_batch_definition_whole_dataframe("all")
    )
    present = set(synthetic.columns)
    exps = [
        e
        for e in schema_expectations(real, column_kinds=column_kinds, not_null=not_null)
        if getattr(e, "column", None) is None or e.column in present
    ]
    suite = ctx.suites.add(gx.ExpectationSuite(name="schema_gate", expectations=exps))
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name="schema_gate", data=batch, suite=suite))
    res = vd.run(batch_parameters={"dataframe": _to_pandas(synthetic)}, result_format=RESULT_FORMAT)
    rows = [_gx_row(r, real, present) for r in res.results]
    missing = [c for c in real.columns if c not in present]
    # column expectations on absent columns are dropped above: each absent column fails on its own
    rows += [_row("column_present", c, success=False) for c in missing]
    schema = infer_schema(real, column_kinds)
    for c, n in left_out_overlap(real, synthetic, schema).items():  # never evaluated: must not copy
        rows.append(_row("left_out_column_holds_no_real_value", c, success=n == 0, elements=synthetic.height,
                         unexpected=n, error=n is None))  # fmt: skip
    for row in rows:
        row["blocking"] = not (row["expectation"] == IN_SET and unseen_categories == "count")
    success = all(row["success"] for row in rows if row["blocking"]) and not missing
    return success, rows


def _gate_result(
    ok: bool, rows: list[dict[str, Any]], *, release: str, fp: str, height: int, blocking_unseen: bool
) -> dg.AssetCheckResult:
    """The gate's result: counts, the failed expectations (at most 20 named), the table of every one."""
    failed = [r for r in rows if not r["success"] and r["blocking"]]
    unseen = sum(int(r["unexpected_count"] or 0) for r in rows if r["expectation"] == IN_SET)
    unexpected = sum(int(r["unexpected_count"] or 0) for r in rows)
    lines = [
        f"**Schema gate** on release `{release}`: **{'passed' if ok else 'failed'}** — "
        f"{len(rows) - len(failed)}/{len(rows)} blocking expectations met, {unexpected} unexpected "
        f"values ({unseen} in categories the real table lacks: counted, "
        f"{'blocking' if blocking_unseen else 'not blocking'})."
    ]
    lines += [
        f"- `{r['expectation']}` on `{r['column']}`: {r['unexpected_count'] or 0} unexpected"
        + (" (raised)" if r["error"] else "")
        for r in failed[:20]
    ]
    colset = next((r for r in rows if r["expectation"] == "expect_table_columns_to_match_set"), None)
    return dg.AssetCheckResult(
        passed=ok,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "expectations": dg.MetadataValue.int(len(rows)),
            "failed_expectations": dg.MetadataValue.int(len(failed)),
            "unexpected_values": dg.MetadataValue.int(unexpected),
            "unseen_category_values": dg.MetadataValue.int(unseen),
            "rows": dg.MetadataValue.int(height),
            "missing_columns": md.json(colset["missing_columns"] if colset else []),
            "extra_columns": md.json(colset["extra_columns"] if colset else []),
            "results": _table(rows),
            md.FINGERPRINT: dg.MetadataValue.text(fp),
            md.RELEASE_ID: dg.MetadataValue.text(release),
            "summary": dg.MetadataValue.md("\n".join(lines)),
        },
        description=f"{len(failed)} of {len(rows)} expectations failed" if failed else "schema compatible",
    )


def _gx_row(r: Any, real: pl.DataFrame, present: set[str]) -> dict[str, Any]:
    """One GX result's row: the expectation, its column, success and counts (never a value)."""
    cfg, out = r.expectation_config, r.result or {}
    if cfg is None:  # a result that cannot say what it checked: the gate fails closed on it
        raise TableError("a Great Expectations result came without its expectation")
    raised = bool(r.exception_info and r.exception_info.get("raised_exception"))
    row = {
        "expectation": cfg.type,
        "column": cfg.kwargs.get("column") or "(table)",
        "success": bool(r.success),
        "element_count": out.get("element_count"),
        "unexpected_count": out.get("unexpected_count"),
        "missing_count": out.get("missing_count"),
        "error": raised,
    }
    if cfg.type == "expect_table_columns_to_match_set":
        row["missing_columns"] = sorted(set(real.columns) - present)
        row["extra_columns"] = sorted(present - set(real.columns))
    return row


def _row(
    expectation: str, column: str, *, success: bool, elements: int | None = None,
    unexpected: int | None = None, error: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """A row the gate adds to GX's (an absent column, a left-out column's real values)."""
    return {"expectation": expectation, "column": column, "success": success, "element_count": elements,
            "unexpected_count": unexpected, "missing_count": None, "error": error}  # fmt: skip


#: the expectations table's columns (Dagster column types)
EXPECTATIONS = {"expectation": "string", "column": "string", "success": "bool", "element_count": "int",
                "unexpected_count": "int", "missing_count": "int"}  # fmt: skip


def _table(rows: list[dict[str, Any]]) -> dg.MetadataValue:
    return md.table(rows, EXPECTATIONS)


@dataclass(frozen=True)
class SchemaGateSettings:
    """How the schema gate is defined, besides its tables and rules.

    Args:
        name: the check's name.
        resource_key: the table resource (``ReadOnlyDuckDB`` or ``PostgresTables``).
        release_resource_key: the ``PrivacyRelease`` resource that names the release.
        additional_deps: more upstream assets of the check.

    Example:
        ``build_schema_gate_check(asset="syn", real="real", settings=SchemaGateSettings(name="gx_gate"))``
    """

    name: str = "schema_gate"
    resource_key: str = DUCKDB_KEY
    release_resource_key: str = RELEASE_KEY
    additional_deps: Sequence[dg.AssetsDefinition | dg.AssetKey | str] = ()


class SchemaGateOptions(TypedDict, total=False):
    """``SchemaGateSettings``' fields as keywords of ``build_schema_gate_check``."""

    name: str
    resource_key: str
    release_resource_key: str
    additional_deps: Sequence[dg.AssetsDefinition | dg.AssetKey | str]


def build_schema_gate_check(
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str,
    real: str,
    synthetic: str | None = None,
    policy: PolicyLike | None = None,
    not_null: Sequence[str] | Literal["real"] | None = "real",
    unseen_categories: UnseenCategories = "count",
    settings: SchemaGateSettings | None = None,
    **options: Unpack[SchemaGateOptions],
) -> Sequence[dg.AssetChecksDefinition]:
    """A blocking ERROR check: the synthetic table is schema-compatible with the real one (GX 1.x).

    ``not_null``: columns that must hold no null; ``"real"`` = every column without nulls in the real
    table; None = no null constraint. ``unseen_categories``: ``"count"`` (default) reports synthetic
    categories the real table lacks without blocking, ``"block"`` blocks on them. Column kinds come from
    ``policy``'s threat model. Fails closed.

    Args:
        asset: the synthetic table asset (a definition, key or name).
        real: the real table's name or query, read through the table resource.
        synthetic: the synthetic table's name or query; None: the asset's name.
        policy: a preset name, a policy file, a ``Policy`` or its mapping, for its column kinds; None:
            the kinds inferred from the real table.
        not_null: the columns that must hold no null, as above.
        unseen_categories: ``"count"`` or ``"block"``, as above.
        settings: ``SchemaGateSettings`` (the check's name, resources and upstream assets); its fields
            may also be given as keywords (``**options``).

    Returns:
        One blocking ``@asset_check``: passed when every blocking expectation is met; its metadata holds
        counts, the missing and extra columns, a per-expectation table, the fingerprint and release id.

    Example:
        ``build_schema_gate_check(asset="synthetic_table", real="real", policy="standard")``
    """
    gate = replace(settings or SchemaGateSettings(), **options)
    key = dg.AssetKey.from_coercible_or_definition(asset)
    synthetic_source = synthetic or key.path[-1]
    kinds = dict(pol.load_policy(policy).threat_model.column_kinds) if policy is not None else {}

    @dg.asset_check(
        asset=key,
        name=gate.name,
        blocking=True,
        required_resource_keys={gate.resource_key, gate.release_resource_key},
        additional_deps=list(gate.additional_deps) or None,
        description="The synthetic table's columns, types, categories and nulls are compatible "
        "with the real table (Great Expectations 1.x; counts only).",
    )
    def _schema_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        from ..data.tables import fingerprint

        release = fp = None
        try:
            db: ReadOnlyDuckDB = getattr(context.resources, gate.resource_key)
            rel: PrivacyRelease = getattr(context.resources, gate.release_resource_key)
            real_df = db.read(real, role="real")
            syn_df = db.read(synthetic_source, role="synthetic")
            fp = fingerprint(syn_df)
            release = rel.resolve(fp, dict(context.run.tags))
            ok, rows = run_schema_gate(
                real_df, syn_df, column_kinds=kinds, not_null=not_null, unseen_categories=unseen_categories
            )
            return _gate_result(ok, rows, release=release, fp=fp, height=syn_df.height,
                                blocking_unseen=unseen_categories == "block")  # fmt: skip
        except Exception as exc:  # fail closed
            reason = safe_reason(exc)
        return failed_closed(context, "schema gate", reason, release=release, fingerprint=fp)

    return [_schema_gate]


__all__ = [
    "SchemaGateOptions",
    "SchemaGateSettings",
    "TableError",
    "build_schema_gate_check",
    "run_schema_gate",
    "schema_expectations",
]
