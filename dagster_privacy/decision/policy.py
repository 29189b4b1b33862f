"""Release policy: which metrics, thresholds, severities, threat model, seed; presets; the verdict.

One resolution and one judgement for every caller (evaluate, calibration, the Dagster checks):

    load_policy(preset | YAML | mapping) ──▶ Policy ──resolve(ids, threat-model overrides)──▶ EvaluationPlan
    registry.run(…) ──unjudged MetricResult──▶ judge(plan.entry(id), result) ──▶ verdict(results)
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import safe_reason
from ..metrics.metric_policy import MetricPolicy
from .judge import judge as judge  # the one decision rule, in its own module
from .policy_yaml import PolicyError as PolicyError
from .policy_yaml import compose, line_of, plain, read_yaml
from .verdict import verdict as verdict  # the one verdict rule: decision/verdict.py

PRESETS_DIR = Path(__file__).parents[1] / "presets"  # the package data beside decision/
PRESET_NAMES = ("strict", "standard", "report-only")
MAX_POLICY_BYTES = 1_000_000
#: a waiver's reason is read by the privacy officer who signs off: a word or two says nothing
WAIVER_REASON_MIN = 10


class ThreatModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_columns: list[str] | None = None
    sensitive_columns: list[str] | None = None
    column_kinds: dict[str, str] = Field(default_factory=dict)
    source_index_column: str | None = None


class Policy(BaseModel):
    """A release policy: which metrics run and how each is judged, the threat model, the seed, the
    verdict's levels and the waivers. ``load_policy`` builds one from a preset, a YAML file or a mapping;
    a field that passes releases more easily than the preset (or ``standard``) needs a waiver.

    Args:
        each field below, described where it is declared (``Policy.model_fields``).

    Example:
        ``load_policy({"preset": "strict", "seed": 7, "require_signoff": True})``
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "custom"
    preset: str | None = None
    seed: int = Field(0, ge=0, lt=2**32, description="random seed, 0 ≤ seed < 2^32")
    threat_model: ThreatModel = Field(default_factory=ThreatModel)
    metrics: dict[str, MetricPolicy] = Field(default_factory=dict)
    require_signoff: bool = False
    false_alarm: float = Field(
        0.05,
        ge=1e-6,  # below, a gate's level leaves the numbers a bound is computed in (second review)
        lt=0.5,
        strict=True,
        description="family-wise chance that a release with no excess risk fails a gate (Bonferroni "
        "over the gates: each fails when its lower bound at false_alarm / m clears its threshold)",
    )
    assurance: float = Field(
        0.95,
        gt=0.5,
        lt=1.0,
        strict=True,
        description="a gate passes when its upper bound at this level is at or below its threshold",
    )
    required_risks: list[str] | None = Field(
        None,
        description="risks the verdict requires (None: all four); a risk left out needs a waiver",
    )
    accepted_floor_people: int = Field(
        50,
        ge=1,
        strict=True,
        description="a count gate passes only when this many rare training records copied verbatim (or "
        "accepted_floor_share of the training rows, whichever is larger) would have failed it with 95 % "
        "probability (its floor in people); a higher floor lacks evidence",
    )
    accepted_floor_share: float = Field(
        0.05,
        ge=0.0,
        lt=1.0,
        strict=True,
        description="the accepted floor as a share of the training rows, where it is larger than "
        "accepted_floor_people: never weaker than the share crp tolerated as a gate (0.05)",
    )
    accepted_excess: float = Field(
        0.25,  # clean releases of 400-600-row tables show inference upper bounds of 0.17-0.23
        gt=0.0,
        lt=1.0,
        strict=True,
        description="a gate too small to show its excess within its threshold passes with a weaker, stated "
        "guarantee when its upper bound is at or below this and it shows no sign of risk (its lower bound at "
        "5 %, alone, within the threshold); set it at or below a threshold to refuse",
    )
    accept_unrun: bool = Field(
        True,
        description="a gate that cannot run at this table's size (too few holdout rows) leaves its risk to "
        "the risk's other gates, and says so; false: the risk lacks evidence",
    )
    lineage_budget: int = Field(
        0,
        ge=0,
        strict=True,
        description="people a lineage's releases may expose beyond chance together: its union fails when "
        "more are exposed beyond chance than this, on evidence (0: any excess the exact test sees)",
    )
    waivers: dict[str, str] = Field(
        default_factory=dict,
        description="risk → why this policy does not require it, or a field it loosens against its preset "
        "(false_alarm, metrics.ID.threshold, …) → why; a waiver forces a sign-off and shows in the report, "
        "the check metadata and the audit",
    )

    @field_validator("required_risks")
    @classmethod
    def _risks(cls, v: list[str] | None) -> list[str] | None:
        from ..results import RISK_NAMES

        unknown = [r for r in v or () if r not in RISK_NAMES]
        if unknown:
            raise ValueError(f"unknown risk(s): {', '.join(unknown)} (one of: {', '.join(RISK_NAMES)})")
        return v

    @model_validator(mode="after")
    def _protection(self, info: ValidationInfo) -> Policy:
        """A policy may require fewer than the four risks only by naming a waiver with its reason for
        each one it leaves out (issue 44: ``required_risks: []`` published a 30 % copy release), and may
        pass a release more easily than its preset only by naming a waiver for each field that does so
        (issue 54: loosening.py); a waiver forces a sign-off."""
        from ..results import RISK_NAMES
        from .loosening import declared_column, is_field_path

        unknown = [
            r for r in self.waivers if r not in RISK_NAMES and not is_field_path(r) and not declared_column(r)
        ]
        if unknown:
            raise ValueError(
                f"waiver for unknown risk(s): {', '.join(unknown)} (one of: {', '.join(RISK_NAMES)}, or a "
                "policy field the policy loosens, e.g. false_alarm or metrics.ID.threshold)"
            )
        vague = [r for r, why in self.waivers.items() if len(str(why).strip()) < WAIVER_REASON_MIN]
        if vague:
            raise ValueError(
                f"the waiver of {', '.join(vague)} needs a reason of at least {WAIVER_REASON_MIN} characters"
            )
        if self.required_risks is not None:
            both = [r for r in self.required_risks if r in self.waivers]
            if both:
                raise ValueError(f"{', '.join(both)} is both required and waived")
            dropped = [r for r in RISK_NAMES if r not in self.required_risks and r not in self.waivers]
            if dropped:
                raise ValueError(
                    f"required_risks leaves out {', '.join(dropped)} without a waiver: add "
                    f"`waivers: {{{dropped[0]}: <why>}}` for each (a waiver forces a sign-off) or require it"
                )
        if not (info.context or {}).get("preset"):
            from .loosening import check_signed

            check_signed(self)
        if self.waivers:
            self.require_signoff = True
        return self

    def loosenings(self) -> list[Any]:
        """Every field passing releases more easily than the preset (or standard): loosening.py."""
        from .loosening import loosenings

        return loosenings(self, preset_policy(self.base_name()))

    def base_name(self) -> str:
        """The preset this policy is compared with: its own while it keeps that preset's waivers, else
        ``standard``. A preset's waivers are what make it a base (report-only gates nothing because it
        waives every risk, which forces a sign-off): a Policy object naming report-only without them
        passed 60 verbatim copies with gates at threshold 0.99, unsigned (issue 54, a reviewer's attack)."""
        name = self.preset or "standard"
        if name == "standard":
            return name
        return name if set(preset_policy(name).waivers) <= set(self.waivers) else "standard"

    @property
    def required(self) -> list[str]:
        """The risks the verdict requires: all four but the waived ones."""
        from ..results import RISK_NAMES

        return [r for r in RISK_NAMES if r not in self.waivers]

    @field_validator("metrics")
    @classmethod
    def _known(cls, v: dict[str, MetricPolicy]) -> dict[str, MetricPolicy]:
        from ..metrics import registry

        unknown = [m for m in v if m not in registry()]
        if unknown:
            raise ValueError(f"unknown metric id(s): {', '.join(unknown)} (see `dagster-privacy metrics`)")
        return v

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()

    def entry(self, metric_id: str) -> MetricPolicy:
        """The policy's entry for a metric; a metric the policy does not configure gates nothing, so
        it is refused rather than given a default that would pass."""
        entry = self.metrics.get(metric_id)
        if entry is None:
            raise PolicyError(
                f"metric {metric_id} is not configured in policy {self.name!r}: add an entry "
                "(threshold and severity) or leave it out"
            )
        return entry

    def entry_or_inform(self, metric_id: str) -> MetricPolicy:
        """The entry, or for a metric the policy does not configure an informing one (no threshold,
        gate on value): calibration measures such metrics and may give them a threshold."""
        return self.metrics.get(metric_id) or MetricPolicy.model_construct()

    def select(self, requested: Sequence[str] | None = None) -> list[str]:
        """The metric ids an evaluation runs, in registry order: ``requested`` (each must be configured
        here), else every metric the policy configures."""
        from ..metrics import registry

        specs = registry()
        ids = list(requested) if requested else list(self.metrics)
        unknown = [m for m in ids if m not in specs]
        if unknown:
            raise PolicyError(f"unknown metric id(s): {', '.join(unknown)} (see `dagster-privacy metrics`)")
        if not ids:
            raise PolicyError(
                f"policy {self.name!r} configures no metric: name at least one, or use a preset"
            )
        unconfigured = [m for m in ids if m not in self.metrics]
        if unconfigured:
            raise PolicyError(
                f"metric(s) {', '.join(unconfigured)} not configured in policy {self.name!r}: "
                "add an entry (threshold and severity) for each, or start from a preset"
            )
        wanted = set(ids)
        return [m for m in specs if m in wanted]


# --------------------------------------------------------------------------------------------- loading


def _preset_data(name: str) -> dict[str, Any]:
    """A preset: every metric's default entry (declared beside the metric), then the preset file's
    ``every`` entry over each, then its ``metrics`` overrides. ``standard`` overrides nothing."""
    from ..metrics import registry

    path = PRESETS_DIR / f"{name}.yaml"
    if name not in PRESET_NAMES or not path.is_file():
        raise PolicyError(
            f"unknown policy preset {name!r}: use one of {', '.join(PRESET_NAMES)} or a YAML file"
        )
    data = read_yaml(path.read_text()) or {}
    every = data.pop("every", None) or {}
    defaults = {m: _merge(spec.default, every) for m, spec in registry().items()}
    data["metrics"] = _merge(defaults, data.get("metrics") or {})
    return data  # a preset's `every` applies to every registered metric


@functools.cache
def _preset_cached(name: str, ids: tuple[str, ...]) -> Policy:  # ids: a metric registered later changes it
    data = _preset_data(name)
    data.setdefault("name", name)
    return Policy.model_validate(data, context={"preset": True})


def preset_policy(name: str) -> Policy:
    """A preset as a Policy, the base its loosenings are compared with (a copy: callers may edit)."""
    from ..metrics import registry

    return _preset_cached(name, tuple(registry())).model_copy(deep=True)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def from_mapping(
    data: Mapping[str, Any], *, name: str = "custom", node: yaml.Node | None = None, where: str = "policy"
) -> Policy:
    """A policy from a mapping: its ``preset`` first, then its ``every`` entry over each metric (the
    preset's and its own), then its own keys over it."""
    data = dict(data)
    preset = data.get("preset")
    every = data.pop("every", None)
    if preset is not None and not isinstance(preset, str):
        raise PolicyError(f"{where}: preset must be a name")
    if every is not None and not isinstance(every, Mapping):
        raise PolicyError(f"{where}: every must be a mapping of entry keys (threshold, severity, …)")
    base = _preset_data(preset) if preset is not None else {}
    if every:
        own: Mapping[str, Any] = data["metrics"] if isinstance(data.get("metrics"), Mapping) else {}
        names = [*base.get("metrics", {}), *(m for m in own if m not in base.get("metrics", {}))]
        base["metrics"] = {m: _merge(base.get("metrics", {}).get(m, {}), every) for m in names}
    if base:
        data = _merge(base, {k: v for k, v in data.items() if k != "preset"})
        if preset is not None:
            data["preset"] = preset
    data.setdefault("name", name)
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = line_of(node, loc)
        at = f"{where}, line {line}" if line else where
        field = ".".join(str(p) for p in loc)
        raise PolicyError(f"{at}: {field + ': ' if field else ''}{err['msg']}") from None


#: what names a policy wherever one is taken: a preset name, a YAML file, a ``Policy`` or its mapping
PolicyLike = str | Path | Policy | Mapping[str, Any]


def load_policy(policy: PolicyLike | None = "standard") -> Policy:
    """A preset name, a YAML path, a mapping or a Policy.

    Args:
        policy: a preset name, a YAML file (at most 1,000,000 bytes), a mapping (its ``preset``, then
            its ``every`` entry over each metric, then its own keys) or a ``Policy``; None: ``standard``.

    Returns:
        The validated ``Policy``. Raises ``PolicyError`` (one line, with the file's line when known).

    Example:
        ``load_policy("policy.yaml").require_signoff``
    """
    if policy is None:
        policy = "standard"
    if isinstance(policy, Policy):  # validated again: an attribute set after loading skipped it (review)
        try:
            return Policy.model_validate(policy.model_dump(mode="json"))
        except ValidationError as exc:
            raise PolicyError(f"{policy.name}: {exc.errors()[0]['msg']}") from None
    if isinstance(policy, Mapping):
        return from_mapping(policy)
    text = str(policy)
    if text in PRESET_NAMES:
        return from_mapping({"preset": text}, name=text)
    path = Path(text)
    if not path.is_file():
        raise PolicyError(f"policy {text!r} is neither a preset ({', '.join(PRESET_NAMES)}) nor a file")
    if path.stat().st_size > MAX_POLICY_BYTES:
        raise PolicyError(f"{path}: a policy file is at most {MAX_POLICY_BYTES:,} bytes")
    failure = None
    try:
        source = path.read_text(encoding="utf-8")
        node = compose(source)
        plain(node, str(path))
        data = read_yaml(source) or {}
    except PolicyError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark else ""
        failure = f"{path}{line}: not valid YAML: {getattr(exc, 'problem', None) or type(exc).__name__}"
    except Exception as exc:  # not UTF-8, a number too long to convert, …
        failure = f"{path}: not a readable policy ({safe_reason(exc)})"
    if failure is not None:
        raise PolicyError(failure)
    if not isinstance(data, dict):
        raise PolicyError(f"{path}: a policy is a YAML mapping")
    return from_mapping(data, name=path.stem, node=node, where=str(path))


# ----------------------------------------------------------------------------------------- resolution


@dataclasses.dataclass(frozen=True)
class EvaluationPlan:
    """What one evaluation runs, resolved once: the metric ids in registry order, each one's policy
    entry, the threat model (policy's, overridden by arguments) and the seed. Made by ``resolve``.

    Args:
        policy, ids, entries, seed: the policy, the ids in registry order, each id's entry, the seed;
            key_columns, sensitive_columns, column_kinds, source_index_column: the threat model.

    Example:
        ``resolve("strict").gating`` lists the ids whose checks block publication.
    """

    policy: Policy
    ids: tuple[str, ...]
    entries: Mapping[str, MetricPolicy]
    key_columns: list[str] | None
    sensitive_columns: list[str] | None
    column_kinds: dict[str, str]
    source_index_column: str | None
    seed: int

    def entry(self, metric_id: str) -> MetricPolicy:
        return self.entries[metric_id]

    @property
    def fail_level(self) -> float:
        """A gate of weight 1's chance of failing a release with no excess risk: false_alarm over the total
        weight of the policy's gates, run or not (weighted Bonferroni; a metric subset keeps each gate at
        its level: a subset of one gate spent the whole false_alarm on it, issue 56)."""
        weights = {m: e.weight for m, e in self.policy.metrics.items() if e.blocks_on_failure}
        weights.update({m: self.entries[m].weight for m in self.gating})
        return self.policy.false_alarm / max(1.0, sum(weights.values()))

    def fail_level_of(self, metric_id: str) -> float:
        """This gate's share of the false alarm: ``fail_level`` × its weight."""
        return self.fail_level * self.entries[metric_id].weight

    @property
    def pass_level(self) -> float:
        """Each gate's chance of passing a release whose excess is above its threshold."""
        return 1.0 - self.policy.assurance

    @property
    def gating(self) -> list[str]:
        """The ids whose entry gates (ERROR with a threshold): their checks block publication. An
        informing entry (calibration's, for a metric the policy does not configure) is not among them."""
        return [m for m in self.ids if self.entries[m].blocks_on_failure]


def resolve(
    policy: PolicyLike | None = "standard",
    metrics: Sequence[str] | None = None,
    *,
    key_columns: Sequence[str] | None = None,
    sensitive_columns: Sequence[str] | None = None,
    column_kinds: Mapping[str, str] | None = None,
    source_index_column: str | None = None,
    seed: int | None = None,
    unconfigured: Literal["refuse", "inform"] = "refuse",
) -> EvaluationPlan:
    """The one policy resolution. ``metrics`` = ids (None: every metric the policy configures); each must
    be configured, unless ``unconfigured="inform"`` (calibration measures metrics the policy does not
    gate: each gets an informing entry with no threshold). Arguments override the threat model.

    Args:
        policy: a preset name, a policy file, a ``Policy`` or its mapping (``load_policy``).
        metrics: the ids to run; None: every metric the policy configures.
        key_columns, sensitive_columns, column_kinds, source_index_column, seed: override the policy's.
        unconfigured: ``"refuse"`` an id the policy does not configure, or ``"inform"`` on it.

    Returns:
        The ``EvaluationPlan``. Raises ``PolicyError`` on an unknown or unconfigured id, or no metric.

    Example:
        ``resolve("standard", ["ims", "dcr_percentile"], key_columns=["zip", "age"])``
    """
    p = load_policy(policy)
    if unconfigured == "inform":
        from ..metrics import registry

        specs = registry()
        wanted = list(metrics) if metrics else (list(p.metrics) or list(specs))
        unknown = [m for m in wanted if m not in specs]
        if unknown:
            raise PolicyError(f"unknown metric id(s): {', '.join(unknown)} (see `dagster-privacy metrics`)")
        ids = [m for m in specs if m in set(wanted)]
        entries = {m: p.entry_or_inform(m) for m in ids}
    else:
        ids = p.select(metrics)
        entries = {m: p.metrics[m] for m in ids}
    tm = p.threat_model
    return EvaluationPlan(
        policy=p,
        ids=tuple(ids),
        entries=entries,
        key_columns=list(key_columns) if key_columns is not None else tm.key_columns,
        sensitive_columns=list(sensitive_columns) if sensitive_columns is not None else tm.sensitive_columns,
        column_kinds={**tm.column_kinds, **(column_kinds or {})},
        source_index_column=source_index_column or tm.source_index_column,
        seed=p.seed if seed is None else int(seed),
    )
