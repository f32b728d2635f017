"""Lagrange's equations of the second kind: the slow, independent reference.

This module shares no kinematics with the other methods: it walks the model
itself and writes every position in plain Cartesian components with
``cos``/``sin`` of the absolute link angles (not the direction form of
:mod:`rodgen.symbolic.kinematics`), differentiates positions for the
velocities, and differentiates the energies:

    T = sum m |v|^2 / 2 + sum I w^2 / 2,   V_g = -sum m g.r,
    M_ij = d2T/dqd_i dqd_j
    h_i  = sum_j d2T/dqd_i dq_j qd_j - dT/dq_i
    G_i  = dV_g/dq_i,  K_i = dV_s/dq_i (springs),  D_i = dR/dqd_i (Rayleigh's function),
    B_ij = d2W/dq_i du_j (W the virtual work of the inputs).

What it has in common with the other methods is only the naming of the
symbols (coordinate ``x``, rate ``x'``, acceleration ``x''``, inputs and
parameters by their names; so the results can be compared term by term), the
conversion of the model's expressions (:func:`~rodgen.symbolic.convert.to_sympy`)
and the names of the marker points.
"""
from __future__ import annotations

from typing import Optional, Union

import sympy as sp

from ..model.expr import Expression, as_expression
from ..model.valid import ValidLink, ValidModel, ValidPointMass, ValidRod, ValidSegment
from .convert import to_sympy
from .equations import Equations

Vec = tuple[sp.Expr, sp.Expr]
_0 = sp.Integer(0)


class _Geometry:
    """Absolute angles, lengths and Cartesian positions of a validated model."""

    def __init__(self, model: ValidModel) -> None:
        self.model = model
        self.params = [sp.Symbol(p.name, real=True) for p in model.parameters]
        self.pmap = {p.name: s for p, s in zip(model.parameters, self.params)}
        coords = model.coordinates()
        self.q = [sp.Symbol(c.name, real=True) for c in coords]
        self.qd = [sp.Symbol(c.name + "'", real=True) for c in coords]
        self.qdd = [sp.Symbol(c.name + "''", real=True) for c in coords]
        self.qmap = {c.name: s for c, s in zip(coords, self.q)}
        self.u = [sp.Symbol(i.name, real=True) for i in model.inputs()]
        self.umap = {str(s): s for s in self.u}
        self.links = {lk.name: lk for lk in model.links}
        self.theta: dict[str, sp.Expr] = {}
        self.joint: dict[str, Vec] = {}
        self.base: Vec = (_0, _0)
        if model.base == "floating":
            self.base = (self.qmap[model.base_coordinates[0]], self.qmap[model.base_coordinates[1]])
        for lk in model.links:
            self._place(lk)

    def X(self, v: Expression) -> sp.Expr:
        return to_sympy(v, self.pmap)

    def length(self, seg: ValidSegment) -> sp.Expr:
        return self.qmap[seg.extension.coordinate] if seg.extension else self.X(seg.length)

    def _place(self, lk: ValidLink) -> None:
        """Angle and joint position of a link (its parent placed first)."""
        if lk.name in self.theta:
            return
        own = self.qmap[lk.coordinate] + self.X(lk.offset)
        if lk.parent is None:
            self.theta[lk.name] = own
            self.joint[lk.name] = (self.base[0] + self.X(lk.origin[0]), self.base[1] + self.X(lk.origin[1]))
            return
        parent = self.links[lk.parent]
        self._place(parent)
        self.theta[lk.name] = own if lk.angle == "absolute" else self.theta[parent.name] + own
        names = [s.name for s in parent.segments]
        if lk.at == "start":
            self.joint[lk.name] = self.joint[parent.name]
        elif lk.at == "end":
            self.joint[lk.name] = self.along(parent, sum((self.length(s) for s in parent.segments), _0), _0)
        elif lk.at in names:
            k = names.index(lk.at)
            self.joint[lk.name] = self.along(parent, sum((self.length(s) for s in parent.segments[:k + 1]), _0), _0)
        else:
            mk = next(m for m in parent.markers if m.name == lk.at)
            self.joint[lk.name] = self.station(parent, mk.segment, mk.fraction, mk.offset, mk.lateral)

    def along(self, lk: ValidLink, s: sp.Expr, lateral: sp.Expr) -> Vec:
        """The point ``s`` along the axis of a link and ``lateral`` to its left."""
        th = self.theta[lk.name]
        x0, y0 = self.joint[lk.name]
        return (x0 + s * sp.cos(th) - lateral * sp.sin(th), y0 + s * sp.sin(th) + lateral * sp.cos(th))

    def station(self, lk: ValidLink, segment: Optional[str], fraction: Expression, offset: Expression,
                lateral: Expression) -> Vec:
        """``fraction`` of a segment's current length plus ``offset`` from its start (the link's joint
        when no segment is named), ``lateral`` to the left."""
        s = self.X(offset)
        if segment is not None:
            names = [sg.name for sg in lk.segments]
            k = names.index(segment)
            s += sum((self.length(sg) for sg in lk.segments[:k]), _0) + self.X(fraction) * self.length(lk.segments[k])
        return self.along(lk, s, self.X(lateral))

    def rate(self, expr: sp.Expr) -> sp.Expr:
        return sp.Add(*[sp.diff(expr, qi) * qdi for qi, qdi in zip(self.q, self.qd)])


def derive_lagrange(model: ValidModel) -> Equations:
    """Equations of motion by Lagrange's equations from the model's own Cartesian positions."""
    geo = _Geometry(model)
    q, qd = geo.q, geo.qd
    n = len(q)
    gx, gy = geo.X(model.gravity[0]), geo.X(model.gravity[1])
    points: dict[str, Vec] = {}
    if model.base == "floating":
        points["base"] = geo.base
    T: sp.Expr = _0
    Vg: sp.Expr = _0
    Vs: sp.Expr = _0
    R: sp.Expr = _0
    W: sp.Expr = _0
    for lk in model.links:
        th = geo.theta[lk.name]
        parent_th = geo.theta[lk.parent] if lk.parent is not None else _0
        joint_angle = th - parent_th - geo.X(lk.offset)
        points[f"{lk.name}.joint"] = geo.joint[lk.name]
        jt = lk.joint
        if jt.torque is not None:
            W += geo.umap[jt.torque] * joint_angle
        if jt.spring is not None:
            Vs += geo.X(jt.spring.stiffness) * (joint_angle - geo.X(jt.spring.rest)) ** 2 / 2
        if jt.damping is not None:
            R += geo.X(jt.damping) * geo.rate(joint_angle) ** 2 / 2
        for sg in lk.segments:
            points[f"{sg.name}.end"] = geo.station(lk, sg.name, as_expression(1), as_expression(0),
                                                   as_expression(0))
            ext = sg.extension
            if ext is not None:
                ell = geo.length(sg)
                if ext.force is not None:
                    W += geo.umap[ext.force] * ell
                if ext.spring is not None:
                    Vs += geo.X(ext.spring.stiffness) * (ell - geo.X(ext.spring.rest)) ** 2 / 2
                if ext.damping is not None:
                    R += geo.X(ext.damping) * geo.rate(ell) ** 2 / 2
            bodies: list[tuple[str, Union[ValidPointMass, ValidRod], sp.Expr]] = [
                (pm.name or f"{sg.name}.m{i}", pm, _0) for i, pm in enumerate(sg.masses)]
            bodies += [(rd.name or f"{sg.name}.rod{i}", rd, geo.X(rd.inertia)) for i, rd in enumerate(sg.rods)]
            for name, body, inertia in bodies:
                r = geo.station(lk, sg.name, body.fraction, body.offset, body.lateral)
                points[name] = r
                m = geo.X(body.mass)
                vx, vy = geo.rate(r[0]), geo.rate(r[1])
                T += m * (vx ** 2 + vy ** 2) / 2 + inertia * geo.rate(th) ** 2 / 2
                Vg += -m * (gx * r[0] + gy * r[1])
        for mk in lk.markers:
            points[mk.name] = geo.station(lk, mk.segment, mk.fraction, mk.offset, mk.lateral)

    dT_dqd = [sp.diff(T, s) for s in qd]
    M = sp.zeros(n, n)
    h = sp.zeros(n, 1)
    for i in range(n):
        for j in range(i, n):
            M[i, j] = M[j, i] = sp.diff(dT_dqd[i], qd[j])
        h[i] = sp.Add(*[sp.diff(dT_dqd[i], qj) * qdj for qj, qdj in zip(q, qd)]) - sp.diff(T, q[i])
    return Equations(
        model=model, method="lagrange", q=q, qd=qd, qdd=geo.qdd, u=geo.u, params=geo.params,
        param_values={s: p.value for p, s in zip(model.parameters, geo.params)},
        M=M, h=h, G=sp.Matrix([sp.diff(Vg, s) for s in q]), K=sp.Matrix([sp.diff(Vs, s) for s in q]),
        D=sp.Matrix([sp.diff(R, s) for s in qd]),
        B=sp.Matrix(n, len(geo.u), lambda i, j: sp.diff(W, q[i], geo.u[j])), T=T, V=Vg + Vs,
        points={nm: sp.Matrix(r) for nm, r in points.items()},
        coordinates=model.coordinates(), inputs=model.inputs())
