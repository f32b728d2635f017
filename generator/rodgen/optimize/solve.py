"""From a :class:`Problem` to its compiled NLP and its solution: check, derive, render, build, solve."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from .nlp import CollocationNLP
from .problem import Problem, ValidProblem


def quick_key(valid: ValidProblem, compiler: Optional[str]) -> str:
    """The key of a problem's build known before deriving: everything the generated C depends on (the
    expressions' text, the names' order, the duration's freedom, the Hessian and, for the exact one, the
    model's generated code), the sources that shape it, how it is compiled (the compiler, the flags and the
    CPU a native build is for: :func:`~rodgen.toolchain.compiler.compile_key_parts`, as the library's own key)
    and IPOPT's folder."""
    from .. import __version__
    from ..toolchain.compiler import arch_flags, compile_key_parts, default_arch, find_compiler
    from ..toolchain.key import generator_digest
    from .build import CFLAGS, ipopt_paths
    here = Path(__file__).resolve().parent
    sources = hashlib.sha256()
    for f in sorted(here.iterdir()):
        if f.suffix in (".py", ".c"):
            sources.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    cc = find_compiler(compiler)
    arch = default_arch()
    text = json.dumps({
        "variables": valid.variables, "parameters": valid.parameters,
        "objective": valid.objective.text if valid.objective else None,
        "terminal": valid.terminal.text if valid.terminal else None,
        "path": [e.text for e, _, _ in valid.path], "boundary": [e.text for e, _, _ in valid.boundary],
        "free_duration": valid.free_duration, "hessian": valid.hessian, "forces": valid.forces,
        "free_parameters": [i for i, _, _ in valid.free_parameters],
        "model": valid.model.content_hash if valid.hessian == "exact" else None,
        "method": valid.model.method if valid.hessian == "exact" else None,
        "generator": generator_digest(), "optimize": sources.hexdigest(), "rodgen": __version__,
        **compile_key_parts(cc, list(CFLAGS) + arch_flags(cc, arch), arch), "ipopt": str(ipopt_paths()[0])},
        sort_keys=True)
    return "optimize-" + hashlib.sha256(text.encode()).hexdigest()[:24]


def compile_problem(problem: Problem | ValidProblem, *, build_dir: Any = None,
                    compiler: Optional[str] = None) -> CollocationNLP:
    """The problem's NLP, compiled (cached by the generated C's hash): check -> derive -> render -> build.

    A problem built before is found by a key computed without deriving (:func:`quick_key`, an entry of the
    build cache's index), so a warm compile runs no SymPy."""
    from .. import __version__
    from ..toolchain import cache
    from ..toolchain.compiler import library_suffix
    from .build import build_driver, ipopt_paths
    start = time.perf_counter()
    valid = problem.check() if isinstance(problem, Problem) else problem
    ipopt_paths()  # the solver's absence is told before any derivation
    if valid.hessian == "exact":
        from .derive import check_exact_hessian
        check_exact_hessian(valid)
    root = Path(build_dir) if build_dir is not None else cache.default_build_dir()
    key = quick_key(valid, compiler)
    lib = f"librodopt{library_suffix()}"
    folder = cache.read_index(root, key)
    valid.model.jacobian_model()   # a deferred RHS Jacobian is built now, so its time counts as the build's
    if folder is not None and cache.complete(folder, lib):
        library = folder / lib
    else:
        from ..toolchain import keep_compiled_templates
        from .derive import derive_problem
        from .render import render_problem
        keep_compiled_templates()
        eqs = derive_problem(valid)
        source = render_problem(eqs, name="rodopt_problem.c", model=valid.model.name, version=__version__)
        library = build_driver(source, build_dir=root, compiler=compiler)
        cache.write_index(root, key, library.parent)
    return CollocationNLP(valid, library, build_seconds=time.perf_counter() - start)


def solve(problem: Problem, guess: Any = None, *, options: Optional[Mapping[str, Any]] = None,
          build_dir: Any = None) -> Any:
    """Solve ``problem`` (see :meth:`Problem.solve`)."""
    nlp = compile_problem(problem, build_dir=build_dir)
    return nlp.solve(nlp.guess(guess), options=options)


__all__ = ["compile_problem", "solve"]
