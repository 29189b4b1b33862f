"""How tables come in and files go out: one SELECT on a locked, read-only DuckDB connection (sql),
one table from a frame, a file, ``FILE.duckdb:TABLE``, SQL or PostgreSQL (loading, postgres), column
kinds, schema, canonical frames and fingerprints (tables, values), the columns the metrics leave out
(left_out) and surrogate keys (surrogate), release ids (release_ids) and files replaced in one rename
(atomic).

May import the package root's low modules (errors, results, threads, allocator) and nothing else of
the package.
"""
