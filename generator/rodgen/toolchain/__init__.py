"""Toolchain stage: compile a model's generated C, cache the result, load it.

    robot = rodgen.build(model)                        # found in the cache, or derive, generate, compile; load
    robot = rodgen.build(model, build_dir="out", options=BuildOptions(optimization="O3"))
    robot = rodgen.toolchain.load_module("/path/exo5-0123456789ab/libexo5.so")   # a model built before

A model compiles into a plain shared library (its own C and the runtime's
Cholesky; no Python headers, no Cython) in ``<build_dir>/<model>-<hash12>/``,
``build_dir`` defaulting to ``<user cache>/models`` (``$RODGEN_CACHE_DIR``,
``$XDG_CACHE_HOME/rodgen`` or ``~/.cache/rodgen``), and looked up first by the key of
:mod:`rodgen.toolchain.key` (known before derivation: a hit loads without
SymPy). The folder's hash covers the generated sources
(the runtime's C copied beside them included), the compiler and its flags,
rodgen's version and the platform; a folder with that hash is reused without
compiling. The library is bound through its table (``<prefix>_model()``) by
rodgen's runtime extension, which is compiled once per machine into the user
cache (:mod:`rodgen.toolchain.runtime`).
"""
from __future__ import annotations

import ctypes
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ..codegen.options import DEFAULT_METHOD, CodegenOptions
from ..errors import BuildError
from ..model.valid import MODEL_TYPES, VALID_TYPES, AnyModel, ValidModel, valid_model
from . import cache
from .compiler import (
    BuildOptions,
    Optimization,
    compile_count,
    compile_model,
    find_compiler,
    library_suffix,
    model_cflags,
    model_key_parts,
)
from .runtime import cache_dir, load_runtime, runtime_path

#: Runtime C files a model's library compiles with its own C (the rest lives in the runtime extension).
MODEL_RUNTIME_SOURCES = ("rodgen_linalg.c",)


def build_key(files: GeneratedFiles, options: BuildOptions) -> str:
    """The hash of a build (64 hex digits); its first 12 digits name the folder."""
    from .. import __version__
    compiler = find_compiler(options.compiler)
    parts = {
        "sources": files.digest(),
        "rodgen": __version__,
        **model_key_parts(compiler, options),
        "library": library_suffix(),
        "platform": sys.platform,
    }
    return cache.build_hash(parts)


def library_name(prefix: str) -> str:
    """File name of a model's shared library: ``lib<prefix>.so`` (``.dylib``, ``.dll``)."""
    return f"lib{prefix}{library_suffix()}"


def compile_files(files: GeneratedFiles, *, build_dir: Union[str, Path, None] = None,
                  options: Optional[BuildOptions] = None) -> Path:
    """Compile generated files into ``<build_dir>/<model>-<hash12>/`` (or reuse it); return the library path."""
    options = options or BuildOptions()
    root = Path(build_dir) if build_dir is not None else cache.default_build_dir()
    spec = files.spec
    digest = build_key(files, options)
    key = f"{spec.prefix}-{digest[:12]}"
    lib_file = library_name(spec.prefix)

    def make(tmp: Path) -> dict[str, object]:
        start = time.perf_counter()
        files.write(tmp)
        sources = [spec.source] + [s for s in MODEL_RUNTIME_SOURCES if s in files.files]
        compile_model(tmp, sources=sources, library=lib_file, options=options, macro=spec.macro,
                      groups=spec.compile_groups())
        return {
            "model": spec.name, "content_hash": spec.content_hash, "build_hash": digest,
            "rodgen": spec.version, "method": spec.method, "library": lib_file, "prefix": spec.prefix,
            "files": sorted(files.files), "cflags": model_cflags(options),
            "compiler": " ".join(find_compiler(options.compiler)),
            "compile_seconds": round(time.perf_counter() - start, 3),
        }

    def failure(exc: BuildError, failed: Path) -> BuildError:
        return BuildError(f"building the model {spec.name!r} failed (see {failed / 'build.log'})",
                          command=exc.command, returncode=exc.returncode, log=exc.log, folder=str(failed))

    return cache.build_folder(root, key, lib_file, make, failure,
                              advice="choose a writable build_dir= (or $RODGEN_CACHE_DIR) with free space")


def build_codegen(codegen: CodegenOptions, nq: int, *, defer_jacobian: bool = True) -> tuple[CodegenOptions, bool]:
    """The code-stage options :func:`build` compiles a model of ``nq`` coordinates with, and whether its RHS
    Jacobian is deferred to the first use (``codegen.jacobian`` None, code in double)."""
    deferred = defer_jacobian and codegen.jacobian is None and codegen.wants_jacobian(nq)
    return (replace(codegen, jacobian=False) if deferred else codegen), deferred


def build(source: Union[AnyModel, "Equations"], *, build_dir: Union[str, Path, None] = None,
          method: Optional[str] = None, options: Optional[BuildOptions] = None,
          codegen: Optional[CodegenOptions] = None, progress: Optional[bool] = None,
          defer_jacobian: bool = True, equations: Optional["Equations"] = None) -> "CompiledModel":
    """Load a model from the build cache, or derive, generate and compile it first.

    For a Model or ValidModel the cache is looked up first, by a key known before derivation
    (:mod:`rodgen.toolchain.key`: the validated model, ``method``, the options, the compiler, the
    templates and rodgen's version): a hit loads the compiled library at once, without deriving or
    importing SymPy. A miss derives, generates and compiles into ``<build_dir>/<model>-<hash12>/``
    (the hash of the generated sources) and records the key.

    Parameters
    ----------
    source : a Model (validated on the way in), a ValidModel, or its Equations (these are already
        derived; their generated sources are hashed to find the build).
    build_dir : the cache folder (default ``<user cache>/models``, see ``toolchain.cache.default_build_dir``).
    method : derivation method when ``source`` is a Model (default: ``rodgen.codegen.DEFAULT_METHOD``,
        the recursive method).
    options : BuildOptions (compiler, optimisation, fast math, extra flags).
    codegen : CodegenOptions.
    progress : show the stages (derive, generate, compile) on stderr; default: when stderr is a terminal.
    defer_jacobian : with ``codegen.jacobian`` None (automatic), the model is compiled without its
        exact RHS Jacobian, and the
        Jacobian is generated and compiled on its first use (``rhs_jacobian``, ``ode().jac``) as a
        second build of the same model with ``CodegenOptions(jacobian=True)``, cached like any
        build; a model that never uses it neither derives, prints nor compiles it.
        False compiles it now, into the same library (as ``CodegenOptions(jacobian=True)`` does).
    equations : the model's Equations, already derived (``rodgen.derive(model, method=...)``): the build
        takes their method (``method`` may only repeat it) and, when the cache has no build of the model by
        that method, generates from them instead of deriving. ``source`` must be the model they were
        derived from (a BuildError otherwise). The library is the same as ``rodgen.build(model,
        method=equations.method)``'s, found under the same cache key.

    Returns
    -------
    CompiledModel : the compiled functions (mass_matrix, forward_dynamics, rhs, ...).
    """
    options = options or BuildOptions()
    if codegen is not None and codegen.real != "double":
        raise BuildError(f"code in {codegen.real} is for firmware (rodgen generate --real {codegen.real}); "
                         f"rodgen's runtime computes in double: build with the default real='double'")
    codegen = codegen or CodegenOptions()
    if equations is not None and not isinstance(source, MODEL_TYPES):
        raise BuildError(f"equations= goes with the model they were derived from, not a {type(source).__name__} "
                         f"(rodgen.build(equations) builds Equations alone)")
    root = (Path(build_dir) if build_dir is not None else cache.default_build_dir()).resolve()
    key = None
    now, deferred = codegen, False
    builder = source if hasattr(source, "links") and hasattr(source, "parameter") else None
    if codegen.regressor and builder is None:
        raise BuildError("CodegenOptions(regressor=True) needs the model itself (rodgen.Model, rodgen.SpatialModel "
                         f"or rodgen.load(...)), not {type(source).__name__}")
    if isinstance(source, MODEL_TYPES):
        from .key import model_key
        source = valid_model(source)
        if equations is not None:
            method = _equations_method(source, equations, method)
        method = str(getattr(method, "value", method)) if method is not None else DEFAULT_METHOD
        # decided before derivation, so that the key names what the library holds
        now, deferred = build_codegen(codegen, len(source.independent_coordinates()), defer_jacobian=defer_jacobian)
        key = f"{source.name.lower()}-{model_key(source, method, now, options)[:24]}"
        folder = cache.read_index(root, key)
        if folder is not None:
            lib_file = library_name(source.name.lower())
            if cache.complete(folder, lib_file):
                robot = load_module(folder / lib_file)
                robot.model = source
                if deferred:
                    if equations is not None:
                        _defer_jacobian(robot, equations, root, method, options, codegen, key_of=source)
                    else:
                        _defer_jacobian(robot, source, root, method, options, codegen)
                return robot
    from ..codegen import equations_of
    from ..codegen.lower import lower
    from ..codegen.render import render
    from ..runtime.progress import Progress
    name = source.name if isinstance(source, VALID_TYPES) else source.model.name
    with Progress(total=3, desc=f"building {name}", unit="stage", enable=progress) as bar:
        eqs = equations if equations is not None else equations_of(source, method=method)
        if codegen.regressor:
            from ..symbolic.regressor import attach_regressor
            eqs = attach_regressor(eqs, builder)
        bar.update(1)
        if key is None:
            now, deferred = build_codegen(codegen, len(eqs.q), defer_jacobian=defer_jacobian)
        keep_compiled_templates()
        files = render(lower(eqs, options=now))
        bar.update(1)
        path = compile_files(files, build_dir=root, options=options)
        bar.update(1)
    if key is not None:
        cache.write_index(root, key, path.parent)
    robot = load_module(path)
    robot.model = eqs.model
    if deferred:
        _defer_jacobian(robot, eqs, root, method, options, codegen,
                        key_of=eqs.model if equations is not None else None)
    return robot


def keep_compiled_templates() -> None:
    """Keep the code stage's compiled Jinja templates in the user cache, in a folder named by rodgen's version,
    Jinja's and the generator's digest (:func:`rodgen.codegen.render.keep_compiled_templates`)."""
    import hashlib

    import jinja2

    from .. import __version__
    from ..codegen.render import keep_compiled_templates as keep
    from .key import generator_digest
    text = f"{__version__}\0{jinja2.__version__}\0{sys.version_info[:2]}\0{generator_digest()}"
    keep(cache.user_cache_dir() / f"templates-{hashlib.sha256(text.encode()).hexdigest()[:12]}")


def _equations_method(source: AnyModel, equations: "Equations", method: Optional[str]) -> str:
    """The method of a build given ``equations=``: theirs, after checking they belong to ``source`` (validated)."""
    from ..symbolic.equations import Equations
    if not isinstance(equations, Equations):
        raise TypeError(f"equations= takes the Equations rodgen.derive returned, got {type(equations).__name__}")
    own = str(getattr(equations.method, "value", equations.method))
    if method is not None and str(getattr(method, "value", method)) != own:
        raise BuildError(f"method={method!r} was given with Equations derived by {own!r}; leave method out (the "
                         f"build takes the Equations' method) or derive by {method!r}")
    if source != equations.model:
        raise BuildError(f"the Equations given with equations= were derived from another model than "
                         f"{source.name!r} (or from an earlier state of it); derive the model as it is now")
    return own


def _defer_jacobian(robot: "CompiledModel", source: Union[ValidModel, "Equations"], root: Path,
                    method: Optional[str], options: BuildOptions, codegen: CodegenOptions,
                    key_of: Optional[AnyModel] = None) -> None:
    """Give ``robot`` the build of its RHS Jacobian: the same source with ``CodegenOptions(jacobian=True)``
    (with ``key_of``, the model whose cache key the Equations ``source`` build under, as ``equations=``)."""
    full = replace(codegen, jacobian=True)
    if key_of is not None:
        eqs = source
        robot.defer_jacobian(lambda: build(key_of, build_dir=root, options=options, codegen=full,
                                           progress=False, equations=eqs))  # type: ignore[arg-type]
        return
    how = None if not isinstance(source, VALID_TYPES) else method
    robot.defer_jacobian(lambda: build(source, build_dir=root, method=how, options=options, codegen=full,
                                       progress=False))




def load_module(path: Union[str, Path]) -> "CompiledModel":
    """Load a model's shared library built before (``<build_dir>/<model>-<hash>/lib<model>.so``).

    A library with its build's manifest beside it must have the SHA-256 the manifest records (BuildError
    otherwise: the file was changed or damaged after the build).

    The library is opened once per process (``ctypes``); its table ``<prefix>_model()`` is bound by
    the runtime extension (built into the user cache on first use).
    """
    from ..runtime import CompiledModel
    path = Path(path)
    if not path.is_file():
        raise BuildError(f"no compiled model at {path}")
    name = path.name
    if not (name.startswith("lib") and name.endswith(library_suffix())):
        raise BuildError(f"{path} is not a model library (expected lib<model>{library_suffix()})")
    prefix = name[3:-len(library_suffix())]
    cache.verify_library(path)
    try:
        lib = cache.open_library(path)
    except OSError as exc:
        raise BuildError(f"loading the compiled model {path.name} failed: {exc}", folder=str(path.parent)) from None
    try:
        table = getattr(lib, f"{prefix}_model")
    except AttributeError:
        raise BuildError(f"{path.name} has no function {prefix}_model(): not a rodgen model library",
                         folder=str(path.parent)) from None
    table.restype = ctypes.c_void_p
    table.argtypes = []
    runtime = load_runtime()
    return CompiledModel(runtime.Model(table(), lib), path, runtime)


if TYPE_CHECKING:  # pragma: no cover
    from ..codegen import GeneratedFiles, generate
    from ..runtime import CompiledModel
    from ..symbolic.equations import Equations

#: Names of the code stage re-exported here, imported on first use (the code stage imports SymPy; a build
#: found in the cache needs neither).
_CODEGEN = ("GeneratedFiles", "generate")


def __getattr__(name: str) -> object:
    if name in _CODEGEN:
        from .. import codegen
        return getattr(codegen, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["build", "build_codegen", "compile_files", "load_module", "build_key", "library_name", "generate",
           "BuildOptions", "Optimization", "compile_count", "find_compiler", "GeneratedFiles", "CodegenOptions",
           "load_runtime", "runtime_path", "cache_dir"]
