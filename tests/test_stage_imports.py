"""The stages keep apart: read from the source's import statements (ast), not from running it.

* the code stage imports nothing of the symbolic stage but its result types
  (and its entry points ``derive`` and ``derived``, for ``generate(model)``);
* the runtime imports no SymPy (prescribed motions given as SymPy
  expressions are turned into numbers by :mod:`rodgen.symbolic.trajectory`).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "generator" / "rodgen"

#: what the code stage may take from rodgen.symbolic, per module it imports from
RESULT_TYPES = {"rodgen.symbolic.equations": {"Equations", "ConstraintEquations", "ForwardDynamics"},
                "rodgen.symbolic": {"derive", "derived"}}


def imports(path: Path) -> list[tuple[str, str, int]]:
    """(module, imported name or '*' for a plain import, line) of every import in a module, nested ones too."""
    package = ".".join(("rodgen", *path.relative_to(PACKAGE).parent.parts))
    out: list[tuple[str, str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, "*", node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out += [(module, a.name, node.lineno) for a in node.names]
    return out


def test_import_resolution() -> None:
    """The resolver itself: relative imports of the code stage land where Python puts them."""
    found = imports(PACKAGE / "codegen" / "lower.py")
    assert ("rodgen.symbolic.equations", "Equations") in [(m, n) for m, n, _ in found]
    assert ("rodgen.errors", "CodegenError") in [(m, n) for m, n, _ in found]
    assert ("rodgen.codegen.routine", "build_routine") in [(m, n) for m, n, _ in found]


@pytest.mark.parametrize("path", sorted((PACKAGE / "codegen").rglob("*.py")), ids=lambda p: p.name)
def test_code_stage_takes_only_result_types_from_the_symbolic_stage(path: Path) -> None:
    for module, name, line in imports(path):
        if module.startswith("rodgen.symbolic"):
            allowed = RESULT_TYPES.get(module, set())
            assert name in allowed, (f"{path.relative_to(PACKAGE)}:{line} imports {name} from {module}; the "
                                     f"code stage may only take {sorted(RESULT_TYPES)} result types")
            if module == "rodgen.symbolic":
                assert path.name == "__init__.py", f"{path.name}:{line}: only generate(model) derives"


@pytest.mark.parametrize("path", sorted((PACKAGE / "runtime").rglob("*.py")), ids=lambda p: p.name)
def test_runtime_imports_no_sympy(path: Path) -> None:
    for module, name, line in imports(path):
        assert module.split(".")[0] != "sympy", f"{path.relative_to(PACKAGE)}:{line} imports {module}"
