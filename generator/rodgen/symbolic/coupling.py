"""Coupled coordinates: eliminate dependent coordinates from the equations.

A model may declare *dependent* coordinates as explicit functions of the
independent ones (``Model.couplings``, e.g. the cable transmission of a
deployable boom, ``th2 = -2*th1``, ``th3 = 2*th1``). With

    q_full = f(q),   J = df/dq,   qd_full = J qd,   qdd_full = J qdd + Jd qd

the equations of the full model, ``M qdd_full + h + G + K + D = B u``, are
projected onto the independent coordinates by the principle of virtual work
(the transmission's internal forces do no work along ``J``):

    M_r = J^T M J
    h_r = J^T (M Jd qd + h)
    G_r = J^T G,  K_r = J^T K,  D_r = J^T D,  B_r = J^T B

where everything on the right is evaluated at ``q_full = f(q)``,
``qd_full = J qd``. Energies and marker points are substituted the same
way. Constraint rows (contacts, loops, limits) are projected the same way:
with ``c(q_full)``, ``J_c = dc/dq_full`` and ``b = J_c' qd_full`` of the full model,

    c_r = c(f(q)),   J_r = J_c J,   b_r = b + J_c Jd qd

(from ``c'' = J_c qdd_full + b`` and ``qdd_full = J qdd + Jd qd``).
The reduced :class:`Equations` keep only the independent coordinates,
and record the couplings (``Equations.couplings``, dependent symbol ->
expression of the independent coordinates and parameters) so that a runtime
can recover the full configuration.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from .convert import to_sympy
from .equations import ConstraintEquations, Equations


def coupling_functions(eqs: Equations) -> dict[sp.Symbol, sp.Expr]:
    """Dependent coordinate symbol -> SymPy expression of the independent ones, in coordinate order."""
    model = eqs.model
    names = {str(s): s for s in list(eqs.q) + list(eqs.params)}
    out: dict[sp.Symbol, sp.Expr] = {}
    for s in eqs.q:
        if str(s) in model.couplings:
            out[s] = to_sympy(model.couplings[str(s)], names)
    return out


def reduce_couplings(eqs: Equations) -> Equations:
    """The equations in the independent coordinates of ``eqs.model`` (``eqs`` itself if it has no couplings)."""
    if not eqs.model.couplings or eqs.couplings:
        return eqs
    f = coupling_functions(eqs)
    n = len(eqs.q)
    ind = [i for i, s in enumerate(eqs.q) if s not in f]
    q = [eqs.q[i] for i in ind]
    qd = [eqs.qd[i] for i in ind]
    qdd = [eqs.qdd[i] for i in ind]
    q_full = [f.get(s, s) for s in eqs.q]
    J = sp.Matrix(n, len(q), lambda i, k: sp.diff(q_full[i], q[k]))
    qd_full = J * sp.Matrix(qd)
    # Jd qd: the part of the full accelerations that the independent rates cause
    jdqd = sp.Matrix([sp.Add(*[sp.diff(qd_full[i], q[k]) * qd[k] for k in range(len(q))]) for i in range(n)])
    subs: dict[sp.Expr, sp.Expr] = {s: f[s] for s in f}
    subs.update({eqs.qd[i]: qd_full[i] for i in range(n) if i not in ind})

    def x(e: sp.Matrix) -> sp.Matrix:
        return e.xreplace(subs)

    JT = J.T
    M = x(eqs.M)
    reduced = Equations(
        model=eqs.model, method=eqs.method, q=q, qd=qd, qdd=qdd, u=eqs.u, params=eqs.params,
        param_values=eqs.param_values,
        M=_tidy(JT * M * J), h=_tidy(JT * (M * jdqd + x(eqs.h))), G=_tidy(JT * x(eqs.G)),
        K=_tidy(JT * x(eqs.K)), D=_tidy(JT * x(eqs.D)), B=_tidy(JT * x(eqs.B)),
        T=_tidy(sp.Matrix([eqs.T.xreplace(subs)]))[0], V=_tidy(sp.Matrix([eqs.V.xreplace(subs)]))[0],
        points={k: x(v) for k, v in eqs.points.items()},
        assignments=[(s, e.xreplace(subs)) for s, e in eqs.assignments],
        coordinates=[eqs.coordinates[i] for i in ind], inputs=eqs.inputs,
        couplings=f, constraints=[_project(c, J, jdqd, x) for c in eqs.constraints])
    return reduced


def _project(c: ConstraintEquations, J: sp.Matrix, jdqd: sp.Matrix, x: Callable[[sp.Matrix], sp.Matrix]
             ) -> ConstraintEquations:
    """The rows of one constraint block in the independent coordinates (see the module docstring)."""
    Jc = x(c.jacobian)
    return ConstraintEquations(c.name, c.kind, x(c.position), _tidy(Jc * J), _tidy(x(c.bias) + Jc * jdqd),
                               c.friction, c.kinetic, c.sole)


def _tidy(m: sp.Matrix) -> sp.Matrix:
    """Collect like terms without trigonometric simplification (cheap, keeps the matrix-method form)."""
    return m.applyfunc(lambda e: sp.expand(e) if e.count_ops() < 400 else e)
