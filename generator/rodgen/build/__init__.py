"""Build stage: compile generated files, cache the result, import the module.

    sys = rodgen.build(model)                          # derive, generate, compile (or reuse), import
    sys = rodgen.build(model, build_dir="out", options=BuildOptions(optimization="O3"))

The build folder is ``<build_dir>/<model>-<hash12>/`` with ``build_dir``
defaulting to ``./build``. The hash covers the generated sources, the
templates, the compiler and its flags, Python's extension suffix, the Cython
version and rodgen's version; a folder with that hash is reused without
compiling.
"""
from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ..codegen import CodegenOptions, GeneratedFiles, equations_of, generate, lower, render, template_digest
from ..errors import BuildError
from ..model.valid import AnyModel
from ..symbolic.equations import Equations
from . import cache
from .compiler import (BuildOptions, Optimization, compile_count, compile_extension, compiler_identity,
                       ext_suffix, find_compiler)


def build_key(files: GeneratedFiles, options: BuildOptions) -> str:
    """The hash of a build (64 hex digits); its first 12 digits name the folder."""
    import Cython

    from .. import __version__
    compiler = find_compiler(options.compiler)
    parts = {
        "sources": files.digest(),
        "templates": template_digest(),
        "rodgen": __version__,
        "compiler": " ".join(compiler) + "\n" + compiler_identity(compiler),
        "cflags": " ".join(options.cflags()) + " | " + " ".join(options.wrapper_cflags()),
        "ext_suffix": ext_suffix(),
        "cython": str(Cython.__version__),
        "platform": sys.platform,
    }
    return cache.build_hash(parts)


def compile_files(files: GeneratedFiles, *, build_dir: Union[str, Path, None] = None,
                  options: Optional[BuildOptions] = None) -> Path:
    """Compile generated files into ``<build_dir>/<model>-<hash12>/`` (or reuse it); return the module path."""
    options = options or BuildOptions()
    root = Path(build_dir) if build_dir is not None else cache.default_build_dir()
    spec = files.spec
    digest = build_key(files, options)
    key = f"{spec.prefix}-{digest[:12]}"
    final = root / key
    module_file = f"{spec.module}{ext_suffix()}"
    if cache.complete(final, module_file):
        return final / module_file
    root.mkdir(parents=True, exist_ok=True)
    with cache.locked(root, key):
        if cache.complete(final, module_file):  # another process built it while we waited
            return final / module_file
        cache.clear_stale(root, key)
        tmp = cache.new_temp_folder(root, key)
        start = time.perf_counter()
        try:
            files.write(tmp)
            compile_extension(tmp, source=spec.source, pyx=spec.pyx, module=spec.module, options=options)
        except BuildError as exc:
            failed = cache.keep_failed(tmp, root, key)
            exc.folder = str(failed)
            raise BuildError(f"building the model {spec.name!r} failed (see {failed / 'build.log'})",
                             command=exc.command, returncode=exc.returncode, log=exc.log,
                             folder=str(failed)) from None
        except BaseException:
            cache.keep_failed(tmp, root, key)
            raise
        manifest = {
            "model": spec.name, "content_hash": spec.content_hash, "build_hash": digest,
            "rodgen": spec.version, "method": spec.method, "module": module_file,
            "files": sorted(files.files), "cflags": options.cflags(),
            "compiler": " ".join(find_compiler(options.compiler)),
            "compile_seconds": round(time.perf_counter() - start, 3),
        }
        cache.publish(tmp, final, manifest)
    return final / module_file


def build(source: Union[AnyModel, Equations], *, build_dir: Union[str, Path, None] = None,
          method: Optional[str] = None, options: Optional[BuildOptions] = None,
          codegen: Optional[CodegenOptions] = None, progress: Optional[bool] = None) -> "CompiledModel":
    """Derive (if given a Model), generate, compile (or reuse the cache) and import a model.

    Parameters
    ----------
    source : a Model (validated on the way in), a ValidModel, or its Equations.
    build_dir : the cache folder (default ``./build`` relative to the working directory).
    method : derivation method when ``source`` is a Model (default: the recursive method).
    options : BuildOptions (compiler, optimisation, fast math, extra flags).
    codegen : CodegenOptions.
    progress : show the stages (derive, generate, compile) on stderr; default: when stderr is a terminal.

    Returns
    -------
    CompiledModel : the compiled functions (mass_matrix, forward_dynamics, rhs, ...).
    """
    from ..runtime import CompiledModel
    from ..runtime.progress import Progress
    name = source.model.name if isinstance(source, Equations) else getattr(source, "name", "model")
    with Progress(total=3, desc=f"building {name}", unit="stage", enable=progress) as bar:
        eqs = equations_of(source, method=method)
        bar.update(1)
        files = render(lower(eqs, options=codegen))
        bar.update(1)
        path = compile_files(files, build_dir=build_dir, options=options)
        bar.update(1)
    module = cache.import_module_file(path, files.spec.module)
    return CompiledModel(module, path)


def load_module(path: Union[str, Path]) -> "CompiledModel":
    """Import an already built module file (``<build_dir>/<model>-<hash>/_<model>.<ext>``)."""
    from ..runtime import CompiledModel
    path = Path(path)
    if not path.is_file():
        raise BuildError(f"no compiled module at {path}")
    name = path.name.split(".")[0]
    return CompiledModel(cache.import_module_file(path, name), path)


class _CallableModule(types.ModuleType):
    """``rodgen.build`` is both this package and the function: ``rodgen.build(model)`` works either way."""

    def __call__(self, source: Union[AnyModel, Equations], *, build_dir: Union[str, Path, None] = None,
                 method: Optional[str] = None, options: Optional[BuildOptions] = None,
                 codegen: Optional[CodegenOptions] = None, progress: Optional[bool] = None) -> "CompiledModel":
        return build(source, build_dir=build_dir, method=method, options=options, codegen=codegen,
                     progress=progress)


sys.modules[__name__].__class__ = _CallableModule

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import CompiledModel

__all__ = ["build", "compile_files", "load_module", "build_key", "generate", "BuildOptions", "Optimization",
           "compile_count", "find_compiler", "GeneratedFiles", "CodegenOptions"]
