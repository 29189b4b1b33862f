"""The Python blocks of docs/pipeline.md run as written (issue 34: the factory snippet lacked the
`privacy_release` resource and raised DagsterInvalidDefinitionError), and what they define loads."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg

DOC = Path(__file__).parents[2] / "docs" / "pipeline.md"


def test_the_library_api_block_defines_a_loadable_code_location(tmp_path, monkeypatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/pipeline.md has no python block"
    monkeypatch.chdir(tmp_path)  # the snippet names relative files; nothing is read at definition time
    scope: dict = {}
    exec(compile(blocks[0], str(DOC), "exec"), scope)  # noqa: S102 - our own documentation
    defs = scope["defs"]
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert {"monthly_synthetic_table", "monthly_published_release", "my_synthetic", "synthetic_rows",
            "published_rows"} <= keys  # fmt: skip
    checks = {
        k.name for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key.path == ["my_synthetic"]
    }
    assert "privacy_risk_membership" in checks
