"""``python -m dagster_privacy.cli``: the same as the ``dagster-privacy`` command."""

from . import main

main()
