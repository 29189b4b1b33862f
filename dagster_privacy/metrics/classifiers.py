"""Classifier metrics of seed 000 §2.2.3 and §2.2.11: can a model tell real rows from synthetic ones?

Both train on the real rows (label 1) and the synthetic rows (label 0) in the one-hot + min-max space
fitted on the real table, with seeds drawn from the context (results do not depend on metric order).
Neither can see a release that copies the real table: identical rows cannot be told apart, so both
score 0 (private) at synthetic = real — read them next to crp, dcr or identifiability (docs/metrics.md).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..engine.context import EvaluationContext
from ..errors import MetricError
from ..results import Measurement, Risk
from .registration import Expect, metric

_BATCH = 256  # MLP mini-batch size
_GATHER = 1 << 16  # labelled rows gathered at once


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


@dataclass(frozen=True)
class _Labelled:
    """D of seed 000 §2.2.3 / §2.2.11: real rows labelled 1, synthetic rows labelled 0, in a canonical order.

    Features are the one-hot + min-max dimensions ordered by column name, rows ordered by label and a
    hash of their values over the columns sorted by name: the data a model sees, and so its seeded
    fit, do not depend on the order of the input rows or columns (identical rows are interchangeable).
    D is never held whole: ``rows(idx)`` gathers the rows a fit or a prediction reads from the context's
    encodings (a model's training rows were a copy of D's anyway).
    """

    sides: tuple[np.ndarray, np.ndarray]  # the real and synthetic encodings
    order: np.ndarray  # labelled row i is row order[i] of real ∪ synthetic
    dims: np.ndarray
    y: np.ndarray

    @classmethod
    def of(cls, ctx: EvaluationContext) -> _Labelled:
        names = sorted(ctx.schema.names)
        labels = ctx.encoder.euclidean_labels()
        dims = np.array(sorted(range(len(labels)), key=lambda d: (labels[d], d)), dtype=np.int64)
        y = np.concatenate(
            [np.ones(ctx.n("real"), dtype=np.int8), np.zeros(ctx.n("synthetic"), dtype=np.int8)]
        )
        h = np.concatenate(
            [ctx.table(role).select(names).hash_rows(seed=0).to_numpy() for role in ("real", "synthetic")]
        )
        order = np.lexsort((h, y))
        return cls((ctx.euclidean("real"), ctx.euclidean("synthetic")), order, dims, y[order])

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Labelled rows ``idx`` (float32, C order), a block of _GATHER rows at a time."""
        src = self.order[idx]
        real, syn = self.sides
        out = np.empty((src.size, self.dims.size), dtype=real.dtype)
        for a in range(0, src.size, _GATHER):
            s, block = src[a : a + _GATHER], out[a : a + _GATHER]
            from_real = s < real.shape[0]
            block[from_real] = real[np.ix_(s[from_real], self.dims)]
            block[~from_real] = syn[np.ix_(s[~from_real] - real.shape[0], self.dims)]
        return out


def _seed(ctx: EvaluationContext, name: str) -> int:
    return int(ctx.rng(name).integers(0, 2**31 - 1))


@metric(
    "detection_mlp",
    family="classifiers",
    source="seed 000 §2.2.3",
    risk=Risk.DISTINGUISHABILITY,
    # information in `standard` (no threshold): blind to copies, and over 0.5 on 12 of 18 DP generators'
    # releases, where it reads fidelity, not exposure (docs/metrics.md); `strict` gates at 0.3
    default={"threshold": None, "severity": "WARN"},
    expect=Expect(copy_min=0.0, copy_max=0.05, indep_max=0.9),
)
def detection_mlp(
    ctx: EvaluationContext, *, folds: int = 3, hidden: int = 32, epochs: int = 10, min_steps: int = 400
) -> Measurement:
    """DetectionMLP: mean k-fold ROC AUC of a one-hidden-layer MLP telling real rows from synthetic rows.

    Seed 000 §2.2.3: raw = the mean AUC over ``folds`` stratified folds (0.5 = indistinguishable).
    value = clip(2·AUC − 1, 0, 1) (the Gini coefficient): 0 at chance, 1 when every real row outranks
    every synthetic row; an AUC below 0.5 is chance too. scikit-learn MLPClassifier, ``hidden`` ReLU
    units, Adam, batch 256, seeded, ``epochs`` passes over the training rows or more, so that at least
    ``min_steps`` mini-batch steps are taken (a small table is not left underfit); the fold split is
    stratified and seeded.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neural_network import MLPClassifier

    data = _Labelled.of(ctx)
    y = data.y
    if min(ctx.n("real"), ctx.n("synthetic")) < folds:
        raise MetricError(f"D-MLP needs at least {folds} real and {folds} synthetic rows")
    seed = _seed(ctx, "detection_mlp")
    n_train = y.size - y.size // folds
    passes = max(epochs, math.ceil(min_steps * _BATCH / max(1, n_train)))
    aucs = []
    # the folds depend on y only (X is a placeholder, as scikit-learn documents)
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(
        np.zeros(y.size), y
    ):
        model = MLPClassifier(
            hidden_layer_sizes=(hidden,),
            batch_size=min(_BATCH, train.size),
            max_iter=passes,
            learning_rate_init=1e-3,
            random_state=seed,
        )
        with warnings.catch_warnings():  # a fixed number of epochs is the setting, not a failure
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(data.rows(train), y[train])
        aucs.append(float(roc_auc_score(y[test], model.predict_proba(data.rows(test))[:, 1])))
    auc = float(np.mean(aucs))
    return Measurement(
        value=_clip(2.0 * auc - 1.0),
        raw=auc,
        details={"fold_auc": aucs, "gini": 2.0 * auc - 1.0, "epochs": passes},
    )


@metric(
    "mir",
    family="classifiers",
    source="seed 000 §2.2.11",
    risk=Risk.MEMBERSHIP,
    # information in `standard`, as detection_mlp: blind to copies, 1.0 on most DP generators' releases
    default={"threshold": None, "severity": "WARN"},
    expect=Expect(copy_min=0.0, copy_max=0.05, indep_max=0.9),
)
def mir(
    ctx: EvaluationContext, *, test_share: float = 0.3, n_estimators: int = 100, threads: int = 1
) -> Measurement:
    """Membership Inference Risk: recall of a LightGBM real-vs-synthetic classifier on held-out real rows.

    Seed 000 §2.2.11: D = real (1) ∪ synthetic (0), a seeded stratified split (``test_share`` held out),
    LightGBM trained on the rest; raw = recall = held-out real rows labelled real / held-out real rows.
    Recall alone rewards a model that calls every row real, so value = clip(recall − FPR, 0, 1)
    (Youden's J; FPR = held-out synthetic rows labelled real): 0 at chance, 1 at perfect separation.
    LightGBM: ``n_estimators`` trees, 31 leaves, learning rate 0.1, balanced class weights, seeded,
    deterministic, verbose −1, ``threads`` OpenMP threads (1 by default: on a shared 2-core machine two
    busy-waiting OpenMP threads measured 8–15× slower than one; docs/metrics.md).
    """
    import lightgbm as lgb
    from sklearn.model_selection import train_test_split

    data = _Labelled.of(ctx)
    seed = _seed(ctx, "mir")
    # the split of row positions is the split of the rows themselves (train_test_split indexes each array)
    i_tr, i_te, y_tr, y_te = train_test_split(
        np.arange(data.y.size), data.y, test_size=test_share, stratify=data.y, random_state=seed
    )
    x_tr, x_te = data.rows(i_tr), data.rows(i_te)
    model = lgb.LGBMClassifier(
        n_estimators=n_estimators,
        num_leaves=31,
        learning_rate=0.1,
        class_weight="balanced",
        random_state=seed,
        n_jobs=threads,
        verbose=-1,
        deterministic=True,
        force_row_wise=True,
    )
    model.fit(x_tr, y_tr)
    pred = model.predict(x_te)
    real, syn = y_te == 1, y_te == 0
    recall = float((pred[real] == 1).mean())
    fpr = float((pred[syn] == 1).mean())
    return Measurement(
        value=_clip(recall - fpr),
        raw=recall,
        sizes={"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "queries": int(y_te.size)},
        details={
            "recall": recall,
            "false_positive_rate": fpr,
            "youden_j": recall - fpr,
            "held_out_real": int(real.sum()),
            "held_out_synthetic": int(syn.sum()),
        },
    )
