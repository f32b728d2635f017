"""The runtime's extension module, compiled once per rodgen version and machine.

``_rodgen_runtime`` (the Cython wrapper rendered from :mod:`rodgen.contract`
with every ``csrc/*.c`` compiled in) binds any model through its table, so it
does not depend on a model. It is built on first use into the user cache:

    $RODGEN_CACHE_DIR              if set, else
    $XDG_CACHE_HOME/rodgen         if XDG_CACHE_HOME is set, else
    ~/.cache/rodgen

as ``_runtime-<hash12>/_rodgen_runtime<EXT_SUFFIX>``, where the hash covers the
runtime's sources and the rendered wrapper, rodgen's version, the Cython
version, the compiler and its flags, Python's extension suffix (its ABI) and
the platform. The folder is written in a temporary sibling and renamed into
place under a lock (the same cache discipline as model builds), so concurrent
processes compile it once.
"""
from __future__ import annotations

import functools
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Optional

from ..errors import BuildError
from . import cache
from .compiler import (
    compile_extension,
    compile_key_parts,
    default_arch,
    ext_suffix,
    find_compiler,
    runtime_cflags,
)

#: Environment variable naming the cache folder of the runtime (and of model builds).
CACHE_ENV = cache.CACHE_ENV
#: Name of the runtime's extension module.
MODULE = "_rodgen_runtime"

_lock = threading.Lock()
_build_seconds: dict[str, float] = {}


def cache_dir() -> Path:
    """The folder holding compiled runtimes (see the module's docstring)."""
    return cache.user_cache_dir()


def _machine_parts(compiler: Optional[str]) -> dict[str, str]:
    """What a runtime build depends on besides its sources: rodgen's, Cython's and NumPy's versions (the wrapper
    compiles against NumPy's C API), the compiler and its flags, Python's ABI and the platform."""
    import Cython
    import numpy

    from .. import __version__
    cc = find_compiler(compiler)
    return {
        "rodgen": __version__,
        "cython": str(Cython.__version__),
        "numpy": str(numpy.__version__),
        **compile_key_parts(cc, runtime_cflags(cc), default_arch()),
        "ext_suffix": ext_suffix(),
        "python": sys.implementation.cache_tag or sys.version,
        "platform": sys.platform,
    }


def runtime_key(compiler: Optional[str] = None) -> tuple[str, dict[str, str]]:
    """(hash, the wrapper's files) of the runtime for this machine."""
    from ..codegen.runtime import files_digest, wrapper_files
    files = wrapper_files()
    parts = {"sources": files_digest(files), **_machine_parts(compiler)}
    return cache.build_hash(parts), files


def quick_key(compiler: Optional[str] = None) -> str:
    """The runtime's key from its inputs (the files that shape it, see :func:`rodgen.toolchain.key.generator_digest`,
    and everything :func:`runtime_key` covers but the rendered files), known without rendering the
    wrapper; recorded in the cache's index to find a built runtime without SymPy or Jinja."""
    from .key import generator_digest
    parts = {"generator": generator_digest(), **_machine_parts(compiler)}
    return "runtime-" + cache.build_hash(parts)[:24]


def runtime_path(compiler: Optional[str] = None) -> Path:
    """Build the runtime's extension module if needed; return its path."""
    root = cache_dir()
    module_file = f"{MODULE}{ext_suffix()}"
    quick = quick_key(compiler)
    known = cache.read_index(root, quick)
    if known is not None and cache.complete(known, module_file):
        return known / module_file
    path = _runtime_path(compiler)
    cache.write_index(root, quick, path.parent)
    return path


def _runtime_path(compiler: Optional[str]) -> Path:
    digest, files = runtime_key(compiler)
    root = cache_dir()
    key = f"_runtime-{digest[:12]}"
    module_file = f"{MODULE}{ext_suffix()}"

    def make(tmp: Path) -> dict[str, object]:
        start = time.perf_counter()
        for name in sorted(files):
            (tmp / name).write_bytes(files[name].encode("utf-8"))
        sources = sorted(n for n in files if n.endswith(".c"))
        compile_extension(tmp, pyx=f"{MODULE}.pyx", sources=sources, module=MODULE, compiler=compiler,
                          cflags=runtime_cflags(find_compiler(compiler)))
        seconds = time.perf_counter() - start
        _build_seconds[str(root / key)] = seconds
        return {"module": module_file, "build_hash": digest, "files": sorted(files),
                "cflags": runtime_cflags(find_compiler(compiler)), "compiler": " ".join(find_compiler(compiler)),
                "compile_seconds": round(seconds, 3)}

    def failure(exc: BuildError, failed: Path) -> BuildError:
        return BuildError(f"building rodgen's runtime failed (see {failed / 'build.log'})", command=exc.command,
                          returncode=exc.returncode, log=exc.log, folder=str(failed))

    return cache.build_folder(root, key, module_file, make, failure,
                              advice=f"set {CACHE_ENV} to a writable folder with free space")


@functools.lru_cache(maxsize=None)
def _load(compiler: Optional[str]) -> ModuleType:
    return cache.import_module_file(runtime_path(compiler), MODULE)


def load_runtime(compiler: Optional[str] = None) -> ModuleType:
    """The runtime's extension module (built into the cache on first use)."""
    with _lock:
        return _load(compiler)


def build_seconds() -> dict[str, float]:
    """Seconds spent compiling runtimes in this process, by folder (empty when the cache was warm)."""
    return dict(_build_seconds)


__all__ = ["cache_dir", "runtime_key", "runtime_path", "load_runtime", "build_seconds", "CACHE_ENV", "MODULE"]
