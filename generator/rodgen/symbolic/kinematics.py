"""Planar kinematics of a model, shared by the matrix and recursive methods (the Lagrange reference has its own).

Positions are kept in *direction form*, the form of Borisov's closed-form
matrices: a point is

    r = c + sum_a ( A_a e(theta_a) + B_a n(theta_a) ),

with c a constant (or base-coordinate) vector, e(theta) = (cos theta,
sin theta) the unit vector along a link at absolute angle theta and
n(theta) = (-sin theta, cos theta) the normal. Dot products of such vectors
are sums of ``cos(theta_a - theta_b)`` and ``sin(theta_a - theta_b)``
(C_ij and S_ij in the thesis) without trigonometric simplification.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import sympy as sp

from ..model.expr import Expression, as_expression
from ..model.valid import ValidLink, ValidModel
from .convert import to_sympy


@dataclass
class DVec:
    """A planar vector in direction form (see module docstring)."""

    c: tuple[sp.Expr, sp.Expr] = (sp.Integer(0), sp.Integer(0))
    terms: dict[sp.Expr, tuple[sp.Expr, sp.Expr]] = field(default_factory=dict)

    def __add__(self, other: "DVec") -> "DVec":
        out = dict(self.terms)
        for ang, (a, b) in other.terms.items():
            a0, b0 = out.get(ang, (sp.Integer(0), sp.Integer(0)))
            out[ang] = (a0 + a, b0 + b)
        return DVec((self.c[0] + other.c[0], self.c[1] + other.c[1]), out)

    def scale(self, k: sp.Expr) -> "DVec":
        return DVec((k * self.c[0], k * self.c[1]), {a: (k * x, k * y) for a, (x, y) in self.terms.items()})

    @staticmethod
    def along(theta: sp.Expr, a: sp.Expr, b: sp.Expr = sp.Integer(0)) -> "DVec":
        """a e(theta) + b n(theta)."""
        return DVec(terms={theta: (a, b)})

    def map(self, fn) -> "DVec":  # type: ignore[no-untyped-def]
        return DVec((fn(self.c[0]), fn(self.c[1])), {a: (fn(x), fn(y)) for a, (x, y) in self.terms.items()})

    def cartesian(self) -> sp.Matrix:
        x, y = self.c
        for th, (a, b) in self.terms.items():
            x += a * sp.cos(th) - b * sp.sin(th)
            y += a * sp.sin(th) + b * sp.cos(th)
        return sp.Matrix([x, y])

    def pruned(self) -> "DVec":
        """The same vector without zero terms."""
        return DVec(self.c, {a: (x, y) for a, (x, y) in self.terms.items() if x != 0 or y != 0})

    def dot(self, other: "DVec") -> sp.Expr:
        acc: list[sp.Expr] = []
        if self.c[0] != 0 and other.c[0] != 0:
            acc.append(self.c[0] * other.c[0])
        if self.c[1] != 0 and other.c[1] != 0:
            acc.append(self.c[1] * other.c[1])
        for (u, v) in ((self, other), (other, self)):
            cx, cy = u.c
            if cx == 0 and cy == 0:
                continue
            for th, (a, b) in v.terms.items():
                # c.e = cx cos + cy sin ; c.n = -cx sin + cy cos
                if a != 0:
                    acc.append(a * (cx * sp.cos(th) + cy * sp.sin(th)))
                if b != 0:
                    acc.append(b * (-cx * sp.sin(th) + cy * sp.cos(th)))
        for ta, (a1, b1) in self.terms.items():
            if a1 == 0 and b1 == 0:
                continue
            for tb, (a2, b2) in other.terms.items():
                if a2 == 0 and b2 == 0:
                    continue
                # e.e = n.n = cos(a-b); e(a).n(b) = sin(a-b); n(a).e(b) = -sin(a-b)
                cs_coef = _mul_add(a1, a2, b1, b2, +1)
                sn_coef = _mul_add(a1, b2, b1, a2, -1)
                if cs_coef != 0:
                    acc.append(cs_coef * _cos_diff(ta, tb))
                if sn_coef != 0:
                    acc.append(sn_coef * _sin_diff(ta, tb))
        return sp.Add(*acc)

    def time_derivative(self, q: list[sp.Symbol], qd: list[sp.Symbol],
                        qdd: Optional[list[sp.Symbol]] = None) -> "DVec":
        """d/dt, with the angles linear in q. ``qdd=None`` drops the acceleration terms."""
        def dt(expr: sp.Expr) -> sp.Expr:
            fs = expr.free_symbols
            if not fs:
                return sp.Integer(0)
            out = [sp.diff(expr, qi) * qdi for qi, qdi in zip(q, qd) if qi in fs]
            if qdd is not None:
                out += [sp.diff(expr, qdi) * qddi for qdi, qddi in zip(qd, qdd) if qdi in fs]
            return sp.Add(*out)

        terms: dict[sp.Expr, tuple[sp.Expr, sp.Expr]] = {}
        for th, (a, b) in self.terms.items():
            w = dt(th)
            terms[th] = (dt(a) - b * w, dt(b) + a * w)
        return DVec((dt(self.c[0]), dt(self.c[1])), terms)

    def diff(self, s: sp.Symbol) -> "DVec":
        """Coefficient-wise partial derivative (valid for symbols the angles do not contain, e.g. rates)."""
        return self.map(lambda e: sp.diff(e, s) if s in e.free_symbols else sp.Integer(0))


def _mul_add(a: sp.Expr, b: sp.Expr, c: sp.Expr, d: sp.Expr, sign: int) -> sp.Expr:
    """a*b + sign*c*d, skipping zero products."""
    x = a * b if (a != 0 and b != 0) else sp.Integer(0)
    y = c * d if (c != 0 and d != 0) else sp.Integer(0)
    return x + y if sign > 0 else x - y


_TRIG_CACHE: dict[tuple[str, sp.Expr, sp.Expr], sp.Expr] = {}


def _cos_diff(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    key = ("c", a, b)
    if key not in _TRIG_CACHE:
        _TRIG_CACHE[key] = sp.cos(a - b)
    return _TRIG_CACHE[key]


def _sin_diff(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    key = ("s", a, b)
    if key not in _TRIG_CACHE:
        _TRIG_CACHE[key] = sp.sin(a - b)
    return _TRIG_CACHE[key]


@dataclass
class MassElement:
    """A point mass (inertia 0) or a rigid body with central inertia ``inertia`` about the plane normal."""

    name: str
    link: str
    mass: sp.Expr
    position: DVec
    theta: sp.Expr
    inertia: sp.Expr = sp.Integer(0)


@dataclass
class Kinematics:
    """Symbols and positions of a model."""

    model: ValidModel
    q: list[sp.Symbol]
    qd: list[sp.Symbol]
    qdd: list[sp.Symbol]
    u: list[sp.Symbol]
    params: list[sp.Symbol]
    param_values: dict[sp.Symbol, float]
    gravity: tuple[sp.Expr, sp.Expr]
    theta: dict[str, sp.Expr]                  # absolute angle of each link
    joint_angle: dict[str, sp.Expr]            # relative joint angle (child - parent - offset)
    joint_pos: dict[str, DVec]                 # proximal joint of each link
    lengths: dict[str, sp.Expr]                # current length of each segment
    elements: list[MassElement]
    points: dict[str, DVec]
    generalized: list[tuple[sp.Symbol, sp.Expr]]  # (input symbol, the coordinate it does work on)
    springs: list[tuple[sp.Expr, sp.Expr, sp.Expr]]  # (stiffness, variable, rest)
    dampers: list[tuple[sp.Expr, sp.Expr]]           # (damping, variable)


def build_kinematics(model: ValidModel) -> Kinematics:
    params = [sp.Symbol(p.name, real=True) for p in model.parameters]
    pmap = {p.name: s for p, s in zip(model.parameters, params)}
    pvals = {s: p.value for p, s in zip(model.parameters, params)}

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, pmap)

    coords = model.coordinates()
    q = [sp.Symbol(c.name, real=True) for c in coords]
    qd = [sp.Symbol(c.name + "'", real=True) for c in coords]
    qdd = [sp.Symbol(c.name + "''", real=True) for c in coords]
    qmap = {c.name: s for c, s in zip(coords, q)}
    inputs = model.inputs()
    u = [sp.Symbol(i.name, real=True) for i in inputs]
    umap = {i.name: s for i, s in zip(inputs, u)}

    theta: dict[str, sp.Expr] = {}
    jangle: dict[str, sp.Expr] = {}
    jpos: dict[str, DVec] = {}
    lengths: dict[str, sp.Expr] = {}
    elements: list[MassElement] = []
    points: dict[str, DVec] = {}
    gen: list[tuple[sp.Symbol, sp.Expr]] = []
    springs: list[tuple[sp.Expr, sp.Expr, sp.Expr]] = []
    dampers: list[tuple[sp.Expr, sp.Expr]] = []

    base = DVec()
    if model.base == "floating":
        base = DVec((qmap[model.base_coordinates[0]], qmap[model.base_coordinates[1]]))
        points["base"] = base

    for lk in model.links:
        for sg in lk.segments:
            lengths[sg.name] = qmap[sg.extension.coordinate] if sg.extension else X(sg.length)

    def station(link: ValidLink, seg_index: Optional[int], fraction: Expression, offset: Expression,
                lateral: Expression) -> DVec:
        s: sp.Expr = sp.Integer(0)
        if seg_index is not None:
            for sg in link.segments[:seg_index]:
                s += lengths[sg.name]
            s += X(fraction) * lengths[link.segments[seg_index].name]
        s += X(offset)
        return jpos[link.name] + DVec.along(theta[link.name], s, X(lateral))

    def seg_index(link: ValidLink, name: str) -> int:
        return [s.name for s in link.segments].index(name)

    for lk in model.links:
        coord = qmap[lk.coordinate]
        off = X(lk.offset)
        if lk.parent is None:
            parent_theta: sp.Expr = sp.Integer(0)
            jpos[lk.name] = base + DVec((X(lk.origin[0]), X(lk.origin[1])))
        else:
            parent = model.link_named(lk.parent)
            parent_theta = theta[parent.name]
            if lk.at == "start":
                jpos[lk.name] = jpos[parent.name]
            elif lk.at == "end":
                jpos[lk.name] = station(parent, len(parent.segments) - 1, _ONE, _ZERO, _ZERO)
            elif lk.at in [s.name for s in parent.segments]:
                jpos[lk.name] = station(parent, seg_index(parent, lk.at), _ONE, _ZERO, _ZERO)
            else:
                mk = next(m for m in parent.markers if m.name == lk.at)
                idx = None if mk.segment is None else seg_index(parent, mk.segment)
                jpos[lk.name] = station(parent, idx, mk.fraction, mk.offset, mk.lateral)
        if lk.angle == "absolute":
            theta[lk.name] = coord + off
        else:
            theta[lk.name] = parent_theta + coord + off
        jangle[lk.name] = theta[lk.name] - parent_theta - off
        points[f"{lk.name}.joint"] = jpos[lk.name]
        jt = lk.joint
        if jt.torque is not None:
            gen.append((umap[jt.torque], jangle[lk.name]))
        if jt.spring is not None:
            springs.append((X(jt.spring.stiffness), jangle[lk.name], X(jt.spring.rest)))
        if jt.damping is not None:
            dampers.append((X(jt.damping), jangle[lk.name]))
        for k, sg in enumerate(lk.segments):
            points[f"{sg.name}.end"] = station(lk, k, _ONE, _ZERO, _ZERO)
            ext = sg.extension
            if ext is not None:
                lvar = lengths[sg.name]
                if ext.force is not None:
                    gen.append((umap[ext.force], lvar))
                if ext.spring is not None:
                    springs.append((X(ext.spring.stiffness), lvar, X(ext.spring.rest)))
                if ext.damping is not None:
                    dampers.append((X(ext.damping), lvar))
            for i, pm in enumerate(sg.masses):
                nm = pm.name or f"{sg.name}.m{i}"
                pos = station(lk, k, pm.fraction, pm.offset, pm.lateral)
                elements.append(MassElement(nm, lk.name, X(pm.mass), pos, theta[lk.name]))
                points[nm] = pos
            for i, rd in enumerate(sg.rods):
                nm = rd.name or f"{sg.name}.rod{i}"
                pos = station(lk, k, rd.fraction, rd.offset, rd.lateral)
                elements.append(MassElement(nm, lk.name, X(rd.mass), pos, theta[lk.name], X(rd.inertia)))
                points[nm] = pos
        for mk in lk.markers:
            idx = None if mk.segment is None else seg_index(lk, mk.segment)
            points[mk.name] = station(lk, idx, mk.fraction, mk.offset, mk.lateral)

    grav = (X(model.gravity[0]), X(model.gravity[1]))
    return Kinematics(model, q, qd, qdd, u, params, pvals, grav, theta, jangle, jpos, lengths, elements, points,
                      gen, springs, dampers)


_ONE = as_expression(1)
_ZERO = as_expression(0)
