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

    g = M a + bias - B u - Jᵀ λ uses the inverse dynamics of :meth:`Equations.inverse_dynamics`
    (Newton-Euler where the method gives it); k = J a + J̇ qd. Forward-mode derivatives
    (:func:`rodgen.symbolic.derivative.forward_derivatives`): the code grows like 2 nv times the
    inverse dynamics and the constraint rows.
    """
    n = len(eqs.qd)
    if len(eqs.q) != n:
        raise ValueError("constraint partials need nq = nv (no free, spherical or planar joint)")
    jac = sp.Matrix.vstack(*[c.jacobian for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, n)
    bias = sp.Matrix.vstack(*[c.bias for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, 1)
    lam = lambda_symbols(jac.shape[0])
    bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)
    inverse, extra = eqs.inverse_dynamics()
    g = inverse - bu
    if lam:
        g = g - jac.T * sp.Matrix(lam)
    k = jac * sp.Matrix(eqs.qdd) + bias
    assignments, rows = forward_derivatives(eqs.assignments + extra, list(g) + list(k),
                                            list(eqs.q) + list(eqs.qd), prefix="_cp")
    return assignments, lam, rows[:n], rows[n:]
