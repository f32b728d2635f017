"""The symbolic step of a trajectory optimisation problem: its expressions and their exact gradients.

Takes a :class:`~rodgen.optimize.problem.ValidProblem` and returns :class:`ProblemEquations`, everything the
rendering step prints: the objective's integrand L(z, p) and its gradient by a point's variables
z = [q, qd, u], the terminal term Phi(z, T, p) with its gradient by z and the duration T, and the path
constraints with their nonzero partial derivatives (the sparsity pattern within a point). The model's own
derivatives (the RHS Jacobian) are not derived here: the collocation's C calls the compiled model's.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..symbolic.convert import to_sympy
from .problem import DURATION, ValidProblem


@dataclass(frozen=True)
class ProblemEquations:
    """The problem's expressions in the symbols ``z`` (a point's variables), ``p`` (parameters), ``T``."""

    z: tuple[sp.Symbol, ...]
    p: tuple[sp.Symbol, ...]
    T: sp.Symbol
    integrand: sp.Expr
    integrand_gradient: tuple[sp.Expr, ...]          # [nz]
    terminal: sp.Expr
    terminal_gradient: tuple[sp.Expr, ...]           # [nz + 1]: z, then T
    path: tuple[sp.Expr, ...]
    path_jacobian: tuple[tuple[int, int, sp.Expr], ...]   # (constraint, variable of z, derivative) nonzeros


def derive_problem(problem: ValidProblem) -> ProblemEquations:
    """The expressions of ``problem`` and their derivatives (see the module's docstring)."""
    z = tuple(sp.Symbol(f"z{i}", real=True) for i in range(len(problem.variables)))
    p = tuple(sp.Symbol(f"p{i}", real=True) for i in range(len(problem.parameters)))
    T = sp.Symbol("T", positive=True)
    names = dict(zip(problem.variables, z))
    names.update(zip(problem.parameters, p))
    names[DURATION] = T
    L = to_sympy(problem.objective, names) if problem.objective is not None else sp.Integer(0)
    phi = to_sympy(problem.terminal, names) if problem.terminal is not None else sp.Integer(0)
    path = tuple(to_sympy(expr, names) for expr, _, _ in problem.path)
    jac = tuple((k, i, d) for k, g in enumerate(path) for i, zi in enumerate(z)
                if (d := sp.diff(g, zi)) != 0)
    return ProblemEquations(z=z, p=p, T=T, integrand=L, integrand_gradient=tuple(sp.diff(L, zi) for zi in z),
                            terminal=phi, terminal_gradient=tuple(sp.diff(phi, v) for v in (*z, T)),
                            path=path, path_jacobian=jac)


__all__ = ["ProblemEquations", "derive_problem"]
