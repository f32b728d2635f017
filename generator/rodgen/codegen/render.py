"""Rendering: ModelSpec -> GeneratedFiles, through one Jinja environment.

The templates live in the top-level ``templates/`` folder, shipped inside the
package as ``rodgen.templates`` and read with :mod:`importlib.resources`.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import jinja2

from ..errors import CodegenError
from .spec import ModelSpec

#: Template of each generated file, by the role of the file.
TEMPLATES = {"header": "c/model.h.jinja", "source": "c/model.c.jinja", "pyx": "cython/model.pyx.jinja"}


class _ResourceLoader(jinja2.BaseLoader):
    """Loads templates from the ``rodgen.templates`` package resources (works from a wheel or a zip)."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, object]:
        node = template_root()
        for part in template.split("/"):
            if part in ("", ".", ".."):
                raise jinja2.TemplateNotFound(template)
            node = node.joinpath(part)
        if not node.is_file():
            raise jinja2.TemplateNotFound(template)
        text = node.read_text(encoding="utf-8")
        return text, template, lambda: True


def template_root() -> importlib.resources.abc.Traversable:
    """The folder holding the templates (``rodgen.templates``, the repository's ``templates/``)."""
    try:
        root = importlib.resources.files("rodgen.templates")
    except ModuleNotFoundError:
        root = None
    if root is not None and root.joinpath("c").is_dir():
        return root
    # a source checkout used without installing: generator/rodgen/codegen -> templates/
    here = Path(__file__).resolve().parents[3] / "templates"
    if here.joinpath("c").is_dir():
        return here
    raise CodegenError("the templates of rodgen are missing: reinstall the package (pip install .)")


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment of the code stage."""
    return jinja2.Environment(loader=_ResourceLoader(), undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


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

    ``files`` holds ``<prefix>.h``, ``<prefix>.c`` and ``_<prefix>.pyx``.
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
    def pyx(self) -> str:
        return self.files[self.spec.pyx]

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
    """Render the C header, the C source and the Cython module of a lowered model."""
    env = environment()
    names = {"header": spec.header, "source": spec.source, "pyx": spec.pyx}
    files = {}
    for role, template in TEMPLATES.items():
        try:
            text = env.get_template(template).render(m=spec)
        except jinja2.TemplateError as exc:
            raise CodegenError(f"rendering {template} for model {spec.name!r} failed: {exc}") from exc
        files[names[role]] = text
    return GeneratedFiles(spec, files)
