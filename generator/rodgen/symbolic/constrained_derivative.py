"""Partial derivatives that the derivatives of the constrained dynamics and of the impact map need.

The constrained dynamics with the rows of an active set held is the KKT system

    g(x, a, λ) = M(q) a + bias(q, qd) - B(q) u - J(q)ᵀ λ = 0
    k(x, a)    = J(q) a + J̇(q, qd) qd                    = 0

in the accelerations ``a`` and the constraint forces ``λ``, x = [q, qd]. Its derivative by x
(the implicit function theorem) needs ∂g/∂x and ∂k/∂x at fixed ``a``, ``λ`` and ``u``; the
runtime's C (``csrc/rodgen_cderiv.c``) solves for ∂a/∂x and ∂λ/∂x with the KKT matrix. The
impact map M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0 reuses the same partials: with qd = 0,
∂g/∂q at (a, λ) = (q̇⁺ - q̇⁻, Λ) minus ∂g/∂q at (0, 0) is ∂(M w - Jᵀ Λ)/∂q, and ∂k/∂q at
a = q̇⁺, qd = 0 is ∂(J q̇⁺)/∂q.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from .derivative import forward_derivatives

if TYPE_CHECKING:
    from .equations import Equations


def lambda_symbols(nrows: int) -> list[sp.Symbol]:
    """The constraint forces λ of the partials, one real symbol per constraint row."""
    return [sp.Symbol(f"_lam{i}", real=True) for i in range(nrows)]


def constraint_partials(eqs: "Equations") -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Symbol],
                                                   list[list[sp.Expr]], list[list[sp.Expr]]]:
    """(assignments, λ symbols, dg, dk): ∂g/∂[q, qd] (nv rows) and ∂k/∂[q, qd] (one row per constraint
    row, the blocks in the order of ``eqs.constraints``), each 2 nv wide, in the symbols q, qd, the
    ``qdd`` symbols (the accelerations a), u, λ, the parameters and the time, through ``assignments``.
    Where the model has free, spherical or planar joints (nq != nv) the columns by q are on the tangent
    space, as the RHS Jacobian's: the derivative along ``q ⊕ δ``, dq/dδ = ∂(dq/dt)/∂qd.

    g = M a + bias - B u - Jᵀ λ, k = J a + J̇ qd. The part M a + bias - B u comes from the derivatives of
    the recursive Newton-Euler algorithm (:meth:`Equations.inverse_dynamics_derivatives`, O(n · depth))
    where they apply, else from forward-mode derivatives of :meth:`Equations.inverse_dynamics`
    (:func:`rodgen.symbolic.derivative.forward_derivatives`, 2 nv times its size); -Jᵀ λ and k are
    differentiated in forward mode through the kinematics' assignments (for solo12's four feet that part is
    about 25 k of the routine's 40 k operations after the code stage's CSE, the Newton-Euler part 15 k).
    """
    n, nq = len(eqs.qd), len(eqs.q)
    jac = sp.Matrix.vstack(*[c.jacobian for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, n)
    bias = sp.Matrix.vstack(*[c.bias for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, 1)
    lam = lambda_symbols(jac.shape[0])
    k = jac * sp.Matrix(eqs.qdd) + bias
    held = -(jac.T * sp.Matrix(lam)) if lam else sp.zeros(n, 1)
    rnea = eqs.inverse_dynamics_derivatives()
    if rnea is None and nq != n:
        raise ValueError("constraint partials of a model with free, spherical or planar joints need the "
                         "derivatives of the recursive Newton-Euler algorithm (a spatial model without coupled "
                         "coordinates)")
    if rnea is None:
        bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)
        inverse, extra = eqs.inverse_dynamics()
        g = inverse - bu + held
        assignments, rows = forward_derivatives(eqs.assignments + extra, list(g) + list(k),
                                                list(eqs.q) + list(eqs.qd), prefix="_cp")
        return assignments, lam, rows[:n], rows[n:]
    derived, rows = forward_derivatives(eqs.assignments, list(held) + list(k), list(eqs.q) + list(eqs.qd),
                                        prefix="_cp")
    if eqs.configuration_rate is not None:     # dq/dδ_j = ∂(dq/dt)/∂qd_j
        tq = eqs.configuration_rate.jacobian(sp.Matrix(eqs.qd))
        rows = [[sp.Add(*[row[i] * tq[i, j] for i in range(nq) if tq[i, j] != 0 and row[i] != 0])
                 for j in range(n)] + row[nq:] for row in rows]
    dg = [[rnea.dq[i, j] + rows[i][j] for j in range(n)] + [rnea.dv[i, j] + rows[i][n + j] for j in range(n)]
          for i in range(n)]
    seen: set[sp.Symbol] = set()
    assignments = []
    for sym, ex in list(rnea.assignments) + derived:   # the equations' own assignments may be in both
        if sym not in seen:
            seen.add(sym)
            assignments.append((sym, ex))
    return assignments, lam, dg, rows[n:]
