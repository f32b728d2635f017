"""The documentation cannot drift from the code: its generated pages are current, its code blocks run, its
copies of example files are the files, its links lead somewhere.

Conventions of the pages (README.md and docs/*.md; the generated pages are checked by regeneration):

* every ```` ```python ```` block runs; the blocks of one page run in order in one namespace, in a
  temporary folder that holds ``examples/`` (so ``rodgen.load("examples/...")`` works) and whatever the
  page's earlier blocks wrote, with ``rodgen.build`` building into the session's build folder;
* a block preceded by the line ``<!-- not-run -->`` is an illustrative fragment and is skipped;
* a block of any language preceded by ``<!-- file: NAME -->`` is written to the file NAME of that folder
  before the page's next Python block runs (a C controller the page then compiles);
* the ``rodgen ...`` lines of ```` ```sh ```` blocks in docs/ run in that folder too (with
  ``--build-dir`` where the command takes one) and exit with status 0, or with N when the block is
  preceded by ``<!-- exit: N -->``;
* a ```` ```yaml ```` block whose first line is ``# examples/NAME.yaml...`` is that file, verbatim after
  its own comment lines.
"""
from __future__ import annotations

import functools
import importlib.util
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import pytest

import rodgen
from conftest import REPO

DOCS = REPO / "docs"
NOT_RUN = "<!-- not-run -->"
FILE_MARK = re.compile(r"<!-- file: (\S+) -->")


def reference_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rodgen_reference", DOCS / "_ext" / "rodgen_reference.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GENERATED = set(reference_module().pages())


def pages() -> list[Path]:
    """README.md and the hand-written pages of docs/ (not the generated ones)."""
    out = [REPO / "README.md"]
    for p in sorted(DOCS.rglob("*.md")):
        rel = p.relative_to(DOCS).as_posix()
        if rel not in GENERATED and "_build" not in p.parts:
            out.append(p)
    return out


def blocks(path: Path) -> Iterator[tuple[str, str, str, int]]:
    """(language, code, the line before the fence, line number of the fence) of each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m and m.group(1):
            start = i
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            before = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            yield m.group(1), "\n".join(lines[start + 1:j]) + "\n", before, start + 1
            i = j + 1
        else:
            i += 1


def _id(p: Path) -> str:
    return p.relative_to(REPO).as_posix()


# -- generated pages -------------------------------------------------------------------------------------

def test_generated_pages_are_current() -> None:
    """The model-file, C API, CLI and gallery pages are what docs/_ext/rodgen_reference.py makes of the code
    now (regenerate with `python docs/_ext/rodgen_reference.py`)."""
    assert reference_module().stale() == []


def test_model_file_reference_covers_the_loaders_key_sets() -> None:
    """Every key a loader accepts is described, and every description is of a key it accepts; the sets
    documented are the loader's own objects, so a key added to a loader shows up here."""
    from rodgen.model import fields, loader, spatial_io
    assert fields.undocumented() == []
    live = {id(v) for mod in (loader, spatial_io) for k, v in vars(mod).items()
            if k.startswith("_") and k.endswith("_KEYS")}
    for s in fields.SECTIONS:
        if not s.name.startswith("force."):
            assert id(s.keys) in live, f"{s.name}: not one of the loaders' key sets"
    declared = {k for mod in (loader, spatial_io) for k, v in vars(mod).items()
                if k.startswith("_") and k.endswith("_KEYS")}
    covered = {k for mod in (loader, spatial_io) for k, v in vars(mod).items()
               if k.startswith("_") and k.endswith("_KEYS") and any(v is s.keys for s in fields.SECTIONS)}
    assert covered == declared, f"key sets without documentation: {sorted(declared - covered)}"


def test_model_file_reference_names_what_the_loader_refuses(tmp_path: Path) -> None:
    """A key the reference does not list for a link is refused by the loader, naming it."""
    from rodgen.model.fields import SECTIONS
    link = next(s for s in SECTIONS if s.name == "link")
    assert "parent" in link.fields and "parnet" not in link.fields
    f = tmp_path / "m.yaml"
    f.write_text("name: m\nlinks:\n  - name: a\n    parnet: b\n    segments: [{name: s, length: 1}]\n")
    with pytest.raises(rodgen.ModelError, match="parnet"):
        rodgen.load(f)


def test_cli_reference_lists_every_option() -> None:
    """Each option of each subcommand's parser appears in the generated CLI page."""
    from rodgen.cli import parser
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    mod = reference_module()
    subs = mod._subparsers(parser())
    assert {name for name, _, _ in subs} >= {"generate", "build", "simulate", "equations", "modes", "sweep"}
    for name, _, sub in subs:
        assert f"## `rodgen {name}`" in text
        for action in sub._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}" in text or f", {opt}" in text, f"rodgen {name} {opt}"


def test_python_reference_has_every_public_name() -> None:
    """Every name of rodgen.__all__ has its autodoc entry on the Python API page."""
    text = (DOCS / "reference" / "python.md").read_text(encoding="utf-8")
    missing = [n for n in rodgen.__all__ if f"rodgen.{n}" not in text]
    assert missing == [], f"add them to docs/reference/python.md: {missing}"


def test_c_api_reference_lists_the_contract() -> None:
    from rodgen import contract
    text = (DOCS / "reference" / "c-api.md").read_text(encoding="utf-8")
    for r in contract.ROUTINES:
        assert f"<prefix>_{r.name}({r.c_params});" in text
    for st in contract.STATUSES:
        assert f"`RODGEN_{st.name}` | {st.value} |" in text
    for s in contract.STRUCTS:
        assert f"### `{s.name}`" in text


# -- the gallery -----------------------------------------------------------------------------------------

def test_gallery_has_a_page_and_a_figure_per_example_script() -> None:
    """Every example script (examples/*.py and the programs of examples/spatial/) has a gallery page with at
    least one committed figure, and every figure the pages show exists."""
    scripts = reference_module().example_scripts()
    assert set(sorted((REPO / "examples").glob("*.py"))) <= set(scripts)
    assert {"biped12_walk", "solo12_stand"} <= {p.stem for p in scripts if p.parent.name == "spatial"}
    for script in scripts:
        page = DOCS / "gallery" / f"{script.stem}.md"
        assert page.is_file(), script.name
        shown = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", page.read_text(encoding="utf-8"))
        assert shown, f"{page.name} shows no figure"
        for rel in shown:
            assert (DOCS / "gallery" / rel).is_file(), rel


# -- pages -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", [p for p in pages() if any(lang == "python" and before != NOT_RUN
                                                          for lang, _, before, _ in blocks(p))], ids=_id)
def test_python_blocks_run(page: Path, tmp_path: Path, build_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's Python blocks run as written, in order, in one namespace."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "build").mkdir()                 # as in the repository: the folder of outputs
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(rodgen, "build", functools.partial(rodgen.build, build_dir=build_dir))
    ns: dict[str, Any] = {"__name__": "__docs__"}
    ran = 0
    for lang, code, before, line in blocks(page):
        m = FILE_MARK.fullmatch(before)
        if m:
            (tmp_path / m.group(1)).write_text(code, encoding="utf-8")
            continue
        if lang != "python" or before == NOT_RUN:
            continue
        try:
            exec(compile(code, f"{_id(page)}:{line}", "exec"), ns)
        except Exception as exc:
            raise AssertionError(f"{_id(page)}, the python block at line {line} fails: {exc!r}") from exc
        ran += 1
    assert ran, "no block ran"


EXIT_MARK = re.compile(r"<!-- exit: (\d+) -->")


def _shell_commands() -> list[tuple[Path, int, str, int]]:
    out = []
    for p in pages():
        if p.name == "README.md":      # its set-up commands are what .ci/run runs
            continue
        for lang, code, before, line in blocks(p):
            if lang == "sh" and before != NOT_RUN:
                joined = re.sub(r"\\\n\s*", " ", code)          # continuation lines
                m = EXIT_MARK.fullmatch(before)
                out += [(p, line, c.strip(), int(m.group(1)) if m else 0) for c in joined.splitlines()
                        if c.strip().startswith("rodgen ")]
    return out


@pytest.mark.parametrize("page,line,command,status", _shell_commands(),
                         ids=[f"{_id(p)}:{n}" for p, n, _, _ in _shell_commands()])
def test_rodgen_commands_run(page: Path, line: int, command: str, status: int, tmp_path: Path, build_dir: Path,
                             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The `rodgen ...` command lines of the pages' sh blocks run and exit with the status the page gives
    (0 unless it says otherwise)."""
    from rodgen.cli import main
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "build").mkdir()                 # as in the repository: the folder of outputs
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    argv = shlex.split(command.split("#")[0])[1:]
    if argv[0] in ("build", "simulate", "sweep", "fmu"):
        argv += ["--build-dir", str(build_dir)]
    assert main(argv) == status, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out or argv[0] in ("simulate",), f"{command}: printed nothing"
    for flag in ("-o", "--output", "--plot", "--csv", "--animate"):     # the files it says it writes
        if flag in argv:
            assert (tmp_path / argv[argv.index(flag) + 1]).exists(), f"{command}: no {argv[argv.index(flag) + 1]}"


def test_yaml_copies_of_example_files_are_the_files() -> None:
    for p in pages():
        for lang, code, _, line in blocks(p):
            m = re.match(r"# (examples/\S+\.yaml)", code)
            if lang != "yaml" or not m:
                continue
            body = [x for x in code.splitlines()[1:]]
            file_lines = (REPO / m.group(1)).read_text(encoding="utf-8").splitlines()
            while file_lines and file_lines[0].startswith("#"):
                file_lines.pop(0)
            assert body == file_lines, f"{_id(p)}:{line} differs from {m.group(1)}"


def test_fences_are_balanced_and_yaml_blocks_parse() -> None:
    """Every page closes its fenced blocks (an unclosed fence swallows the rest of a page without a warning),
    and every YAML block is valid YAML."""
    import yaml
    for p in pages():
        fences = [x for x in p.read_text(encoding="utf-8").splitlines() if re.match(r"^```", x)]
        assert len(fences) % 2 == 0, f"{_id(p)}: an unclosed code fence"
        for lang, code, _, line in blocks(p):
            if lang == "yaml":
                try:
                    yaml.safe_load(code)
                except yaml.YAMLError as exc:
                    raise AssertionError(f"{_id(p)}:{line}: not YAML: {exc}") from None


def test_relative_links_lead_to_files() -> None:
    """Every relative link of README.md and the pages points at a file of the repository."""
    for p in pages() + [DOCS / rel for rel in GENERATED]:
        text = re.sub(r"```.*?```", "", p.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#")[0]
            assert (p.parent / path).exists(), f"{_id(p)}: link to {target} leads nowhere"


# -- the README's own promises -----------------------------------------------------------------------------

def test_readme_quick_start_numbers_and_picture(tmp_path: Path, build_dir: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's quick start: its mass-matrix entry is the hand-derived one, m2 (L2²/3 + L1 L2 cos θ2 / 2),
    the unforced swing keeps its energy, and the picture the README shows is the file the quick start
    writes."""
    import sympy as sp
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(code for lang, code, _, _ in blocks(REPO / "README.md") if lang == "python")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rodgen, "build", functools.partial(rodgen.build, build_dir=build_dir))
    ns: dict[str, Any] = {}
    exec(block, ns)
    m01 = ns["eqs"].M[0, 1]
    sym = {s.name: s for s in m01.free_symbols}        # the model's symbols, with their assumptions
    L1, L2, m2, th = (sym[n] for n in ("L1", "L2", "m2", "th_lower"))
    assert sp.simplify(m01 - m2 * (L2**2 / 3 + L1 * L2 * sp.cos(th) / 2)) == 0
    E = ns["E"]
    assert abs(E[-1] - E[0]) < 1e-8 * abs(E[0])
    written = re.search(r'rodgen\.plot\(res, "([^"]+)"', block)
    assert written and (tmp_path / written.group(1)).is_file()
    assert f"docs/img/{written.group(1)}" in readme and (DOCS / "img" / written.group(1)).is_file()
    assert np.asarray(ns["res"].q).shape == (10001, 2)


def test_readme_is_a_landing_page() -> None:
    """About 180 lines; the numbers table has four rows and links to the benchmarks' README."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    table = text.split("## The numbers", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("|")][2:]
    assert len(rows) == 4
    assert "(benchmarks/README.md)" in table
    assert not re.search(r"before|previous version", table)


if sys.platform == "win32":     # pragma: no cover - symlinks need privileges there
    pytestmark = pytest.mark.skip("the page folders link examples/")
