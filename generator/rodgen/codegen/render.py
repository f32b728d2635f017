"""Rendering: ModelSpec -> GeneratedFiles, through one Jinja environment.

A model's files are its C header and source, rendered here, and the files of
rodgen's C runtime (``rodgen_model.h``, ``rodgen_runtime.h``, ``rodgen_*.c``),
copied beside them so that the folder builds on its own.

The templates live in the top-level ``templates/`` folder, shipped inside the
package as the folder ``rodgen/templates`` (read as files, not imported).
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

import jinja2

from ..errors import CodegenError
from .spec import ModelSpec

#: Template of each generated file, by the role of the file.
TEMPLATES = {"header": "c/model.h.jinja", "source": "c/model.c.jinja"}

#: Prefixes a model may not take: its functions would collide with the runtime's names.
RESERVED_PREFIXES = frozenset({"rodgen"})


class _ResourceLoader(jinja2.BaseLoader):
    """Loads templates from :func:`template_root`."""

    def get_source(self, environment: jinja2.Environment,
                   template: str) -> tuple[str, Optional[str], Optional[Callable[[], bool]]]:
        node = template_root()
        for part in template.split("/"):
            if part in ("", ".", ".."):
                raise jinja2.TemplateNotFound(template)
            node = node.joinpath(part)
        if not node.is_file():
            raise jinja2.TemplateNotFound(template)
        text = node.read_text(encoding="utf-8")
        return text, template, lambda: True


def template_root() -> Path:
    """The folder holding the templates (the installed ``rodgen/templates``, the repository's ``templates/``)."""
    # the installed package's rodgen/templates, read as a folder (importing it as a namespace package
    # would add a `templates` attribute to rodgen)
    installed = Path(__file__).resolve().parents[1] / "templates"
    if installed.joinpath("c").is_dir():
        return installed
    # a source checkout used without installing: generator/rodgen/codegen -> templates/
    here = Path(__file__).resolve().parents[3] / "templates"
    if here.joinpath("c").is_dir():
        return here
    raise CodegenError("the templates of rodgen are missing: reinstall the package (pip install .)")


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Jinja's compiled templates kept in a folder (each checked by Jinja against its template's source and
    Python's version): a file that cannot be read back or written is compiled again, never an error."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:   # a damaged file: Jinja compiles the template again
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:     # a full or read-only cache: the next process compiles it again
            pass


def keep_compiled_templates(folder: Union[str, Path]) -> None:
    """Keep the environment's compiled templates in ``folder`` (created here), so that a later process renders
    without compiling the templates again (about 0.1 s of a model's first build in a process). A folder that
    cannot be created is left alone. The folder's name should name what the compiled code depends on beyond
    the sources Jinja checks (the environment's settings, Jinja's version): the toolchain keys it by rodgen's
    generator digest and Jinja's version."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    environment().bytecode_cache = _CompiledTemplates(str(folder))


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment of the code stage."""
    from .. import contract
    env = jinja2.Environment(loader=_ResourceLoader(), undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["c_string"] = c_string
    env.globals["contract"] = contract
    return env


def c_string(text: object) -> str:
    """A C99 string literal holding ``text`` exactly (UTF-8; octal escapes for anything but plain ASCII)."""
    out = ['"']
    for byte in str(text).encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def template_digest() -> str:
    """SHA-256 over the names and contents of every template (part of the build hash)."""
    h = hashlib.sha256()
    root = template_root()
    for folder in ("_macros", "c", "cython"):
        d = root.joinpath(folder)
        if not d.is_dir():
            continue
        for entry in sorted(d.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".jinja"):
                h.update(f"{folder}/{entry.name}\0".encode())
                h.update(entry.read_bytes())
                h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class GeneratedFiles:
    """The files of one model: file name -> text, and the spec they came from.

    ``files`` holds ``<prefix>.h``, ``<prefix>.c`` and the runtime's files (``rodgen_model.h``,
    ``rodgen_runtime.h``, ``rodgen_*.c``): everything a C program of the model compiles.
    """

    spec: ModelSpec
    files: dict[str, str]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def header(self) -> str:
        return self.files[self.spec.header]

    @property
    def source(self) -> str:
        return self.files[self.spec.source]

    @property
    def runtime(self) -> list[str]:
        """Names of the runtime's files among ``files``."""
        return sorted(n for n in self.files if n not in (self.spec.header, self.spec.source))

    def digest(self) -> str:
        """SHA-256 of the file names and contents, in name order."""
        h = hashlib.sha256()
        for fname in sorted(self.files):
            h.update(fname.encode() + b"\0" + self.files[fname].encode() + b"\0")
        return h.hexdigest()

    def write(self, out_dir: Union[str, Path]) -> dict[str, Path]:
        """Write the files into ``out_dir`` (created if needed); return name -> path."""
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {}
        for fname in sorted(self.files):
            path = folder / fname
            path.write_bytes(self.files[fname].encode("utf-8"))
            paths[fname] = path
        return paths


def render(spec: ModelSpec) -> GeneratedFiles:
    """Render the C header and the C source of a lowered model; add the runtime's files."""
    from .runtime import runtime_sources
    if spec.prefix in RESERVED_PREFIXES:
        raise CodegenError(f"model name {spec.name!r} gives the C prefix {spec.prefix!r}, which rodgen's C runtime "
                           f"uses; rename the model")
    env = environment()
    names = {"header": spec.header, "source": spec.source}
    files = runtime_sources()
    if spec.header in files or spec.source in files:
        raise CodegenError(f"model name {spec.name!r} gives files that clash with rodgen's C runtime "
                           f"({spec.header}, {spec.source}); rename the model")
    for role, template in TEMPLATES.items():
        try:
            text = env.get_template(template).render(m=spec)
        except jinja2.TemplateError as exc:
            raise CodegenError(f"rendering {template} for model {spec.name!r} failed: {exc}") from exc
        files[names[role]] = text
    return GeneratedFiles(spec, files)
