"""From a :class:`Problem` to its compiled NLP and its solution: check, derive, render, build, solve."""
from __future__ import annotations

import time
from typing import Any, Mapping, Optional

from .nlp import CollocationNLP
from .problem import Problem, ValidProblem


def compile_problem(problem: Problem | ValidProblem, *, build_dir: Any = None,
                    compiler: Optional[str] = None) -> CollocationNLP:
    """The problem's NLP, compiled (cached by the generated C's hash): check -> derive -> render -> build."""
    from .. import __version__
    from .build import build_driver, ipopt_paths
    from .derive import derive_problem
    from .render import render_problem
    start = time.perf_counter()
    valid = problem.check() if isinstance(problem, Problem) else problem
    ipopt_paths()  # the solver's absence is told before any derivation
    eqs = derive_problem(valid)
    valid.model.jacobian_table()   # a deferred RHS Jacobian is built now, so its time counts as the build's
    source = render_problem(eqs, name="rodopt_problem.c", model=valid.model.name, version=__version__)
    library = build_driver(source, build_dir=build_dir, compiler=compiler)
    return CollocationNLP(valid, library, build_seconds=time.perf_counter() - start)


def solve(problem: Problem, guess: Any = None, *, options: Optional[Mapping[str, Any]] = None,
          build_dir: Any = None) -> Any:
    """Solve ``problem`` (see :meth:`Problem.solve`)."""
    nlp = compile_problem(problem, build_dir=build_dir)
    return nlp.solve(nlp.guess(guess), options=options)


__all__ = ["compile_problem", "solve"]
