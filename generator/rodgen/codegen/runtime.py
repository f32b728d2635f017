"""The model-independent C runtime and its Cython wrapper, as files.

The runtime is static C in ``rodgen/csrc/`` (``rodgen_*.c``, ``rodgen_contact.h`` ...)
plus the headers ``rodgen_model.h`` (the table of a model) and ``rodgen_runtime.h``,
rendered from :mod:`rodgen.contract` (copies are kept in ``csrc/`` so the C reads on
its own; a test checks that they are current; write them again with
``python -m rodgen.codegen.runtime``). The Cython wrapper
``_rodgen_runtime.pyx`` is rendered from the same contract and includes every
``csrc/*.pxi`` (the bindings of further runtime C, e.g. constrained dynamics).

    runtime_sources()   # {"rodgen_model.h": ..., "rodgen_runtime.h": ..., "rodgen_simulate.c": ...}
    wrapper_files()     # the above, the .pyx and the .pxi files: what the toolchain compiles once
"""
from __future__ import annotations

import hashlib
import importlib.resources
import sys
from pathlib import Path

import jinja2

from .. import contract
from ..errors import CodegenError
from .render import environment

#: The runtime header, rendered from the contract.
RUNTIME_HEADER = "rodgen_runtime.h"
#: The header of a model's table (``rodgen_model``, ``rodgen_constraint``, the kinds of block and joint), rendered
#: from the contract.
MODEL_HEADER = "rodgen_model.h"
#: The Cython wrapper of the runtime (module name without the suffix).
WRAPPER_MODULE = "_rodgen_runtime"


def csrc_root() -> importlib.resources.abc.Traversable:
    """The folder of the runtime's static C (``rodgen/csrc``)."""
    root = importlib.resources.files("rodgen").joinpath("csrc")
    if not root.joinpath("rodgen_model.h").is_file():
        raise CodegenError("the C runtime of rodgen (rodgen/csrc) is missing: reinstall the package")
    return root


def _render(template: str, **context: object) -> str:
    try:
        return environment().get_template(template).render(c=contract, **context)
    except jinja2.TemplateError as exc:
        raise CodegenError(f"rendering {template} failed: {exc}") from exc


def runtime_header() -> str:
    """The text of ``rodgen_runtime.h`` (status codes, constants, structs, runtime functions)."""
    return _render("c/runtime.h.jinja")


def model_header() -> str:
    """The text of ``rodgen_model.h`` (the table of a model: sizes, constraint blocks, routines, names)."""
    return _render("c/model_table.h.jinja")


def rendered_headers() -> dict[str, str]:
    """The headers rendered from the contract, by name."""
    return {MODEL_HEADER: model_header(), RUNTIME_HEADER: runtime_header()}


def runtime_sources() -> dict[str, str]:
    """Every file a C program needs besides a model's own: the headers and ``csrc/*.c``, by name."""
    root = csrc_root()
    files: dict[str, str] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".c", ".h")):
            files[entry.name] = entry.read_text(encoding="utf-8")
    files.update(rendered_headers())
    return files


def runtime_c_files() -> list[str]:
    """Names of the runtime's C sources (compiled into the wrapper; a firmware compiles them too)."""
    return sorted(n for n in runtime_sources() if n.endswith(".c"))


def wrapper_files() -> dict[str, str]:
    """The runtime's C, its headers, the rendered ``_rodgen_runtime.pyx`` and every ``csrc/*.pxi``."""
    files = runtime_sources()
    pxi = sorted(e.name for e in csrc_root().iterdir() if e.name.endswith(".pxi"))
    for name in pxi:
        files[name] = csrc_root().joinpath(name).read_text(encoding="utf-8")
    files[f"{WRAPPER_MODULE}.pyx"] = _render("cython/runtime.pyx.jinja", includes=pxi,
                                             sizes=contract.SIZES)
    return files


def files_digest(files: dict[str, str]) -> str:
    """SHA-256 over names and contents, in name order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()


def write_runtime_header(folder: Path | None = None) -> list[Path]:
    """Write the rendered headers (``rodgen_model.h``, ``rodgen_runtime.h``) into ``folder`` (default: the source
    checkout's ``csrc/``)."""
    folder = folder or Path(__file__).resolve().parents[1] / "csrc"
    paths = []
    for name, text in rendered_headers().items():
        (folder / name).write_bytes(text.encode("utf-8"))
        paths.append(folder / name)
    return paths


if __name__ == "__main__":  # pragma: no cover
    for written in write_runtime_header(Path(sys.argv[1]) if len(sys.argv) > 1 else None):
        print(written)
