"""The decision: policies, presets and their resolution into an evaluation plan (policy), the one
decision rule per gate and per risk (judge), the exact test of exposed records (exposure_test), the
floor in people (power), and the advisory figures judged against the holdout (advisory).

May import metrics/, engine/, data/ and the package root's low modules; knows nothing of Dagster.
"""
