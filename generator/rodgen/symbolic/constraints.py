"""Constraint rows of a model: contacts, loop closures, coordinate limits.

For every block the symbolic stage returns (docs/ARCHITECTURE.md, "Constraints")

    position c(q)     the rows (contact: tangential position along the ground and
                      gap above it; loop: r_b - r_a; limit: q - lower or upper - q)
    jacobian J(q)     = dc/dq
    bias              = J̇ q̇ = d/dt (J(q)) q̇ = sum_k d(J q̇)/dq_k q̇_k,

so that along a motion that keeps a block's rows constant ``J qdd + J̇ q̇ = 0``
and its force ``λ`` enters the equations as ``M qdd + bias = B u + Jᵀ λ``.
Everything is built from the Cartesian marker positions ``Equations.points``,
which every derivation method provides, in the coordinates of the equations
(the independent ones for a model with couplings), so the rows are the same
functions of q for every method.

Ground frame: slope ``s``, height ``h``; tangent ``t = (cos s, sin s)``, normal
``n = (-sin s, cos s)``; a point ``r`` has tangential position ``t·r`` and gap
``n·r - h cos s``.

A loop must be closed at the model's initial coordinates (evaluated with the
default parameter values); otherwise :func:`constraint_equations` raises a
:class:`~rodgen.errors.ModelError` naming the loop and the gap in metres.
"""
from __future__ import annotations

import math

import sympy as sp

from ..errors import ModelError
from ..model.expr import Expression
from .convert import to_sympy
from .equations import ConstraintEquations, Equations

#: A loop whose markers are further apart than this (metres) at the initial coordinates is refused.
LOOP_TOLERANCE = 1e-6


def constraint_equations(eqs: Equations) -> list[ConstraintEquations]:
    """The constraint blocks of ``eqs.model`` in the order contacts, loops, limits (empty if none)."""
    model = eqs.model
    if not (model.contacts or model.loops or model.limits()):
        return []
    names: dict[str, sp.Symbol] = {str(s): s for s in eqs.params}
    q, qd = list(eqs.q), list(eqs.qd)

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, names)

    inline = _inliner(eqs)

    def point(name: str) -> sp.Matrix:
        return inline(eqs.points[name])

    def block(name: str, kind: str, position: sp.Matrix, friction: sp.Expr | None = None) -> ConstraintEquations:
        J = position.jacobian(q) if q else sp.zeros(position.shape[0], 0)
        Jqd = J * sp.Matrix(qd)
        bias = Jqd.jacobian(q) * sp.Matrix(qd) if q else sp.zeros(position.shape[0], 1)
        return ConstraintEquations(name, kind, position, J, bias, friction)

    out: list[ConstraintEquations] = []
    s, height = X(model.ground.slope), X(model.ground.height)
    t = sp.Matrix([sp.cos(s), sp.sin(s)])
    n = sp.Matrix([-sp.sin(s), sp.cos(s)])
    for c in model.contacts:
        r = point(c.marker)
        pos = sp.Matrix([(t.T * r)[0], (n.T * r)[0] - height * sp.cos(s)])
        out.append(block(c.name, "contact", pos, X(c.friction)))
    for lp in model.loops:
        out.append(block(lp.name, "loop", point(lp.b) - point(lp.a)))
    coord = {str(sym): sym for sym in q}
    coord.update({str(sym): inline(sp.Matrix([ex]))[0] for sym, ex in eqs.couplings.items()})
    for lim in model.limits():
        x = coord[lim.coordinate]
        row = x - X(lim.bound) if lim.side == "lower" else X(lim.bound) - x
        out.append(block(lim.name, "limit", sp.Matrix([row])))
    _check_loops(eqs, out)
    return out


def _inliner(eqs: Equations):  # type: ignore[no-untyped-def]
    """Substitute the recursive method's intermediate symbols, if an expression refers to any."""
    if not eqs.assignments:
        return lambda m: m
    known = {s for s, _ in eqs.assignments}
    subs: dict[sp.Symbol, sp.Expr] = {}
    for sym, ex in eqs.assignments:
        subs[sym] = ex.xreplace(subs)

    def inline(m: sp.Matrix) -> sp.Matrix:
        return m.xreplace(subs) if m.free_symbols & known else m
    return inline


def initial_values(eqs: Equations) -> dict[sp.Symbol, float]:
    """The model's initial coordinates (of the equations' coordinates) and default parameters, by symbol."""
    pvals = eqs.model.parameter_values()
    vals: dict[sp.Symbol, float] = {s: float(v) for s, v in eqs.param_values.items()}
    for sym, c in zip(eqs.q, eqs.coordinates):
        vals[sym] = c.initial.evaluate(pvals)
    return vals


def _check_loops(eqs: Equations, blocks: list[ConstraintEquations]) -> None:
    loops = {lp.name: lp for lp in eqs.model.loops}
    vals = None
    for b in blocks:
        if b.kind != "loop":
            continue
        vals = vals or initial_values(eqs)
        dx, dy = (float(e.xreplace(vals)) for e in b.position)
        gap = math.hypot(dx, dy)
        if not gap <= LOOP_TOLERANCE:
            lp = loops[b.name]
            raise ModelError(
                f"the loop is not closed at the initial coordinates: markers {lp.a!r} and {lp.b!r} are "
                f"{gap:.6g} m apart (dx = {dx:.6g} m, dy = {dy:.6g} m; tolerance {LOOP_TOLERANCE:g} m); "
                f"set the links' initial angles and lengths so that the markers meet",
                source=eqs.model.source, where=f"loop {b.name!r}")


__all__ = ["LOOP_TOLERANCE", "constraint_equations", "initial_values"]
