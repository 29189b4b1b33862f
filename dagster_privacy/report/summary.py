"""The decision first, in plain words: one sentence for the verdict, one row per risk (singling out,
linkability, inference, membership) with the gate that decided it and what its counts mean, the
detection floor and false-alarm level, and what to do next. Shared by the HTML report, the Markdown
summary (Dagster metadata) and the console, so all three say the same."""

from __future__ import annotations

from dataclasses import dataclass

from ..evaluation import Evaluation
from ..results import MetricResult, Status

#: what a gate's two success rates are, per gate: (on training records, on never-seen records)
_PLAIN = {
    "crp": "{t} of synthetic rows are identical to a training record; {c} of never-seen real records are too",
    "ims": "{t} of synthetic rows are identical to a training record; {c} of never-seen real records are too",
    "dcr_percentile": "{t} of synthetic rows lie closer to a training record than never-seen real records "
    "usually do; {c} of never-seen records do",
    "knn_percentile": "{t} of synthetic rows lie unusually close to their training neighbours; {c} of "
    "never-seen records do",
    "membership_inference": "the strongest membership attack flags {t} of training records as members and "
    "{c} of never-seen records",
    "linkability": "the linkage attack links {t} of training records to their other half; {c} of "
    "never-seen records",
    "inference_distance": "the attacker guesses a secret attribute of {t} of training records and of {c} of "
    "never-seen records (worst column)",
    "gtcap": "the attacker infers a secret attribute of {t} of training records and of {c} of never-seen "
    "records (worst column)",
    "singling_out_univariate": "{t} of the attacker's predicates single out a training record; {c} single "
    "out a never-seen record",
    "singling_out_multivariate": "{t} of the attacker's predicates single out a training record; {c} single "
    "out a never-seen record",
}
STATUS_WORDS = {
    "pass": "pass",
    "fail": "fail",
    "inconclusive": "lacking evidence",
    "not assessed": "not assessed",
    "error": "fail (error)",
}


def _pct(x: float) -> str:
    return f"{x:.1%}" if x >= 0.001 or x == 0 else f"{x:.2%}"


def plain_words(r: MetricResult) -> str:
    """A gate's evidence as a sentence: its worst part's success on training and on never-seen records
    (a count of people for exposed_records)."""
    if r.decision and "exposed" in r.decision:
        d = r.decision
        who = counted(d["exposed"], "rare training record")
        return f"{who} exposed; chance explains about {d['chance']:.0f}"
    parts = [p for p in (r.evidence or []) if p.get("n_t") and p.get("n_c")]
    if not parts:
        return r.reason or "no counts: judged on its figure"
    worst = max(parts, key=lambda p: p["k_t"] / p["n_t"] - p["k_c"] / p["n_c"])
    t, c = _pct(worst["k_t"] / worst["n_t"]), _pct(worst["k_c"] / worst["n_c"])
    text = _PLAIN.get(r.id, "the attack succeeds on {t} of training records and on {c} of never-seen records")
    return text.format(t=t, c=c) + f" (of {int(worst['n_t']):,} and {int(worst['n_c']):,})"


@dataclass(frozen=True)
class RiskLine:
    risk: str
    status: str  # pass | fail | lacking evidence | not assessed
    gates: list[MetricResult]
    decisive: MetricResult | None  # the gate that decided (a failing one, else the least safe)


def risk_lines(ev: Evaluation) -> list[RiskLine]:
    by_id = {r.id: r for r in ev.results}
    out = []
    for name, d in ev.risks.items():
        gates = [by_id[g] for g in d.gates if g in by_id]
        failing = [by_id[g] for g in d.failing if g in by_id]
        lacking = [by_id[g] for g in d.lacking if g in by_id]
        upper = lambda r: (r.decision or {}).get("upper") or 0.0  # noqa: E731
        ranked = failing or lacking or sorted(gates, key=upper, reverse=True)
        decisive = ranked[0] if ranked else None
        out.append(RiskLine(name, STATUS_WORDS.get(d.status, d.status), gates, decisive))
    for name in ev.risks_not_assessed:
        if name not in ev.risks:
            out.append(RiskLine(name, "not assessed", [], None))
    return out


def _waived(ev: Evaluation) -> str:
    return "; ".join(f"{risk} ({why})" for risk, why in ev.waivers.items())


def verdict_sentence(ev: Evaluation, release: str) -> str:
    """The verdict in one sentence; every other sentence of the summary follows from the same verdict."""
    if ev.verdict is Status.FAIL or ev.verdict is Status.ERROR:
        why = "; ".join(ev.blocked_by) or "; ".join(ev.findings) or "a gate failed"
        return f"Release {release} is blocked: {why}."
    if ev.waivers:
        return (
            f"Release {release} passed the gates of the risks its policy requires, but the policy waives "
            f"{_waived(ev)}: it is published only after a privacy officer signs off."
        )
    if ev.verdict is Status.WARN:
        return f"Release {release} passed its gates; an advisory figure is over its threshold."
    return f"Release {release} passed: every required risk shows evidence of safety within tolerance."


def next_steps(ev: Evaluation, *, signoff: bool) -> str:
    """What to do next, from the verdict and what blocks it (never from a risk the policy waives)."""
    if ev.verdict in (Status.FAIL, Status.ERROR):
        blocks = ev.blocked_by
        if blocks and all(b.startswith("not assessed") for b in blocks):
            return (
                "Do not publish. Some required risks were not assessed: evaluate again with every gate of "
                "the policy (without a --metrics subset)."
            )
        if blocks and all(": lacking evidence" in b or b.startswith("not assessed") for b in blocks):
            return (
                "Do not publish yet. The evaluation lacks evidence on this table: each reason below ends "
                "in what would decide it — accepting the weaker guarantee the table can show (a policy "
                "field, named with its value) or evaluating more rows."
            )
        return (
            "Do not publish. Reject the release and ask for a new one: fewer training epochs or a "
            "differentially private generator, or remove the synthetic rows that copy training records "
            "(`dagster-privacy remediate`); then evaluate again."
        )
    if ev.waivers:
        return (
            f"The policy waives {', '.join(ev.waivers)}: read why, and the evidence below, then approve or "
            "reject this report in the privacy console (`dagster-privacy console`); your decision is "
            "bound to this report's sha256 and recorded in the audit with the waivers."
        )
    if signoff:
        return (
            "Read the evidence below; then approve or reject this report in the privacy console "
            "(`dagster-privacy console`), which binds your decision to this report's sha256."
        )
    return "Nothing blocks publication; this policy does not ask for a sign-off."


def counted(n: int | float, noun: str, *, verb: bool = True) -> str:
    """'1 rare real record is' / '15 rare real records are' (verb: the verb follows)."""
    one = n == 1
    return f"{n} {noun}{'' if one else 's'}" + ((" is" if one else " are") if verb else "")


def beyond_words(b: dict | None) -> str:
    """The people beyond chance in words, with the bound that matters (issue 57)."""
    import math

    if not b:
        return "no holdout measures chance, so none can be said to be beyond it"
    low, high = math.floor(b["lower"]), math.ceil(b["upper"])
    if low >= 1:
        return f"about {round(b['estimate'])} beyond chance (at least {low}, 95 %)"
    if high == 0:
        return "no more than chance explains"
    return f"no more than chance would explain, at most {high} beyond it (95 %)"


def _not_at_level(d: dict) -> str:
    """A passing count whose union shows people beyond chance at 95 %: why that did not fail it (issue 57:
    "at least 5 beyond chance" beside a pass read as a contradiction)."""
    b = d.get("beyond")
    if not b or b["lower"] < 1:
        return ""
    if any(p.get("p_value") is not None and p["p_value"] <= p["level"] for p in d.get("parts", [])):
        return (
            " over all its parts together; a part is beyond chance at its level, within the policy's "
            "threshold"
        )
    return (
        " over all its parts together, though no part alone is beyond chance at the level the gate tests "
        "it (the strata of many chance exposures add noise; the floors below say what a pass rules out)"
    )


def people_sentence(ev: Evaluation) -> str:
    """What the count of exposed records found and what it could have missed, in people (issue 45)."""
    r = next((r for r in ev.results if r.id == "exposed_records" and r.decision), None)
    if r is None:
        return "No count of exposed real records ran."
    d = r.decision or {}
    parts = {p["part"]: p["exposed"] for p in d.get("parts", [])}
    head = (
        f"{counted(d.get('exposed', 0), 'rare real record')} exposed (verbatim {parts.get('verbatim', 0)}, "
        f"within one cell {parts.get('near_isolated', 0) + parts.get('near', 0)}); chance explains about "
        f"{d.get('chance', 0.0):.0f}"
    )
    if d.get("failing"):  # the gate failed: the people beyond chance where it found them
        from ..decision.exposure_count import failing_words

        head += f" in all, but {failing_words(d['failing'])}."
    else:
        head += f": {beyond_words(d.get('beyond'))}{_not_at_level(d)}."
    floors = d.get("floor_people") or {}

    verbatim, edit = floors.get("verbatim"), floors.get("one_cell_edit")
    caught = (
        f" A release copying {counted(verbatim, 'rare training record', verb=False)} verbatim fails this "
        "gate with 95 % probability"
        if verbatim is not None
        else " No number of verbatim copies is sure to fail this gate on these tables"
    )
    edited = (
        f"; copies with one cell edited need {counted(edit, 'record', verb=False)} for the same"
        if edit is not None
        else "; no number of copies with one cell edited is sure to fail it"
    )
    return (
        head
        + caught
        + edited
        + (
            ". A pass guarantees the verbatim figure only; copies altered in more cells, nudged or kept on "
            "the "
            "key columns are counted by the margin strata, each with its own floor in the JSON "
            "(floor_people), without a guarantee at the policy's accepted floor."
        )
    )


def _verbatim_floor(ev: Evaluation) -> int | None:
    """exposed_records' verbatim floor in people, when the count ran and has one."""
    r = next((r for r in ev.results if r.id == "exposed_records" and r.decision), None)
    floors = ((r.decision or {}).get("floor_people") or {}) if r is not None else {}
    v = floors.get("verbatim")
    return int(v) if isinstance(v, int | float) else None


def floor_sentence(ev: Evaluation) -> str:
    lv, floor = ev.levels, ev.detection_floor.get("verbatim_copy_fraction")
    alarm = lv.get("false_alarm")
    head = (
        f"A release that leaks nothing is blocked with probability at most {alarm} (over "
        f"{lv.get('gates', '?')} gate{'' if lv.get('gates') == 1 else 's'})."
        if alarm is not None
        else ""
    )
    people = _verbatim_floor(ev)
    if people is not None:  # one floor, in people (issue 57): the count's, not a share of rows
        return head + (
            " This evaluation catches a release copying "
            f"{counted(people, 'rare training record', verb=False)} verbatim with 95 % probability; fewer "
            "may pass unseen."
        )
    if floor is None:
        return head + " No exact-match gate gives a detection floor on these tables."
    return (
        head + f" This evaluation catches verbatim copies of {floor:.1%} of the training rows with 95 % "
        "probability; a smaller leak may pass unseen."
    )


__all__ = [
    "RiskLine",
    "beyond_words",
    "floor_sentence",
    "next_steps",
    "people_sentence",
    "plain_words",
    "risk_lines",
    "verdict_sentence",
]
