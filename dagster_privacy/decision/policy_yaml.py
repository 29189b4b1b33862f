"""Reading a policy's YAML as it looks: YAML 1.2 booleans, the line an error points at, and no key given
twice nor anchors (decision/policy.py validates what this reads)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..errors import OwnMessage


class PolicyError(OwnMessage, ValueError):
    """A policy that cannot be used; the message is one line, with the file's line number when known.

    Args:
        message: what is wrong, one line, naming no record's value (an ``OwnMessage``).

    Example:
        ``raise PolicyError(f"{path}: a policy is a YAML mapping")``
    """


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false. YAML 1.1 also reads on/off/yes/no as booleans, which would
    turn the policy key ``on: ci_upper`` into ``True: ci_upper``."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_yaml(text: str) -> Any:
    """Parse policy YAML (YAML 1.2 booleans)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def compose(text: str) -> yaml.Node | None:
    """The YAML node tree of a policy (for line numbers and ``plain``)."""
    return yaml.compose(text, Loader=_Loader)


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node a pydantic error location points at."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            nxt = None
        if nxt is None:
            break
        node = nxt
        line = node.start_mark.line + 1
    return line


def plain(node: yaml.Node | None, where: str, seen: set[int] | None = None) -> None:
    """Refuse what makes a policy read otherwise than it looks: a key given twice in one mapping (the
    last would silently win) and anchors/aliases (a reviewer sees one entry, the loader another; and
    nested aliases grow exponentially)."""
    seen = set() if seen is None else seen
    if node is None:
        return
    if id(node) in seen or getattr(node, "anchor", None):
        raise PolicyError(
            f"{where}, line {node.start_mark.line + 1}: anchors and aliases are not allowed in a "
            "policy; write each entry out"
        )
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for k, v in node.value:
            if k.value in keys:
                raise PolicyError(f"{where}, line {k.start_mark.line + 1}: key {k.value!r} is given twice")
            keys.add(k.value)
            plain(v, where, seen)
    elif isinstance(node, yaml.SequenceNode):
        for v in node.value:
            plain(v, where, seen)
