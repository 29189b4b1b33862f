"""The engine: encoded spaces fitted on the real table (spaces), the exact neighbour engine (neighbors,
exact, pairs, mixed_space, topk, sparse_dims, compiled, chunks, nearest_sets) and where its blocks run
(executors), exposed records found by masked-hash joins (exposure), the report's distance histograms
(distance_summary), and EvaluationContext (context), which computes each shared query once.

May import data/ and the package root's low modules; knows nothing of metrics, policies or Dagster.
"""
