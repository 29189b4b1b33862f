"""Where a release is published: the publication target, a DuckDB file, a directory or a PostgreSQL
database, written under a lock with its publication log (target picks one ``store.Store`` per kind:
duckdb_target, parquet_target, directory_target, pg_target; a new kind is one module), and the
guard that refuses a target that is an input, however its path or URI is spelled, wherever an IO
manager stored the input (input_guard, asset_locations). The gated ``published_release`` asset that
writes through them is ``pipeline/publish.py``.

May import the pipeline's low modules (metadata, resources, records) and everything below the
pipeline; not the checks, governance or the assembly.
"""
