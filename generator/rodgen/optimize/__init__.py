"""Trajectory optimisation by direct collocation over a compiled model's dynamics, solved by IPOPT.

    from rodgen import optimize
    problem = optimize.Problem(model, nodes=41, duration=2.0, objective="tau**2",
                               initial={"phi": 0, "phi_dot": 0}, final={"phi": 3.14159, "phi_dot": 0})
    result = problem.solve()

A stage of its own beside the runtime: :mod:`.problem` states and checks the problem (no SymPy),
:mod:`.derive` derives the gradients of its expressions, :mod:`.render` prints them as C, :mod:`.build`
compiles them with the model-independent collocation (``rodgen_collocation.c``) against IPOPT's C
interface (CasADi's wheel: ``pip install "rodgen[optimize]"``), :mod:`.nlp` binds the library and runs
IPOPT, whose callbacks evaluate every point in one C call with the model's own ``rhs`` and
``rhs_jacobian``; :mod:`.phases` joins several such phases by impact maps and periodicity. See
docs/optimize.md.
"""
from .nlp import CollocationNLP
from .phases import MultiPhase, MultiPhaseNLP, MultiPhaseResult, Periodic, Transition
from .problem import METHODS, OptimizeError, Problem, ValidProblem, rate_name
from .result import OptimizationResult
from .solve import compile_problem, solve

__all__ = ["Problem", "ValidProblem", "OptimizeError", "OptimizationResult", "CollocationNLP", "compile_problem",
           "solve", "rate_name", "METHODS", "MultiPhase", "MultiPhaseNLP", "MultiPhaseResult", "Periodic",
           "Transition"]
