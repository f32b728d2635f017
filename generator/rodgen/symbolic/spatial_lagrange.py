"""Lagrange's equations for spatial models: the slow, independent reference for small models.

It shares no recursion with :mod:`rodgen.symbolic.spatial`: it walks the model
itself, writes every link frame as a plain rotation matrix and origin in the
ground frame (an absolute two-angle link directly as ``Rz(phi) Ry(-psi)``),
differentiates them for the velocities (``w = vee(Rᵀ Ṙ)`` in body axes) and
differentiates the energies

    T = sum (m |v_c|² + w_bᵀ I_c w_b) / 2,   V_g = -sum m g·c,
    M = d²T/dqd²,  h_i = sum_j d²T/dqd_i dq_j qd_j - dT/dq_i,  G = dV_g/dq.
"""
from __future__ import annotations

from typing import Optional

import sympy as sp

from ..model.expr import Expression
from ..model.spatial import ValidSpatialLink, ValidSpatialModel
from .common import damper_forces, input_map, spring_energy, spring_forces
from .convert import to_sympy
from .equations import Equations
from .spatial import spatial_kinematics

_0 = sp.Integer(0)


def _rpy(r: sp.Expr, p: sp.Expr, y: sp.Expr) -> sp.Matrix:
    Rx = sp.Matrix([[1, 0, 0], [0, sp.cos(r), -sp.sin(r)], [0, sp.sin(r), sp.cos(r)]])
    Ry = sp.Matrix([[sp.cos(p), 0, sp.sin(p)], [0, 1, 0], [-sp.sin(p), 0, sp.cos(p)]])
    Rz = sp.Matrix([[sp.cos(y), -sp.sin(y), 0], [sp.sin(y), sp.cos(y), 0], [0, 0, 1]])
    return Rz * Ry * Rx


def _axis_angle(a: sp.Matrix, th: sp.Expr) -> sp.Matrix:
    a = a / sp.sqrt((a.T * a)[0])
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return sp.eye(3) + sp.sin(th) * K + (1 - sp.cos(th)) * K * K


def derive_spatial_lagrange(model: ValidSpatialModel) -> Equations:
    k = spatial_kinematics(model)
    pmap = {p.name: s for p, s in zip(model.parameters, k.params)}
    qmap = {str(s): s for s in k.q}

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, pmap)

    def V(v: tuple) -> sp.Matrix:
        return sp.Matrix([X(x) for x in v])

    frame: dict[str, tuple[sp.Matrix, sp.Matrix]] = {}
    bodies: list[tuple[sp.Expr, sp.Matrix, sp.Matrix, sp.Matrix]] = []   # m, world COM, world R, I_c (body axes)
    points: dict[str, sp.Matrix] = {}
    rots: dict[str, sp.Matrix] = {}

    def length(sg: object) -> sp.Expr:
        ext = sg.extension  # type: ignore[attr-defined]
        return qmap[ext.coordinate] if ext is not None else X(sg.length)  # type: ignore[attr-defined]

    def unit(lk: ValidSpatialLink) -> sp.Matrix:
        a = V(lk.along)
        return a / sp.sqrt((a.T * a)[0])

    def station(lk: ValidSpatialLink, segment: Optional[str], fraction: Expression, offset: Expression
                ) -> sp.Matrix:
        s = X(offset)
        if segment is not None:
            names = [sg.name for sg in lk.segments]
            j = names.index(segment)
            s += sum((length(sg) for sg in lk.segments[:j]), _0) + X(fraction) * length(lk.segments[j])
        R, p = frame[lk.name]
        return p + R * unit(lk) * s

    for lk in model.links:   # tree order
        jt = lk.joint
        if lk.parent is None:
            Ra, pa = sp.eye(3), sp.zeros(3, 1)
        else:
            up = model.link_named(lk.parent)
            Rp, pp = frame[up.name]
            names = [s.name for s in up.segments]
            total = sum((length(s) for s in up.segments), _0)
            if lk.at == "start":
                Ra, pa = Rp, pp
            elif lk.at == "end":
                Ra, pa = Rp, pp + Rp * unit(up) * total
            elif lk.at in names:
                j = names.index(lk.at)
                Ra, pa = Rp, pp + Rp * unit(up) * sum((length(s) for s in up.segments[:j + 1]), _0)
            else:
                mk = next(m for m in up.markers if m.name == lk.at)
                Ra = Rp * _rpy(*V(mk.rpy))
                pa = station(up, mk.segment, mk.fraction, mk.offset) + Rp * V(mk.xyz)
        Rj, pj = Ra * _rpy(*V(jt.rpy)), pa + Ra * V(jt.xyz)
        if jt.type == "revolute":
            Rj = Rj * _axis_angle(V(jt.axis), qmap[jt.coordinates[0]] + X(jt.offset))
        elif jt.type == "prismatic":
            a = V(jt.axis)
            pj = pj + Rj * a / sp.sqrt((a.T * a)[0]) * (qmap[jt.coordinates[0]] + X(jt.offset))
        elif jt.type == "two_angle":
            phi, psi = (qmap[c] for c in jt.coordinates)
            own = _axis_angle(sp.Matrix([0, 0, 1]), phi) * _axis_angle(sp.Matrix([0, -1, 0]), psi)
            Rj = own if jt.angles == "absolute" else Rj * own
        frame[lk.name] = (Rj, pj)
        points[f"{lk.name}.joint"], rots[f"{lk.name}.joint"] = pj, Rj
        for b in lk.bodies:
            Rb = _rpy(*V(b.rpy))
            xx, xy, xz, yy, yz, zz = (X(x) for x in b.inertia)
            Ic = Rb * sp.Matrix([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) * Rb.T
            c = pj + Rj * V(b.com)
            bodies.append((X(b.mass), c, Rj, Ic))
            if b.name is not None:
                points[b.name], rots[b.name] = c, Rj
        a = unit(lk)
        for sg in lk.segments:
            points[f"{sg.name}.end"] = station(lk, sg.name, _one(), _zero())
            rots[f"{sg.name}.end"] = Rj
            for pm in sg.masses:
                c = station(lk, sg.name, pm.fraction, pm.offset)
                bodies.append((X(pm.mass), c, Rj, sp.zeros(3, 3)))
                if pm.name is not None:
                    points[pm.name], rots[pm.name] = c, Rj
            for rd in sg.rods:
                c = station(lk, sg.name, rd.fraction, rd.offset)
                bodies.append((X(rd.mass), c, Rj, X(rd.inertia) * (sp.eye(3) - a * a.T)))
                if rd.name is not None:
                    points[rd.name], rots[rd.name] = c, Rj
        for mk in lk.markers:
            points[mk.name] = station(lk, mk.segment, mk.fraction, mk.offset) + Rj * V(mk.xyz)
            rots[mk.name] = Rj * _rpy(*V(mk.rpy))

    q, qd = k.q, k.qd

    def rate(m: sp.Matrix) -> sp.Matrix:
        return m.applyfunc(lambda x: sp.Add(*[sp.diff(x, qi) * qdi for qi, qdi in zip(q, qd)]))

    g = sp.Matrix(k.gravity)
    T: sp.Expr = _0
    Vg: sp.Expr = _0
    for m, c, R, Ic in bodies:
        v = rate(c)
        T += m * (v.T * v)[0] / 2
        if Ic != sp.zeros(3, 3):
            W = R.T * rate(R)
            w = sp.Matrix([W[2, 1], W[0, 2], W[1, 0]])
            T += (w.T * Ic * w)[0] / 2
        Vg += -m * (g.T * c)[0]
    n = len(q)
    dTdqd = [sp.diff(T, x) for x in qd]
    M = sp.Matrix(n, n, lambda i, j: sp.diff(dTdqd[i], qd[j]))
    h = sp.Matrix([sp.Add(*[sp.diff(dTdqd[i], q[j]) * qd[j] for j in range(n)]) - sp.diff(T, q[i])
                   for i in range(n)])
    G = sp.Matrix([sp.diff(Vg, x) for x in q])
    eqs = Equations(model=model, method="lagrange", q=k.q, qd=k.qd, qdd=k.qdd, u=k.u,  # type: ignore[arg-type]
                    params=k.params, param_values=k.param_values, M=M, h=h, G=G,
                    K=spring_forces(k), D=damper_forces(k), B=input_map(k),  # type: ignore[arg-type]
                    T=T, V=Vg + spring_energy(k), points=points,  # type: ignore[arg-type]
                    coordinates=model.coordinates(), inputs=model.inputs())
    eqs.frames = {nm: (points[nm], rots[nm]) for nm in points}
    jac = {}
    for nm in points:
        R = rots[nm]
        cols = []
        for qi in q:
            W = R.diff(qi) * R.T          # skew matrix of the angular velocity per unit rate, ground frame
            cols.append(list(points[nm].diff(qi)) + [W[2, 1], W[0, 2], W[1, 0]])
        jac[nm] = sp.Matrix(cols).T if cols else sp.zeros(6, 0)
    eqs.frame_jacobians = jac
    return eqs


def _one() -> Expression:
    from ..model.expr import as_expression
    return as_expression(1)


def _zero() -> Expression:
    from ..model.expr import as_expression
    return as_expression(0)
