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

#: The routines of a model's table the collocation calls (the constraint routines and the parameter partials of the
#: models and problems that need them come with their own options): ``rodgen.build(model,
#: codegen=CodegenOptions(jacobian=True, routines=rodgen.optimize.ROUTINES))`` builds no other of
#: ``rodgen.contract.ELECTIVE_ROUTINES`` (bias, inverse dynamics, energy, points, element forces).
ROUTINES = ("mass_matrix", "input_map", "rhs", "rhs_jacobian")

__all__ = ["Problem", "ValidProblem", "OptimizeError", "OptimizationResult", "CollocationNLP", "compile_problem",
           "solve", "rate_name", "METHODS", "MultiPhase", "MultiPhaseNLP", "MultiPhaseResult", "Periodic",
           "Transition", "ROUTINES"]
