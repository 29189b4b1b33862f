"""Who decided, and the record of it: the privacy officer's sign-off check and its records (signoff),
the hash-chained audit table (audit), and re-judging a published release under the current policy
and withdrawing it (rejudge).

May import publication/, the pipeline's checks and low modules, and everything below the pipeline;
not the assembly (publish, release, component, location, demo).
"""
