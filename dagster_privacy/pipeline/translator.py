"""How a privacy result becomes Dagster: every such decision in one overridable class (the model is
dagster-dbt's ``DagsterDbtTranslator``). Subclass it and pass ``translator=`` to ``build_privacy_checks``
to change a check's description, severity, metadata or markdown without touching the check."""

from __future__ import annotations

import math
from typing import Any

import dagster as dg

from ..decision import policy as pol
from ..decision.judge import compared_figure
from ..decision.verdict import RiskDecision
from ..evaluation import Evaluation
from ..report.decision_section import count_test
from ..report.summary import beyond_words, people_sentence
from ..results import MetricResult, Severity, shareable_details
from . import metadata as md

#: the metadata keys of the per-evaluation observation: ``dagster_privacy/<metric id>``
OBSERVATION_PREFIX = "dagster_privacy/"


class PrivacyCheckTranslator:
    """Result → check spec, severity, metadata, markdown. Metadata carries figures, hashes and names,
    never a record's value; ``passed`` is read from the judged result, never re-derived here.

    Takes no argument. Override any method in a subclass and pass an instance as ``translator=`` to
    ``build_privacy_checks``; the checks call it at definition (spec descriptions) and in every run.

    Example:
        .. code-block:: python

            class TerseTranslator(PrivacyCheckTranslator):
                def result_description(self, r: MetricResult) -> str:
                    return f"{r.id}: {r.status}"

            build_privacy_checks(asset="synthetic_table", policy="standard", real="real",
                                 translator=TerseTranslator())
    """

    def severity(self, entry: pol.MetricPolicy) -> dg.AssetCheckSeverity:
        """ERROR metrics gate (blocking checks); WARN metrics inform.

        Args:
            entry: the metric's policy entry.

        Returns:
            The check's severity: ``ERROR`` for an ERROR entry, else ``WARN``.

        Example:
            ``severity(resolve("standard").entry("dcr_percentile"))`` gives ``AssetCheckSeverity.ERROR``.
        """
        return dg.AssetCheckSeverity.ERROR if entry.severity is Severity.ERROR else dg.AssetCheckSeverity.WARN

    def spec_description(self, metric_id: str, summary: str, entry: pol.MetricPolicy) -> str:
        """A metric check spec's description, at definition: what the metric is and how it gates.

        Args:
            metric_id: the metric's registry id.
            summary: the first line of the metric function's docstring (``MetricSpec.summary``); empty:
                the id is used.
            entry: the metric's policy entry.

        Returns:
            ``"<summary> — <severity>, <on> ≤ <threshold>"``, or ``no threshold`` for an entry without one.

        Example:
            ``spec_description("ims", registry()["ims"].summary, resolve("standard").entry("ims"))`` ends
            ``"— WARN, value ≤ 0.02"``.
        """
        gate = "no threshold" if entry.threshold is None else f"{entry.on} ≤ {entry.threshold:g}"
        return f"{summary or metric_id} — {entry.severity.value}, {gate}"

    def result_description(self, r: MetricResult) -> str:
        """A metric check result's description.

        Args:
            r: the judged result.

        Returns:
            ``"<id> passed"``, or ``"<id> <status>"`` followed by its reason when it has one.

        Example:
            ``result_description(ev["dcr_percentile"])`` gives ``"dcr_percentile passed"`` when it passed.
        """
        return f"{r.id} {'passed' if r.passed else r.status}" + (
            f": {r.reason}" if r.reason and not r.passed else ""
        )

    def risk_description(self, risk: str) -> str:
        """A risk check spec's description (``privacy_risk_<risk>``), at definition.

        Args:
            risk: the verdict risk (``singling out``, ``linkability``, ``inference``, ``membership``).

        Returns:
            One sentence: the check blocks, and when it passes and fails.

        Example:
            ``risk_description("membership")`` starts ``"Blocking: the verdict's decision on membership"``.
        """
        return (
            f"Blocking: the verdict's decision on {risk} risk — passes only when every gate of it passes "
            "(evidence of safety at the policy's assurance); fails on evidence of risk or lack of evidence"
        )

    def risk_result_description(self, risk: str, d: RiskDecision) -> str:
        """A risk check result's description: the risk's decision, naming the gates behind it.

        Args:
            risk: the verdict risk.
            d: its decision (``Evaluation.risks``): status, failing gates, gates lacking evidence.

        Returns:
            ``"<risk> risk passed"``, ``failed (<gates>)``, ``lacks evidence (<gates>)`` or
            ``not assessed: …``.

        Example:
            ``risk_result_description("membership", ev.risks["membership"])`` may give
            ``"membership risk lacks evidence (exposed_records)"``.
        """
        what = {
            "fail": f"failed ({', '.join(d.failing)})",
            "pass": "passed",
            "not assessed": "not assessed: the policy requires it and no gate of the evaluation covers it",
        }.get(d.status, f"lacks evidence ({', '.join(d.lacking)})")
        return f"{risk} risk {what}"

    def risk_metadata(
        self, risk: str, d: RiskDecision, ev: Evaluation, *, release: str, fingerprint: str | None
    ) -> dict[str, Any]:
        """One risk check's metadata: its decision, its gates' statuses and bounds, the verdict's levels
        and detection floor.

        Args:
            risk: the verdict risk.
            d: its decision (``Evaluation.risks``).
            ev: the evaluation it was decided in.
            release: the release id.
            fingerprint: the evaluated synthetic table's content fingerprint; None: not recorded.

        Returns:
            Metadata key → value: ``status``, ``gates``, ``failing``, ``lacking_evidence``, ``levels``,
            ``detection_floor``, the verdict, waivers, seed, policy and tables, the release id and a
            markdown ``summary`` with one row per gate.

        Example:
            ``risk_metadata("membership", ev.risks["membership"], ev, release="v2", fingerprint=None)``
        """
        gates = {r.id: r for r in ev.results if r.id in d.gates}
        rows = [
            f"| {g} | {r.status} | {md.fmt(r.decision.get('excess') if r.decision else None)} | "
            f"{md.fmt(r.decision.get('lower') if r.decision else None)} | "
            f"{md.fmt(r.decision.get('upper') if r.decision else None)} | {md.fmt(r.threshold)} |"
            for g, r in gates.items()
        ]
        floor = ev.detection_floor.get("verbatim_copy_fraction")
        text = "\n".join(
            [
                f"**{risk}** on release `{release}`: **{d.status}**",
                "",
                "| gate | status | excess | lower | upper | threshold |",
                "|---|---|---|---|---|---|",
                *rows,
                "",
                f"False-alarm level {ev.levels.get('false_alarm', '—')} over {ev.levels.get('gates', '—')} "
                f"gates; assurance {ev.levels.get('assurance', '—')}; detection floor (verbatim copies "
                f"caught with 95 % probability): {md.fmt(floor)}.",
            ]
        )
        meta: dict[str, Any] = {
            "status": md.text(d.status),
            "gates": md.json({g: (r.status.value if r.status else None) for g, r in gates.items()}),
            "failing": md.json(list(d.failing)),
            "lacking_evidence": md.json(list(d.lacking)),
            "levels": md.json(ev.levels),
            "detection_floor": md.number(floor),
            "floor_people": md.json(ev.detection_floor.get("people")),
            "exposed_records": md.text(people_sentence(ev)),
            "verdict": md.text(ev.verdict.value),
            "blocked_by": md.json(ev.blocked_by),
            "waivers": md.json(ev.waivers),
            "seed": md.text(str(ev.seed)),
            "policy": md.json(dict(ev.policy)),
            "tables": md.json(dict(ev.tables)),  # publication compares the inputs with these
            md.RELEASE_ID: dg.MetadataValue.text(release),
            "summary": dg.MetadataValue.md(text),
        }
        if fingerprint:
            meta[md.FINGERPRINT] = dg.MetadataValue.text(fingerprint)
        return meta

    def markdown(self, r: MetricResult, release: str) -> str:
        """A metric check result's markdown ``summary``: its status, figures and gate, and what the gate
        decided on (people exposed, or the excess over the holdout), figures only.

        Args:
            r: the judged result.
            release: the release id.

        Returns:
            The markdown text.

        Example:
            ``markdown(ev["dcr_percentile"], "v2")`` starts ``"**dcr_percentile** (holdout, …"``.
        """

        def f(x: float | None) -> str:
            return "—" if x is None else f"{x:.4g}"

        ci = "—" if r.ci is None else f"[{r.ci[0]:.4g}, {r.ci[1]:.4g}]"
        gate = "threshold —" if r.threshold is None else f"{compared_figure(r)} against {r.threshold:g}"
        lines = [
            f"**{r.id}** ({r.family}, {r.source}; risk: {r.risk}) on release `{release}`: "
            f"**{'passed' if r.passed else r.status}** ({r.severity.value})",
            "",
            "| value | 95 % CI | baseline | raw | gate |",
            "|---|---|---|---|---|",
            f"| {f(r.value)} | {ci} | {f(r.baseline)} | {f(r.raw)} | {gate} |",
        ]
        if r.decision and "exposed" in r.decision:  # a count of people: exposed, chance, test, floor
            d = r.decision
            floor = (d.get("floor_people") or {}).get("verbatim")
            said = (
                f"floor {floor} people"
                if floor is not None
                else "no number of verbatim copies is sure to fail"
            )
            lines += [
                "",
                f"Decided on people: {d['exposed']} rare real records exposed, chance explains about "
                f"{d['chance']:.0f}: {beyond_words(d.get('beyond'))}; {count_test(d)}; {said} "
                f"({d['trials']} rare training records).",
            ]
        elif r.decision and "excess" in r.decision:
            d = r.decision
            lines += [
                "",
                f"Decided on the excess over the holdout: {f(d['excess'])}, lower bound {f(d['lower'])} "
                f"(level {f(d['fail_level'])}), upper bound {f(d['upper'])} (level {f(d['pass_level'])}), "
                f"{d['parts']} part(s), {d['trials']} trials.",
            ]
        if r.reason:
            lines += ["", f"Reason: {r.reason}"]
        lines += ["", "value ∈ [0, 1]: 0 = private, 1 = no privacy. Figures only — no record values."]
        return "\n".join(lines)

    def metadata(self, r: MetricResult, ev: Evaluation, *, release: str, fingerprint: str) -> dict[str, Any]:
        """Typed metadata of one check result.

        Args:
            r: the judged result.
            ev: the evaluation it belongs to (seed, verdict, waivers, policy, versions, tables).
            release: the release id.
            fingerprint: the evaluated synthetic table's content fingerprint.

        Returns:
            Metadata key → value: the figures, threshold, excess bounds, status, severity, reason, sizes,
            timing, shareable details, the evaluation's context, fingerprint, release id and ``summary``
            (``markdown``).

        Example:
            ``metadata(ev["dcr_percentile"], ev, release="v2", fingerprint=ev.sha256())["value"]``
        """
        return {
            "value": md.number(r.value),
            "raw": md.number(r.raw),
            "baseline": md.number(r.baseline),
            "ci_low": md.number(r.ci[0] if r.ci else None),
            "ci_high": md.number(r.ci[1] if r.ci else None),
            "threshold": md.number(r.threshold),
            "compared_with_threshold": md.text(compared_figure(r)),
            # every decision shape: a gate not run at this size has no excess (issue 54)
            "excess": md.number((r.decision or {}).get("excess")),
            "excess_lower": md.number((r.decision or {}).get("lower")),
            "excess_upper": md.number((r.decision or {}).get("upper")),
            "threshold_on": md.text(r.on),
            "status": md.text(r.status),
            "severity": md.text(r.severity.value),
            "reason": md.text(r.reason),
            "sizes": md.json(r.sizes),
            "timing": md.json({"seconds": r.seconds}),  # not a plotted number: it charts the machine
            "details": md.json(shareable_details(r.details)),
            "seed": md.text(str(ev.seed)),
            "verdict": md.text(ev.verdict.value),
            "exposed_records": md.text(people_sentence(ev)),  # counts only: the console reads it
            "waivers": md.json(ev.waivers),
            "policy": md.json(dict(ev.policy)),
            "versions": md.json(ev.versions),
            "tables": md.json(dict(ev.tables)),
            md.FINGERPRINT: dg.MetadataValue.text(fingerprint),
            md.RELEASE_ID: dg.MetadataValue.text(release),
            "summary": dg.MetadataValue.md(self.markdown(r, release)),
        }

    def observation(self, ev: Evaluation, key: dg.AssetKey, *, release: str) -> dg.AssetObservation:
        """One observation of the synthetic asset per evaluation: every metric's value as a number under
        ``dagster_privacy/<id>`` (the asset's plots and Dagster+ Insights chart them across releases),
        and the count of blocking results; a metric without a finite value is left out, not 0.

        Args:
            ev: the evaluation.
            key: the synthetic asset's key.
            release: the release id, recorded beside the values.

        Returns:
            The ``AssetObservation`` of ``key``.

        Example:
            ``observation(ev, dg.AssetKey("synthetic_table"), release="v2")``
        """
        meta: dict[str, Any] = {
            f"{OBSERVATION_PREFIX}{r.id}": dg.MetadataValue.float(float(r.value))
            for r in ev.results
            if r.value is not None and math.isfinite(r.value)
        }
        meta[f"{OBSERVATION_PREFIX}blocking"] = dg.MetadataValue.int(len(ev.blocking))
        meta[md.RELEASE_ID] = dg.MetadataValue.text(release)
        return dg.AssetObservation(asset_key=key, metadata=meta)

    def failure_metadata(
        self, reason: str, *, release: str | None, fingerprint: str | None
    ) -> dict[str, Any]:
        """Metadata of a check that failed closed (the evaluation raised): the reason, no figures.

        Args:
            reason: why it failed, one line (``safe_reason``).
            release: the release id; None: not known yet, not recorded.
            fingerprint: the synthetic table's content fingerprint; None: not known yet, not recorded.

        Returns:
            Metadata key → value: ``status`` (``error``), ``reason``, a markdown ``summary``, and the
            release id and fingerprint when known.

        Example:
            ``failure_metadata("TableError (the input is malformed)", release="v2", fingerprint=None)``
        """
        meta: dict[str, Any] = {
            "status": md.text("error"),
            "reason": md.text(reason),
            "summary": dg.MetadataValue.md(
                f"**The privacy evaluation failed**, so this check has not passed "
                f"(fail closed).\n\nReason: {reason}"
            ),
        }
        if release:
            meta[md.RELEASE_ID] = dg.MetadataValue.text(release)
        if fingerprint:
            meta[md.FINGERPRINT] = dg.MetadataValue.text(fingerprint)
        return meta


DEFAULT_TRANSLATOR = PrivacyCheckTranslator()
