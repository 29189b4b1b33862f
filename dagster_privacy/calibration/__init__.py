"""Risk models of seed 004 §5: insert a known amount of risk and see which metrics respond.

- **Leaky risk model** (§5.1.1, :func:`calibrate`): the real table is cut into training (50 %), control
  (25 %) and release (25 %); the "synthetic" table is the release plus a fraction f of the training rows
  copied verbatim. Every metric of the policy is evaluated with the training part as the real table and
  the control part as the holdout, for each f and each seeded repeat.
- **Noisy-copy risk model** (issue 20, ``calibrate(risk_model="noisy")``): the leaky model with
  near-duplicates instead of copies (:func:`noisy_split`: every numerical cell of a leaked row moved by
  N(0, noise · sd), never a verbatim training row), the risk exact-match metrics do not see.
- **Overfit risk model** (issue 20, ``calibrate(risk_model="overfit")``): :func:`knn_sampler`, a
  k-nearest-neighbour resampler trained on the training part, swept from wide neighbourhoods to copies.
- **Overfitting and DP risk models** (§5.1.2–5.1.3, :func:`sweep_generator`): the user's generator
  (training table, parameter → synthetic table) is trained on the training part for each value of its
  parameter (epochs, privacy budget, leaf size …), with the same outputs.
- **Outlier sensitivity** (§5.2.1, ``outliers=``): the leaky model is repeated after removing x % of the
  rows with the highest local outlier factor on the one-hot + min-max encoding; the change is reported.

The outcome (:class:`Calibration`) is a seed-004-Table-2-style response table per metric (value at no
risk and at max risk, stdev, monotone, responds), the correlation matrix between metrics (seed 004
Appendix A), flags on metrics that do not respond, and calibrated thresholds: per metric the figure a
leak of the chosen level (default 5 %) exceeds with high probability on this data, written as a policy
file ``load_policy`` reads. Outputs carry figures only, never a value of a record.

Efficiency: for one seed the training, control and release parts are the same for every f, and every
synthetic table is a selection of rows of release + training. So each repeat encodes one *pool*
(release + all training rows) once and every fraction's context borrows from it: the encodings, row
hashes and codes of its rows, every query that does not involve the synthetic table (real→real,
holdout→real …) and every query *from* synthetic rows (a query row's neighbours do not depend on the
other query rows, so they are rows of the pool's answer). Only queries *into* the synthetic table are
recomputed per f. Results equal a plain ``evaluate()`` of the same split
(tests/calibration/test_calibration.py).
"""

from ..errors import CalibrationError
from .analysis import OutlierShift, Response, Threshold, correlation, level_label, responses, thresholds
from .outcome import FORMAT, Calibration
from .risk_models import Generator, LeakySplit, knn_sampler, leaky_split, noisy_split, per_column_sampler
from .run import (
    DEFAULT_FRACTIONS,
    DEFAULT_LEAK_LEVEL,
    DEFAULT_NEIGHBOURS,
    RISK_MODELS,
    calibrate,
    outlier_scores,
    sweep_generator,
)
from .sweep import Sweep

__all__ = [
    "DEFAULT_FRACTIONS",
    "DEFAULT_LEAK_LEVEL",
    "DEFAULT_NEIGHBOURS",
    "RISK_MODELS",
    "FORMAT",
    "Calibration",
    "CalibrationError",
    "Generator",
    "LeakySplit",
    "OutlierShift",
    "Response",
    "Sweep",
    "Threshold",
    "calibrate",
    "correlation",
    "leaky_split",
    "level_label",
    "outlier_scores",
    "per_column_sampler",
    "noisy_split",
    "knn_sampler",
    "responses",
    "sweep_generator",
    "thresholds",
]
