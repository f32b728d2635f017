"""The symbolic step of a trajectory optimisation problem: its expressions and their exact gradients.

Takes a :class:`~rodgen.optimize.problem.ValidProblem` and returns :class:`ProblemEquations`, everything the
rendering step prints: the objective's integrand L(z, p) and its gradient by a point's variables
z = [q, qd, u], the terminal term Phi(z, T, p) with its gradient by z and the duration T, and the path
constraints with their nonzero partial derivatives (the sparsity pattern within a point). The model's own
derivatives (the RHS Jacobian) are not derived here: the collocation's C calls the compiled model's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import sympy as sp

from ..symbolic.convert import to_sympy
from .problem import DURATION, TIME, OptimizeError, ValidProblem

#: The exact Hessian derives q'' = M^-1 (B u - bias) in closed form: models of at most this many coordinates.
EXACT_HESSIAN_MAX_NQ = 4


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
    #: boundary constraints in the symbols z (first node), ze (last node), T; their nonzero derivatives by
    #: [z, ze, T] (index 2 nz: T, present only for a free duration)
    ze: tuple[sp.Symbol, ...] = ()
    boundary: tuple[sp.Expr, ...] = ()
    boundary_jacobian: tuple[tuple[int, int, sp.Expr], ...] = ()
    #: the exact Hessian (None: IPOPT's limited-memory approximation): the lower triangle, row by row, of
    #: sL d2L/dz2 + sum_i mu_i d2qdd_i/dz2 + sum_k lam_k d2g_k/dz2 (in the symbols sL, mu, lam, the time t)
    #: and of d2Phi/d[z, T]2
    point_hessian: Optional[tuple[sp.Expr, ...]] = None
    terminal_hessian: Optional[tuple[sp.Expr, ...]] = None
    sL: Optional[sp.Symbol] = None
    mu: tuple[sp.Symbol, ...] = ()
    lam: tuple[sp.Symbol, ...] = ()
    t: Optional[sp.Symbol] = None
    #: the contact forces (every constraint row of a model with contacts held; none otherwise), read from
    #: ``z[nz + r]``: the integrand's gradient and the path Jacobian are by [z, w] (the C chains them)
    w: tuple[sp.Symbol, ...] = ()
    #: the boundary constraints' Hessian weighted by their multipliers ``bl``: the nonzeros of the lower
    #: triangle by [z, ze, T] (index 2 nz: T) as (row, column, expression), row >= column
    bl: tuple[sp.Symbol, ...] = ()
    boundary_hessian: tuple[tuple[int, int, sp.Expr], ...] = ()
    #: "differences" ("forward-differences"): the points' blocks of the Hessian are central (forward)
    #: differences of the points' exact Lagrangian gradients in the collocation's C (point_hessian is
    #: empty); the terminal and boundary terms are exact
    differences: bool = False
    forward: bool = False
    #: the free parameters (indices into p) and the expressions' derivatives by them: the integrand's and the
    #: terminal term's [nfree], the path constraints' and the boundary constraints' dense, row by row
    free: tuple[int, ...] = ()
    integrand_pgradient: tuple[sp.Expr, ...] = ()
    terminal_pgradient: tuple[sp.Expr, ...] = ()
    path_pjacobian: tuple[sp.Expr, ...] = ()
    boundary_pjacobian: tuple[sp.Expr, ...] = ()


def _lower(expr: sp.Expr, xs: tuple[sp.Symbol, ...]) -> tuple[sp.Expr, ...]:
    """The lower triangle of the Hessian of ``expr`` by ``xs``, row by row."""
    grad = [sp.diff(expr, x) for x in xs]
    return tuple(sp.diff(grad[r], xs[c]) for r in range(len(xs)) for c in range(r + 1))


def check_exact_hessian(problem: ValidProblem) -> None:
    """OptimizeError unless the exact Hessian can be derived: a model built with its model (not loaded by its
    path) of at most :data:`EXACT_HESSIAN_MAX_NQ` coordinates."""
    cm = problem.model
    if problem.hessian != "exact":
        return
    if getattr(cm, "model", None) is None:
        raise OptimizeError("the exact Hessian derives the model's accelerations: build the model with "
                            "rodgen.build (a library loaded by its path does not know its model)", where="hessian")
    if cm.nq > EXACT_HESSIAN_MAX_NQ:
        raise OptimizeError(f"the exact Hessian is derived for models of at most {EXACT_HESSIAN_MAX_NQ} "
                            f"coordinates (the model {cm.name!r} has {cm.nq}: its accelerations in closed form "
                            f"grow too large to differentiate twice); use hessian='differences' (central "
                            f"differences of the exact first derivatives) or 'limited-memory'",
                            where="hessian")


def dynamics_accelerations(problem: ValidProblem, z: tuple[sp.Symbol, ...], p: tuple[sp.Symbol, ...],
                           t: sp.Symbol) -> list[Any]:
    """q'' = M^-1 (B u - bias) of the problem's model in closed form, in the symbols of a point."""
    check_exact_hessian(problem)
    cm = problem.model
    from ..symbolic import derive
    eqs = derive(cm.model, method=cm.method).expanded()
    n = cm.nq
    subs: dict[Any, Any] = {q: z[i] for i, q in enumerate(eqs.q)}
    subs.update({qd: z[n + i] for i, qd in enumerate(eqs.qd)})
    subs.update({u: z[2 * n + j] for j, u in enumerate(eqs.u)})
    index = {name: k for k, name in enumerate(problem.parameters)}
    subs.update({s: p[index[s.name]] for s in eqs.params if s.name in index})
    subs[eqs.t] = t
    Bu = eqs.B * sp.Matrix(eqs.u) if len(eqs.u) else sp.zeros(n, 1)     # a model without inputs: B is n x 0
    rhs = (Bu - eqs.bias).xreplace(subs)
    M = eqs.M.xreplace(subs)
    return list(M.LUsolve(rhs))


def derive_problem(problem: ValidProblem) -> ProblemEquations:
    """The expressions of ``problem`` and their derivatives (see the module's docstring); with
    ``problem.hessian == "exact"`` also the second derivatives, those of the dynamics from the model's
    accelerations derived in closed form (:func:`dynamics_accelerations`)."""
    z = tuple(sp.Symbol(f"z{i}", real=True) for i in range(len(problem.variables)))
    p = tuple(sp.Symbol(f"p{i}", real=True) for i in range(len(problem.parameters)))
    T = sp.Symbol("T", positive=True)
    t = sp.Symbol("t", real=True)
    w = tuple(sp.Symbol(f"w{r}", real=True) for r in range(problem.nlam))
    names = dict(zip(problem.variables, z))
    names.update({f: wr for f, wr in zip(problem.forces, w) if f})
    names[TIME] = t
    names.update(zip(problem.parameters, p))
    names[DURATION] = T
    L = to_sympy(problem.objective, names) if problem.objective is not None else sp.Integer(0)
    phi = to_sympy(problem.terminal, names) if problem.terminal is not None else sp.Integer(0)
    path = tuple(to_sympy(expr, names) for expr, _, _ in problem.path)
    zw = (*z, *w)
    jac = tuple((k, i, d) for k, g in enumerate(path) for i, zi in enumerate(zw)
                if (d := sp.diff(g, zi)) != 0)
    ze = tuple(sp.Symbol(f"ze{i}", real=True) for i in range(len(problem.variables)))
    ends = {f"{v}_start": zi for v, zi in zip(problem.variables, z)}
    ends.update({f"{v}_end": zi for v, zi in zip(problem.variables, ze)})
    ends.update(zip(problem.parameters, p))
    ends[DURATION] = T
    boundary = tuple(to_sympy(expr, ends) for expr, _, _ in problem.boundary)
    wrt = (*z, *ze, T) if problem.free_duration else (*z, *ze)
    bjac = tuple((k, i, d) for k, b in enumerate(boundary) for i, v in enumerate(wrt) if (d := sp.diff(b, v)) != 0)
    extra: dict[str, Any] = {"ze": ze, "boundary": boundary, "boundary_jacobian": bjac, "t": t, "w": w}
    if problem.free_parameters:
        pf = [p[i] for i, _, _ in problem.free_parameters]
        extra.update(free=tuple(i for i, _, _ in problem.free_parameters),
                     integrand_pgradient=tuple(sp.diff(L, v) for v in pf),
                     terminal_pgradient=tuple(sp.diff(phi, v) for v in pf),
                     path_pjacobian=tuple(sp.diff(g, v) for g in path for v in pf),
                     boundary_pjacobian=tuple(sp.diff(b, v) for b in boundary for v in pf))
    if problem.hessian in ("exact", "differences", "forward-differences"):
        bl = tuple(sp.Symbol(f"bl{k}", real=True) for k in range(len(boundary)))
        blag = sum((b * e for b, e in zip(bl, boundary)), sp.Integer(0))
        bgrad = [sp.diff(blag, v) for v in wrt]
        extra.update(bl=bl, boundary_hessian=tuple((r, c, d) for r in range(len(wrt)) for c in range(r + 1)
                                                   if (d := sp.diff(bgrad[r], wrt[c])) != 0))
    if problem.hessian in ("differences", "forward-differences"):
        extra.update(point_hessian=(), terminal_hessian=_lower(phi, (*z, T)), differences=True,
                     forward=problem.hessian == "forward-differences")
    elif problem.hessian == "exact":
        sL = sp.Symbol("sL", real=True)
        mu = tuple(sp.Symbol(f"mu{i}", real=True) for i in range(problem.nq))
        lam = tuple(sp.Symbol(f"lam{k}", real=True) for k in range(len(path)))
        qdd = dynamics_accelerations(problem, z, p, t)
        lagrangian = sL * L + sum((m * a for m, a in zip(mu, qdd)), sp.Integer(0)) + sum(
            (lk * g for lk, g in zip(lam, path)), sp.Integer(0))
        extra.update(point_hessian=_lower(lagrangian, z), terminal_hessian=_lower(phi, (*z, T)), sL=sL, mu=mu,
                     lam=lam)
    return ProblemEquations(z=z, p=p, T=T, integrand=L, integrand_gradient=tuple(sp.diff(L, zi) for zi in zw),
                            terminal=phi, terminal_gradient=tuple(sp.diff(phi, v) for v in (*z, T)),
                            path=path, path_jacobian=jac, **extra)


__all__ = ["ProblemEquations", "derive_problem"]
