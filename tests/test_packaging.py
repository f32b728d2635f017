"""Packaging metadata tells the truth: one version, the dependencies rodgen really imports, the shipped files.

The built wheel itself (py.typed, LICENSE, templates, version in its metadata)
is checked in test_wheel.py.
"""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

import rodgen
from conftest import REPO

tomllib = pytest.importorskip("tomllib")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = REPO / "generator" / "rodgen"

#: declared dependencies that rodgen uses without importing them by name
USED_INDIRECTLY = {
    "pillow": "animated GIFs are written with matplotlib's PillowWriter",
}


#: files of the package that need an optional extra (imported only when used): the extra's name
EXTRA_FILES = {
    "generator/rodgen/runtime/study.py": "sweep",
    "generator/rodgen/cli_sweep.py": "sweep",
    "generator/rodgen/fmu/__init__.py": "fmu",
    "generator/rodgen/optimize/build.py": "optimize",
    "generator/rodgen/optimize/phases.py": "optimize",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    assert m, req
    return canonical(m.group(1))


def test_version_is_defined_once() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rodgen._version.__version__"}
    from rodgen import _version
    assert rodgen.__version__ == _version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", rodgen.__version__)
    # no second literal anywhere in the package
    literal = [p.relative_to(REPO).as_posix() for p in PACKAGE.rglob("*.py")
               if re.search(r"^__version__\s*=", p.read_text(encoding="utf-8"), flags=re.M)]
    assert literal == ["generator/rodgen/_version.py"]


def test_installed_metadata_matches_the_package() -> None:
    """Where rodgen is installed (CI: ``pip install .``), its metadata carries the package's version."""
    try:
        dist = importlib.metadata.distribution("rodgen")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("rodgen is not installed (source checkout on PYTHONPATH)")
    installed = Path(str(dist.locate_file("rodgen"))).resolve()
    if installed != Path(rodgen.__file__).resolve().parent:
        pytest.skip(f"the imported rodgen ({rodgen.__file__}) is not the installed one ({installed})")
    assert dist.version == rodgen.__version__


def test_license_file_matches_the_metadata() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text


def test_package_data_exists_and_covers_the_templates() -> None:
    """Plain file names in package-data exist (py.typed was once listed but missing); every template is covered."""
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"]
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        root = REPO / dirs[package] if package in dirs else REPO / "generator" / package.replace(".", "/")
        for pattern in patterns:
            if not any(c in pattern for c in "*?["):
                assert (root / pattern).is_file(), f"{package}: {pattern} is listed but missing under {root}"
    assert (PACKAGE / "py.typed").is_file()
    templates = REPO / dirs["rodgen.templates"]
    for path in templates.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(templates)
            assert any(rel.match(p) and len(rel.parts) == len(Path(p).parts) for p in data["rodgen.templates"]), \
                f"templates/{rel.as_posix()} is not shipped (add its pattern to package-data)"


def third_party_imports() -> dict[str, list[str]]:
    """Top-level modules imported anywhere in the package (also lazily inside functions), outside the stdlib."""
    stdlib = set(sys.stdlib_module_names)
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                if top not in stdlib and top != "rodgen":
                    found.setdefault(top, []).append(path.relative_to(REPO).as_posix())
    return found


def provided(req: str) -> set[str]:
    """The distributions a requirement installs by name: itself, and for ``pkg[extra]`` the requirements of
    that extra of ``pkg`` (as installed)."""
    names = {requirement_name(req)}
    m = re.match(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\[([^\]]*)\]", req)
    if m:
        for extra in (e.strip() for e in m.group(1).split(",")):
            for r in importlib.metadata.requires(requirement_name(req)) or []:
                if re.search(rf"extra\s*==\s*[\"']{re.escape(extra)}[\"']", r):
                    names.add(requirement_name(r))
    return names


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names")
def test_dependencies_are_declared_and_used() -> None:
    """Every third-party import is a dependency, or (in the files of an optional feature only) in its extra."""
    declared = {requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    dists = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for module, files in third_party_imports().items():
        assert module in dists, f"{module} (imported in {files[0]}) is not installed"
        names = {canonical(d) for d in dists[module]}
        allowed = set(declared)
        needs = {EXTRA_FILES.get(f) for f in files}
        if len(needs) == 1 and None not in needs:  # imported only by the files of one extra
            allowed |= set().union(*(provided(r) for r in extras[needs.pop()]))
        assert names & allowed, f"{module} is imported in {files[0]} but {sorted(names)} is not a dependency" \
                                f" (nor in the extra of that file)"
        imported |= names
    unused = declared - imported - set(USED_INDIRECTLY)
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_ci_runs_exactly_the_readme_set_up_commands() -> None:
    """.ci/run prepares a clean folder, then runs the README's set-up commands, nothing more and nothing less."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    preparation = ("#", "set ", "cd ", "rm ", "export ")
    ci_commands = [line for line in ci if line and not line.startswith(preparation)]
    assert ci_commands == commands
    assert "ruff check ." in commands[1] and "python -m pytest -q" in commands[1]
