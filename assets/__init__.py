"""The reference code location's assets: real_table, holdout_table, synthetic_table, published_release."""
