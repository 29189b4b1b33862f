"""The decision: policies, presets and their resolution into an evaluation plan (policy), the one
decision rule per gate (judge), the rule over a risk's gates and the verdict (verdict), the exact test
of exposed records (exposure_count), the floor in people (power), and the advisory figures judged
against the holdout (advisory).

May import metrics/, engine/, data/ and the package root's low modules; knows nothing of Dagster.
"""
