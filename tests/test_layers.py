"""The package's rooms and their order (issue 47): every import of every module — lazy ones inside
functions, package ``__init__`` edges and ``importlib.import_module`` names included — points down the
layers or within its own. A module no layer names fails too, so a new module is placed on purpose."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "dagster_privacy"

#: lowest first; a module's rank is that of the longest prefix naming it
LAYERS: list[tuple[str, ...]] = [
    # the root's low modules: every layer uses them
    ("errors", "results", "threads", "allocator"),
    # how tables come in, files go out, releases are named
    ("data",),
    # encoded spaces, the exact neighbour engine, the evaluation context
    ("engine",),
    # the registry and the metric families
    ("metrics",),
    # policies, the decision rule, the floor in people, advisories
    ("decision",),
    # the root's entry points
    ("evaluate", "remediate"),
    # what is built on one evaluation: calibration, the report; the shipped demo data
    ("calibration", "report", "demo"),
    # the Dagster side, by concern: low modules, publication targets, the checks, governance, assembly
    ("pipeline.metadata", "pipeline.resources", "pipeline.hook", "pipeline.settings", "pipeline.records"),
    ("pipeline.publication",),
    (
        "pipeline.assets",
        "pipeline.translator",
        "pipeline.evidence",
        "pipeline.checks",
        "pipeline.schema_gate",
        "pipeline.automation",
        "pipeline.calibration_job",
    ),  # fmt: skip
    ("pipeline.governance",),
    (
        "pipeline",
        "pipeline.publish",
        "pipeline.release",
        "pipeline.component",
        "pipeline.location",
        "pipeline.demo",
    ),  # fmt: skip
    ("console",),
    ("cli",),
    ("",),  # the package's __init__: the public API
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def rank(module: str) -> int:
    name = module.removeprefix("dagster_privacy").removeprefix(".")
    best, best_len = None, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            hit = name == prefix or name.startswith(prefix + ".") or prefix == "" and name == ""
            if hit and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    assert best is not None, f"{module} is in no layer of tests/test_layers.py"
    return best


def _target(source: str, name: str | None) -> str:
    """The module an import reaches: ``from pkg import module`` reaches the module."""
    if name and f"{source}.{name}" in MODULES:
        return f"{source}.{name}"
    return source


def imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported module of this package, line) for every import in the file."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "dagster_privacy":
                source = node.module
            else:
                continue
            found += [(_target(source, a.name), node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "dagster_privacy"]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
              and node.args):  # fmt: skip
            arg = node.args[0]
            head = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else arg
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                text = head.value
                if text.startswith("."):  # relative to the package named by the second argument
                    text = package + text
                if text.split(".")[0] == "dagster_privacy":
                    found.append((text.rstrip("."), node.lineno))
    return found


def test_every_module_is_in_a_layer_and_imports_only_down() -> None:
    against = []
    for module, path in sorted(MODULES.items()):
        mine = rank(module)
        for target, line in imports(module, path):
            if rank(target) > mine:
                rel = path.relative_to(PACKAGE.parent)
                against.append(f"{rel}:{line} imports {target} (layer {rank(target)} > {mine})")
    assert not against, "\n".join(against)


def test_the_layer_test_sees_lazy_imports_and_init_edges() -> None:
    """The test would catch an arrow against the order: it reads imports inside functions and the
    package __init__ files (a known lazy import and a known __init__ edge are found)."""
    judge = imports("dagster_privacy.decision.judge", MODULES["dagster_privacy.decision.judge"])
    assert any(t == "dagster_privacy.decision.exposure_test" for t, _ in judge)  # imported in a function
    pipeline = imports("dagster_privacy.pipeline", MODULES["dagster_privacy.pipeline"])
    assert any(t == "dagster_privacy.pipeline.governance.signoff" for t, _ in pipeline)
    root = imports("dagster_privacy", MODULES["dagster_privacy"])
    assert any(t.startswith("dagster_privacy.pipeline") for t, _ in root)  # import_module(".pipeline...")
    assert rank("dagster_privacy.data.tables") < rank("dagster_privacy.engine.neighbors")


def test_sub_packages_hold_a_docstring_and_nothing_else() -> None:
    for sub in ("data", "engine", "decision", "pipeline/publication", "pipeline/governance"):
        tree = ast.parse((PACKAGE / sub / "__init__.py").read_text())
        assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), sub
        assert "may import" in ast.get_docstring(tree).lower(), sub


def test_the_root_holds_entry_points_the_result_type_and_modules_every_layer_uses() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "allocator.py", "errors.py", "evaluate.py", "remediate.py",
                    "results.py", "threads.py"]  # fmt: skip
