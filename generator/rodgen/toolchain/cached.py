"""One cached compile of C sources into a shared library, for the libraries built beside a model's.

    path = compile_cached("controller-walk", {"rodgen_runtime.h": ...}, compile=["/abs/walk.c", "rodgen_linalg.c"],
                          flags=["-O3", "-fPIC"], link=["-lm"], key_parts={"source": text}, what="the controller")

The controller (:mod:`.controller`) and the trajectory optimisation's library (:mod:`rodgen.optimize.build`)
are built the same way: the files ``sources`` are written into a fresh folder, the files ``compile`` (names
in that folder or absolute paths) are compiled with ``-std=c99 -shared``, the ``flags``, ``-I.``, the
``include_dirs`` and the ``link`` arguments into ``lib<name>.so``, and the folder
``<build_dir>/<prefix>-<hash12>/`` is reused whenever the hash (the sources, ``key_parts``, the compiler,
its flags, rodgen's version, the platform) is the same. With ``object_file=True`` the one file of
``compile`` is compiled (``-c``, no ``-shared``, no ``link``) into the object file ``<name>.o`` instead, for
libraries that link it (the optimisation's model-independent driver, compiled once). These libraries are loaded
on the machine that compiles them, so they are compiled for :func:`rodgen.toolchain.compiler.default_arch`'s
instruction set (``$RODGEN_ARCH`` or ``"native"``), and the hash covers what it resolves to.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

from ..errors import BuildError
from . import cache
from .compiler import (
    _finish,
    _Log,
    _start,
    arch_flags,
    compile_key_parts,
    default_arch,
    find_compiler,
    library_suffix,
)


def compile_cached(prefix: str, sources: Mapping[str, str], *, compile: Sequence[str], flags: Sequence[str],
                   link: Sequence[str] = ("-lm",), include_dirs: Sequence[Union[str, Path]] = (),
                   key_parts: Optional[Mapping[str, str]] = None, library: str = "lib", what: str = "the library",
                   meta: Optional[Mapping[str, object]] = None, build_dir: Union[str, Path, None] = None,
                   compiler: Optional[str] = None, object_file: bool = False) -> Path:
    """Compile (or reuse) a shared library; its path ``<build_dir>/<prefix>-<hash12>/<library><suffix>``
    (with ``object_file``: an object file ``<library>.o``).

    ``what`` names the library in a BuildError (with the compiler's diagnostics); ``meta`` goes into the
    folder's manifest.
    """
    from .. import __version__
    from ..codegen.runtime import files_digest
    cc = find_compiler(compiler)
    arch = default_arch()
    flags = list(flags) + arch_flags(cc, arch)
    dirs = [str(d) for d in include_dirs]
    parts = {"sources": files_digest(dict(sources)), "compile": "\n".join(compile), "rodgen": __version__,
             **compile_key_parts(cc, flags, arch), "link": " ".join(link), "include_dirs": "\n".join(dirs),
             "platform": sys.platform}
    if object_file:
        parts["object_file"] = "1"
    parts.update(key_parts or {})
    digest = cache.build_hash(parts)
    key = f"{prefix}-{digest[:12]}"
    root = Path(build_dir) if build_dir is not None else cache.default_build_dir()
    lib = f"{library}.o" if object_file else f"{library}{library_suffix()}"

    def make(tmp: Path) -> dict[str, object]:
        start = time.perf_counter()
        for name, body in sources.items():
            (tmp / name).write_text(body, encoding="utf-8")
        cmd = (list(cc) + ["-std=c99", "-c" if object_file else "-shared"] + list(flags) + ["-I."]
               + [f"-I{d}" for d in dirs] + list(compile) + ["-o", lib] + ([] if object_file else list(link)))
        _finish(_start(cmd, tmp), cmd, tmp, _Log(tmp / "build.log"), f"compiling {what}")
        return {**dict(meta or {}), "library": lib, "build_hash": digest, "cflags": list(flags),
                "compiler": " ".join(cc), "compile_seconds": round(time.perf_counter() - start, 3)}

    def failure(exc: BuildError, failed: Path) -> BuildError:
        return BuildError(f"compiling {what} failed:\n{exc.log.strip()}",
                          command=exc.command, returncode=exc.returncode, folder=str(failed))

    return cache.build_folder(root, key, lib, make, failure,
                              advice="choose a writable build_dir= (or $RODGEN_CACHE_DIR) with free space")


__all__ = ["compile_cached"]
