"""exposed_records: the real people a release reproduces, counted against chance (issue 45).

Rare training records reproduced verbatim or within one cell (engine/exposure.py), against the rare holdout
records the release reproduces by the same rule (chance); policy.judge decides with the exact
conditional binomial test of decision/exposure_count.py, part by part.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ..data import tables as tb
from ..engine import exposure as ex
from ..engine import exposure_cells as cells
from ..engine.context import EvaluationContext, Space
from ..errors import NotApplicable
from ..results import Measurement, Risk
from .registration import Expect, metric

#: how many exposed training records the JSON lists (row numbers and mechanism, never values)
LIST_CAP = 1000
#: each part's share of the gate's level (weighted Bonferroni; the parts overlap, the union bound does
#: not care): every verbatim copy is the harm the gate exists for; the isolated strata catch copies of
#: the rarest records, where chance explains almost none
#: issue 55: the margin strata (copies altered in a few cells, nudged, or kept on the key columns) take
#: 0.525 of it, where chance is thin; verbatim keeps the largest share of the rest (its floor where
#: chance is zero: 14 records). cells_1 counts a copy with one cell altered wherever its record is two
#: cells clear of anyone else, weighing its far band (cells_1_far: three cells clear, tested within
#: cells_1, no share of its own) three times; cells_1_wide, one cell clear, sees nudges on narrow tables
#: of exact numbers (ISLR Default: 0 of 20 caught without it); sole_1 and sole_2 see copies from the
#: release's side (a row k cells from one record, k + 2 from every other): two-cell edits that stay
#: nearer to their person than to anyone else, which no record-side stratum saw on Adult (0 of 20 at 100
#: copies), sit there with chance about 15 records (docs/metrics.md, "Exposed records")
WEIGHTS = {"verbatim": 0.3, "verbatim_isolated": 0.1, "near_isolated": 0.025, "near": 0.025,
           "nearer": 0.025, "cells_1": 0.15, "cells_2": 0.025, "tenth": 0.025, "hundredth": 0.05,
           "keys": 0.05, "cells_1_far": 0.0, "cells_1_wide": 0.05, "sole_1": 0.1,
           "sole_2": 0.075}  # fmt: skip
#: the euclidean space's queries the nearer and tenth parts read, shared with the distance gates (the
#: cells strata use masked hashes: engine/exposure_cells.py)
SPACE: Space = "euclidean"
PAIRS = (("real", "real"), ("holdout", "real"), ("real", "holdout"), ("holdout", "holdout"),
         ("real", "synthetic"), ("holdout", "synthetic"))  # fmt: skip
QUERIES = tuple((SPACE, q, r, 1) for q, r in PAIRS)


@metric(
    "exposed_records",
    family="exposure",
    source="issue 45 (Meeus et al. 2023, arXiv 2306.10308: rare records first)",
    risk=Risk.MEMBERSHIP,
    needs=("real", "synthetic", "holdout"),
    queries=QUERIES,
    # threshold: the exposed share beyond chance tolerated (0: a count beyond chance fails); a pass
    # also needs the floor in people within the policy's accepted_floor_people
    # weight 2: the level crp and ims held as gates (they inform now), so every other gate keeps its own
    default={"threshold": 0.0, "severity": "ERROR", "weight": 2.0},
    expect=Expect(copy_min=0.999, indep_max=0.02),
)
def exposed_records(
    ctx: EvaluationContext, *, tolerance: float = 0.25, edit_samples: int = 400
) -> Measurement:
    """Rare real records reproduced by the release, per person, beside what chance explains.

    Parts (docs/metrics.md, "Exposed records"): verbatim (a synthetic row equal to a training record no
    other training record equals) and near (within one cell, numerical cells on a grid of ``tolerance``
    real standard deviations, of a training record no other training record lies within one cell of).
    The same counts on the holdout side are chance. value = the training records exposed beyond chance
    (k_t − k_c · n_t / n_c, summed over parts) over the rare training records, in [0, 1]; raw = the
    exposed training records (people); baseline = what chance explains (people). flagged = the
    synthetic rows that expose a rare training record (remediation drops them).
    """
    roles = ("real", "holdout", "synthetic")
    frames = {r: ex.loose(ctx.table(r), ctx.schema) for r in roles}
    parts, grids, masked, iso_t = _parts(ctx, frames, tolerance)
    verbatim = parts["verbatim"]
    if not verbatim.rare_train.any():
        raise NotApplicable(
            "nothing to attack: every training record has a twin, so no copy exposes one person",
            sizes={r: ctx.n(r) for r in roles},
            status="nothing_to_attack",
        )
    registered = ex.edit_registration(
        grids["real"], masked["real"], iso_t, verbatim.rare_train, ctx.rng("exposed_records"),
        samples=edit_samples,
    )  # fmt: skip
    evidence = tuple(
        {
            **p.counts(),
            "part": ex.PARTS.index(name),
            "weight": WEIGHTS[name],
            "registered": registered if name == "near_isolated" else 1.0,  # edits: the isolated part's
        }
        for name, p in parts.items()
        if p.rare_train.any()  # an empty stratum (no isolated record) tests nothing
    )
    counted = [p for name, p in parts.items() if name != "nearer"]  # nearer: a membership signal only
    people = (
        np.logical_or.reduce([p.exposed_train for p in counted]),
        np.logical_or.reduce([p.exposed_holdout for p in counted]),
    )
    exposed = int(people[0].sum())
    rare_h = int(verbatim.rare_holdout.sum())
    chance = int(people[1].sum()) * int(verbatim.rare_train.sum()) / rare_h if rare_h else 0.0
    rare = int(verbatim.rare_train.sum())
    exposing = np.logical_or.reduce([p.exposing for p in counted])
    return Measurement(
        value=min(1.0, max(0.0, (exposed - chance) / rare)) if rare else 0.0,
        raw=float(exposed),
        baseline=float(chance),
        evidence=evidence,
        flagged=np.flatnonzero(exposing),
        records=ex.Exposed(parts, frames["real"], frames["holdout"], _order(ctx)),
        sizes=ctx.sizes_with(int(ctx.n("real") + ctx.n("holdout"))),
        details={
            "tolerance_sd": tolerance,
            "exposed": {name: int(p.exposed_train.sum()) for name, p in parts.items()},
            "exposed_holdout": {name: int(p.exposed_holdout.sum()) for name, p in parts.items()},
            "rare": {name: int(p.rare_train.sum()) for name, p in parts.items()},
            "rare_holdout": {name: int(p.rare_holdout.sum()) for name, p in parts.items()},
            "chance": chance,
            "edit_registration": registered,
            "exposing_synthetic_rows": int(exposing.sum()),
            "exposed_records": _listed(ctx, parts),
        },
    )


def _parts(
    ctx: EvaluationContext, frames: dict[str, pl.DataFrame], tolerance: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], np.ndarray]:
    """Every part of the count (docs/metrics.md), with what edits are registered on: the grids, their
    masked hashes and the isolated training records."""
    roles = tuple(frames)
    # the context's row hashes where folding changed nothing (computed once per evaluation)
    hashes = {r: ctx.row_hashes(r) if frames[r] is ctx.table(r) else tb.row_hashes(frames[r]) for r in roles}
    verbatim = ex.verbatim(hashes["real"], hashes["holdout"], hashes["synthetic"])
    widths = ex.grid_widths(frames["real"], ctx.schema, tolerance)
    grids = {r: ex.grid(frames[r], ctx.schema, widths) for r in roles}
    iso_t, iso_h = ex.isolated(grids["real"], grids["holdout"])
    masked = {r: ex.masked_hashes(g) for r, g in grids.items()}
    hits = ex.within_one(masked["real"], masked["holdout"], masked["synthetic"])
    near = ex.near_part((iso_t, iso_h), hits, verbatim, masked["real"], masked["synthetic"])
    one_t, one_h = ex.rare_within(masked["real"], masked["holdout"])
    rare_one = (one_t & ~iso_t, one_h & ~iso_h)  # rare at radius one, not isolated
    other = ex.near_part(rare_one, hits, verbatim, masked["real"], masked["synthetic"])
    own, syn, nearest = _distances(ctx, SPACE)  # the shared queries
    closer = ex.nearer(*own, *syn, ctx.n("synthetic"))  # each record's own nearest other record: ex.nearer
    parts = {
        "verbatim": verbatim,
        "verbatim_isolated": ex.restricted(verbatim, iso_t, iso_h, hashes["synthetic"], hashes["real"]),
        "near_isolated": near,
        "near": other,
        "nearer": closer,
        **cells.cells_strata(frames["real"], frames["holdout"], frames["synthetic"]),
        "tenth": ex.margin_part(own, syn, nearest, ctx.n("synthetic"), ratio=ex.TENTH),
        "hundredth": ex.margin_part(own, syn, nearest, ctx.n("synthetic"), ratio=ex.HUNDREDTH),
        **_key_part(ctx, frames),
    }
    return parts, grids, masked, iso_t


def _distances(
    ctx: EvaluationContext, space: Space
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], np.ndarray]:
    """(each record's distance to its nearest other record of both tables pooled, leave one out;
    its distance to the nearest synthetic row; each training record's nearest synthetic row)."""
    d = {(q, r): ctx.neighbors(space, q, r, 1).dist[:, 0] for q, r in PAIRS}
    own = (np.minimum(d["real", "real"], d["real", "holdout"]),
           np.minimum(d["holdout", "real"], d["holdout", "holdout"]))  # fmt: skip
    nearest = ctx.neighbors(space, "real", "synthetic", 1).idx[:, 0]
    return own, (d["real", "synthetic"], d["holdout", "synthetic"]), nearest


def _key_part(ctx: EvaluationContext, frames: dict) -> dict[str, ex.Part]:
    """Partial copies (issue 55, WP29 singling out): a synthetic row equal to a record on the threat
    model's key columns where that combination is unique among the real records of both tables pooled
    (named or defaulted: simulation.threat_columns). Counted on both sides by the verbatim rule."""
    from .simulation import threat_columns

    keys = [c for c in threat_columns(ctx)[0] if c in frames["real"].columns]
    if not keys or len(keys) == frames["real"].width:  # all columns: the verbatim part already
        return {}
    h = {r: frames[r].select(keys).hash_rows(seed=0).to_numpy() for r in ("real", "holdout", "synthetic")}
    return {"keys": ex.verbatim(h["real"], h["holdout"], h["synthetic"])}


#: how each counted part exposes a record, as the JSON lists it (a record may be listed by several)
MECHANISMS = {
    "verbatim": "verbatim",
    "near_isolated": "within one cell",
    "near": "within one cell",
    **{f"cells_{k}": f"within {k} cell{'s' * (k > 1)}, nearer than any other record" for k in ex.CELL_STRATA},
    "cells_1_wide": "within 1 cell, no other record within 1 cell of it",
    **{
        f"sole_{k}": f"a synthetic row {k} cell{'s' * (k > 1)} from it, {k + 2} or more from any other record"
        for k in ex.CELL_STRATA
    },
    "tenth": "within a tenth of its distance to any other record",
    "hundredth": "within a hundredth of its distance to any other record",
    "keys": "equal on the key columns, a combination unique among real records",
}


def _order(ctx: EvaluationContext) -> np.ndarray | None:
    """Each training record's row number in the real input as given (None: the context's order)."""
    return getattr(ctx, "input_rows", {}).get("real")


def _listed(ctx: EvaluationContext, parts: dict[str, ex.Part]) -> dict[str, object]:
    """The exposed training records by their row number in the real input as given (0-based, the
    header not counted), with the mechanism; capped at LIST_CAP. Never a value."""
    order = _order(ctx)
    rows: list[dict[str, object]] = []
    for name, mechanism in MECHANISMS.items():  # verbatim_isolated is a stratum of verbatim
        if name not in parts:
            continue
        at = np.flatnonzero(parts[name].exposed_train)
        rows += [{"row": int(order[i] if order is not None else i), "mechanism": mechanism} for i in at]
    rows.sort(key=lambda r: (r["row"], r["mechanism"]))
    return {
        "rows": rows[:LIST_CAP],
        "total": len(rows),
        "capped": len(rows) > LIST_CAP,
        "row_numbers": "0-based position in the real table as given (header not counted)",
    }
