"""The report's threat model names the columns the metrics used (issue 57): those the policy named, or
the defaults of docs/metrics.md ("Threat model defaults") where it named none."""

from __future__ import annotations

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.report.html import render_report


def _threat(html: str) -> str:
    return html.split('id="threat-model"', 1)[1].split("<dt>policy</dt>", 1)[0]


def test_the_threat_model_shows_named_and_defaulted_columns() -> None:
    sp = leaky_split(load_demo().head(600), 0.0, seed=2)
    ev = dp.evaluate(sp.train, sp.synthetic, holdout=sp.control, metrics=["exposed_records"], progress=False)
    # Adult's default sensitive column: the categorical one with the fewest distinct values (income, 2)
    assert ev.threat_model["defaults"]["sensitive_columns"] == ["income"]
    keys = ev.threat_model["defaults"]["key_columns"]
    assert set(keys) == set(sp.train.columns) - {"income"}
    part = _threat(render_report(ev))
    assert "<code>income</code> (none named: the default" in part and "— (none named)" not in part
    named = dp.evaluate(sp.train, sp.synthetic, holdout=sp.control, metrics=["exposed_records"],
                        key_columns=["age", "sex"], progress=False)  # fmt: skip
    assert named.threat_model["defaults"] == {"sensitive_columns": ["income"]}
    part = _threat(render_report(named))
    assert "<code>age</code>, <code>sex</code> (named)" in part
