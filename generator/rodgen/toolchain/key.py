"""The key of a build known before derivation: model, method, options, compiler, rodgen itself.

``rodgen.build(model)`` looks this key up first. A hit names the build folder
of an earlier build and loads its library at once: no derivation, no code
generation, and no SymPy import. A miss derives, generates and compiles as
before (the folder is still named by the hash of the generated sources, so two
routes to the same C share it) and records the key for the next time.

The key covers everything the generated code depends on:

- the validated model (:class:`~rodgen.model.valid.ValidModel`), written out
  field by field (:func:`canonical`; the file it came from is left out: it
  names the model's errors, not its code);
- the derivation method and the code stage's options;
- the compiler (its path and ``--version``), its flags, the platform and the
  library suffix;
- rodgen's version and the digest of every file that shapes generated code
  (the model, symbolic and code stages, the contract, the templates and the C
  runtime; :func:`generator_digest`), so that a changed template or printer
  never returns a stale build.

This module imports no SymPy and no Jinja.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import sys
from pathlib import Path
from typing import Any, Optional

from ..model.valid import ValidModel

#: Fields left out of :func:`canonical` (by dataclass and field name): they do not reach the generated code.
IGNORED_FIELDS = frozenset({("ValidModel", "source"), ("ValidSpatialModel", "source")})

#: Parts of the package whose files shape the generated code (folders and single files, under ``rodgen/``).
GENERATOR_PARTS = ("model", "symbolic", "codegen", "csrc", "contract.py", "errors.py", "_version.py")
#: File endings read by :func:`generator_digest`.
GENERATOR_SUFFIXES = (".py", ".c", ".h", ".pxi", ".jinja")


def canonical(value: Any) -> str:
    """A deterministic text of a model value: dataclasses field by field (with their type), tuples and
    lists in order, mappings in order, numbers by ``repr``; fields that do not compare (an expression's
    parse tree) are left out."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value).__name__
        out.append(cls + "(")
        for f in dataclasses.fields(value):
            if not f.compare or (cls, f.name) in IGNORED_FIELDS:
                continue
            out.append(f.name + "=")
            _write(getattr(value, f.name), out)
            out.append(",")
        out.append(")")
    elif isinstance(value, enum.Enum):
        out.append(f"{type(value).__name__}.{value.name}")
    elif isinstance(value, (str, int, float, bool)) or value is None:
        out.append(repr(value))
    elif isinstance(value, (tuple, list)):
        out.append("[")
        for v in value:
            _write(v, out)
            out.append(",")
        out.append("]")
    elif hasattr(value, "items"):
        out.append("{")
        for k, v in value.items():
            _write(k, out)
            out.append(":")
            _write(v, out)
            out.append(",")
        out.append("}")
    elif isinstance(value, (set, frozenset)):
        _write(sorted(value, key=repr), out)
    else:
        raise TypeError(f"cannot key a build on a value of type {type(value).__name__}")


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def template_folder() -> Optional[Path]:
    """The templates' folder, found as the code stage finds it (``rodgen.templates``, else the source
    checkout's ``templates/``), without importing Jinja."""
    installed = _package_root() / "templates"  # the wheel's rodgen/templates (a folder, not imported)
    if (installed / "c").is_dir():
        return installed
    here = _package_root().parents[1] / "templates"
    return here if (here / "c").is_dir() else None


@functools.lru_cache(maxsize=1)
def generator_digest() -> str:
    """SHA-256 over the names and contents of the files that shape generated code (see the module's
    docstring); read once per process."""
    h = hashlib.sha256()
    root = _package_root()
    files: list[tuple[str, Path]] = []
    for part in GENERATOR_PARTS:
        p = root / part
        if p.is_dir():
            files += [(f"rodgen/{part}/{f.relative_to(p).as_posix()}", f) for f in p.rglob("*")
                      if f.is_file() and f.suffix in GENERATOR_SUFFIXES]
        elif p.is_file():
            files.append((f"rodgen/{part}", p))
    templates = template_folder()
    if templates is not None:
        files += [(f"templates/{f.relative_to(templates).as_posix()}", f) for f in templates.rglob("*.jinja")]
    for name, path in sorted(files):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def model_key(model: ValidModel, method: str, codegen: Any, options: Any) -> str:
    """The key (64 hex digits) of building ``model`` by ``method`` with CodegenOptions ``codegen`` and
    BuildOptions ``options``, computed without deriving anything."""
    from .. import __version__
    from . import cache
    from .compiler import find_compiler, library_suffix, model_key_parts
    compiler = find_compiler(options.compiler)
    parts = {
        "model": canonical(model),
        "method": str(method),
        "codegen": canonical(codegen),
        "rodgen": __version__,
        "generator": generator_digest(),
        **model_key_parts(compiler, options),
        "library": library_suffix(),
        "platform": sys.platform,
    }
    return cache.build_hash(parts)


__all__ = ["canonical", "generator_digest", "model_key", "template_folder", "GENERATOR_PARTS"]
