"""The recursive method for spatial models: spatial vector algebra over an expanded rigid tree.

The same construction as :mod:`rodgen.symbolic.recursive` (planar models), in 3D:
the composite-rigid-body algorithm for the mass matrix, the recursive
Newton–Euler algorithm for the velocity terms and the inverse dynamics, the
composite bodies in the gravity field for the gravity terms, and the
articulated-body algorithm for the forward dynamics. Every step is one new
intermediate Symbol bound to a small expression (``Equations.assignments``),
so the code grows like n (Newton–Euler, articulated bodies) and n·depth (M).

The expanded tree
-----------------
A :class:`~rodgen.model.spatial.ValidSpatialModel` is rewritten as a tree of
*nodes*, each a body frame moved by one single-axis joint relative to its
parent frame (or the ground): a fixed rotation ``R0`` and translation ``p0``
in the parent frame, then a rotation about (revolute) or a translation along
(prismatic) the unit ``axis`` (node frame) by the node's *tree coordinate*:

* a revolute or prismatic link joint is one node (coordinate ``q`` plus the
  joint's offset);
* a fixed joint adds no node: its link's bodies go to the parent's node;
* a two-angle link is a revolute node about z (phi) and one about -y (psi);
  with absolute angles after a parent two-angle link, a third node about y by
  the parent's psi comes first and the phi node turns by ``phi - phi_parent``
  (the relative rotation ``Ry(psi_p) Rz(phi - phi_p) Ry(-psi)``); after a
  parent that only translates (a free base point x, y, z of prismatic joints)
  the absolute angles are the relative ones;
* a variable segment is a prismatic node along the link axis, and a point at
  an intermediate fraction ``a`` of one a virtual prismatic node (``a*l``).

The tree coordinates are a constant linear map of the model's coordinates,
``s = T q``, so ``M = Tᵀ M_tree T``, ``h = Tᵀ h_tree``, ``G = Tᵀ G_tree``;
the articulated-body algorithm applies where ``T`` is square (one node per
coordinate).

Spatial algebra (Featherstone's, with 3-vectors): a motion vector is
``(w, v)`` (angular velocity and the velocity of the body point at the frame
origin), a force ``(n, f)`` (moment about the origin, force), a rigid-body
inertia ``(m, h, Ibar)`` (mass, first moment ``m c``, rotational inertia about
the origin), all in node coordinates. A node's transform is ``R`` (its axes in
the parent frame) and ``p`` (its origin in the parent frame): a motion vector
of the parent becomes ``(Rᵀ w, Rᵀ (v + w × p))`` in the node frame; a force of
the node becomes ``(R n + p × R f, R f)`` in the parent frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import sympy as sp

from ..errors import DerivationError, ModelError
from ..model.expr import Expression
from ..model.spatial import LIE_JOINTS, ValidSpatialLink, ValidSpatialModel
from .common import damper_forces, input_map, spring_energy, spring_forces
from .convert import to_sympy
from .equations import Equations, ForwardDynamics
from .recursive import _Emitter, to_model_coordinates

_0 = sp.Integer(0)
_1 = sp.Integer(1)

V3 = list  # a 3-vector: list of 3 SymPy expressions
M3 = list  # a 3x3 matrix: list of 3 rows
#: an external force on a node from the node's velocity (w, v): (moment about its origin, force), node frame
NodeForce = Callable[[V3, V3, _Emitter], tuple[V3, V3]]


def _eye() -> M3:
    return [[_1, _0, _0], [_0, _1, _0], [_0, _0, _1]]


def _zero3() -> V3:
    return [_0, _0, _0]


def _z(x: sp.Expr) -> bool:
    return x is _0 or x == 0


def _mul(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """a*b without building products of 0 and 1 (SymPy's arithmetic dominates the derivation time)."""
    if _z(a) or _z(b):
        return _0
    if a is _1:
        return b
    if b is _1:
        return a
    return a * b


def _sum(terms: Sequence[sp.Expr]) -> sp.Expr:
    nz = [t for t in terms if not _z(t)]
    if not nz:
        return _0
    return nz[0] if len(nz) == 1 else sp.Add(*nz)


def _add(a: V3, b: V3) -> V3:
    return [_sum((a[i], b[i])) for i in range(3)]


def _scale(k: sp.Expr, a: V3) -> V3:
    return [_mul(k, x) for x in a]


def _cross(a: V3, b: V3) -> V3:
    return [_sum((_mul(a[1], b[2]), -_mul(a[2], b[1]))), _sum((_mul(a[2], b[0]), -_mul(a[0], b[2]))),
            _sum((_mul(a[0], b[1]), -_mul(a[1], b[0])))]


def _dot(a: V3, b: V3) -> sp.Expr:
    return _sum([_mul(a[i], b[i]) for i in range(3)])


def _mcross(a: list, b: list) -> list:
    """a × b of two motions (w, v), 6-lists."""
    return _cross(a[:3], b[:3]) + _add(_cross(a[:3], b[3:]), _cross(a[3:], b[:3]))


def _fcross(a: list, f: list) -> list:
    """a ×* f of a motion and a force (n, f), 6-lists."""
    return _add(_cross(a[:3], f[:3]), _cross(a[3:], f[3:])) + _cross(a[:3], f[3:])


def _inertia(m: sp.Expr, h: V3, Ib: list, x: list) -> list:
    """Y x for the rigid-body inertia (m, h = m c, Ibar about the origin): (Ibar w + h × v, m v - h × w)."""
    return _add(_mv(Ib, x[:3]), _cross(h, x[3:])) + [_sum((_mul(m, x[3 + r]), -c)) for r, c in
                                                       enumerate(_cross(h, x[:3]))]


def _inertia_in_ground(e: Any, oR: M3, op: V3, m: sp.Expr, h: V3, Ib: M3, tag: str) -> tuple[V3, M3, dict]:
    """A body's inertia (m, h = m c, Ib about its node's origin, node axes) about the ground origin in ground
    axes, for the node at rotation oR and origin op: (h, Ibar, Ibar's upper triangle {(r, c): symbol}), the
    entries emitted by ``e(expression, name)`` as ``<tag>Rh<r>``, ``<tag>h<r>``, ``<tag>I<r><c>``."""
    Rh = [e(y, f"{tag}Rh{r}") for r, y in enumerate(_mv(oR, h))]
    hw = [e(_sum((Rh[r], _mul(m, op[r]))), f"{tag}h{r}") for r in range(3)]
    RIR = _mm(oR, _mm(Ib, _mt(oR)))
    sRh, sp_ = _skew(Rh), _skew(op)
    A1, A2, A3 = _mm(sRh, sp_), _mm(sp_, sRh), _mm(sp_, sp_)
    Iu = {}
    for r in range(3):
        for c in range(r, 3):
            Iu[r, c] = e(RIR[r][c] - A1[r][c] - A2[r][c] - _mul(m, A3[r][c]), f"{tag}I{r}{c}")
    return hw, [[Iu[min(r, c), max(r, c)] for c in range(3)] for r in range(3)], Iu


def _inertia_rate(m: sp.Expr, h: V3, Ib: M3, v: list, oh: list) -> tuple[M3, V3]:
    """B with B x = v ×* (Y x) - Y (v × x) + x ×* (Y v), for the inertia Y = (m, h, Ib) moving at v (oh = Y v), by
    its two blocks that are not zero: B = [[Bw, 0], [-2 [p]×, 0]] with p = oh's linear part (the momentum). Its
    columns of linear motion vanish (the terms m v × x and the three of h cancel by Jacobi's identity), and so
    do they in a sum of such B over a subtree: (Bw, p), a 3x3 and a 3-list (the other 24 entries never computed)."""
    cols = []
    for c in range(3):
        unit = [_1 if r == c else _0 for r in range(6)]
        col = _fcross(v, _inertia(m, h, Ib, unit))[:3]
        col = [_sum((x, -y)) for x, y in zip(col, _inertia(m, h, Ib, _mcross(v, unit))[:3])]
        cols.append([_sum((x, y)) for x, y in zip(col, _fcross(unit, oh)[:3])])
    return [[cols[c][r] for c in range(3)] for r in range(3)], list(oh[3:])


def _rate_mv(Bw: M3, p: V3, x: list) -> list:
    """B x for B = [[Bw, 0], [-2 [p]×, 0]] (:func:`_inertia_rate`): (Bw x_w, -2 p × x_w)."""
    return _mv(Bw, x[:3]) + _scale(sp.Integer(-2), _cross(p, x[:3]))


def _rate_tmv(Bw: M3, p: V3, x: list) -> list:
    """Bᵀ x for B = [[Bw, 0], [-2 [p]×, 0]] (:func:`_inertia_rate`): (Bwᵀ x_w + 2 p × x_v, 0)."""
    return _add(_mtv(Bw, x[:3]), _scale(sp.Integer(2), _cross(p, x[3:]))) + [_0, _0, _0]


def _mv(R: M3, v: V3) -> V3:
    return [_sum([_mul(R[i][j], v[j]) for j in range(3)]) for i in range(3)]


def _mtv(R: M3, v: V3) -> V3:
    """Rᵀ v."""
    return [_sum([_mul(R[j][i], v[j]) for j in range(3)]) for i in range(3)]


def _mm(A: M3, B: M3) -> M3:
    return [[_sum([_mul(A[i][k], B[k][j]) for k in range(3)]) for j in range(3)] for i in range(3)]


def _mt(A: M3) -> M3:
    return [[A[j][i] for j in range(3)] for i in range(3)]


def _skew(a: V3) -> M3:
    return [[_0, -a[2], a[1]], [a[2], _0, -a[0]], [-a[1], a[0], _0]]


def _is_identity(R: M3) -> bool:
    return all(R[i][j] == (_1 if i == j else _0) for i in range(3) for j in range(3))


#: A constant entry of a fixed rotation within this of 0 or +-1 is taken as exact (the rounding of a right angle
#: written in floating point, cos(1.5707963267948966) = 6e-17): the zeros of such rotations stay out of the code.
SNAP = 1e-14


def _numeric(x: sp.Expr) -> sp.Expr:
    """A constant without symbols as a Float (exact integers stay exact, see :data:`SNAP`); anything else as
    it is."""
    x = sp.sympify(x)
    if x.free_symbols or x.is_Integer or x.is_Rational:
        return x
    val = x.evalf(30)
    if val.is_Number:
        f = float(val)
        for k in (0, 1, -1):   # cos and sin of a right angle given in floating point (1.5707963267948966)
            if abs(f - k) < SNAP:
                return sp.Integer(k)
        if f == int(f) and abs(f) < 2 ** 31:
            return sp.Integer(int(f))
        return sp.Float(repr(f), 17)
    return x


def rot_axis(a: V3, c: sp.Expr, s: sp.Expr) -> M3:
    """Rotation by the angle with cosine c and sine s about the unit axis a (Rodrigues)."""
    k = 1 - c
    return [[c + k * a[0] * a[0], k * a[0] * a[1] - s * a[2], k * a[0] * a[2] + s * a[1]],
            [k * a[1] * a[0] + s * a[2], c + k * a[1] * a[1], k * a[1] * a[2] - s * a[0]],
            [k * a[2] * a[0] - s * a[1], k * a[2] * a[1] + s * a[0], c + k * a[2] * a[2]]]


def rpy_matrix(r: sp.Expr, p: sp.Expr, y: sp.Expr) -> M3:
    """R = Rz(y) Ry(p) Rx(r), the URDF fixed-axis roll-pitch-yaw (constants become Floats)."""
    cr, sr, cp, spp, cy, sy = (_numeric(f(a)) for a in (r, p, y) for f in (sp.cos, sp.sin))
    Rx = [[_1, _0, _0], [_0, cr, -sr], [_0, sr, cr]]
    Ry = [[cp, _0, spp], [_0, _1, _0], [-spp, _0, cp]]
    Rz = [[cy, -sy, _0], [sy, cy, _0], [_0, _0, _1]]
    return [[_numeric(x) for x in row] for row in _mm(Rz, _mm(Ry, Rx))]


@dataclass
class SNode:
    """One joint + body frame of the expanded spatial tree."""

    name: str
    parent: int                  # index of the parent node, -1 for the ground
    revolute: bool               # else prismatic
    R0: M3                       # fixed rotation in the parent frame
    p0: V3                       # fixed translation in the parent frame
    axis: V3                     # unit joint axis in the node frame
    coord: sp.Expr               # tree coordinate, linear in q (revolute: plus a constant offset)
    bodies: list[tuple[sp.Expr, V3, M3]] = field(default_factory=list)   # (m, centre of mass, inertia about it)
    #: a free, spherical or planar joint: (its type, its coordinate symbols, the index of its first velocity in
    #: v); the node then has six motion columns (free: linear, then angular), three (spherical: angular; planar:
    #: linear x, linear y, angular z), all constant in the node frame
    lie: Optional[tuple[str, list[sp.Symbol], int]] = None


@dataclass(frozen=True)
class SRef:
    """A frame fixed in a node frame (node -1 is the ground): rotation R and origin p in node coordinates."""

    node: int
    R: tuple = ((_1, _0, _0), (_0, _1, _0), (_0, _0, _1))
    p: tuple = (_0, _0, _0)

    def moved(self, R: Optional[M3] = None, p: Optional[V3] = None) -> "SRef":
        """This frame followed by the fixed transform (R, p) given in this frame's coordinates."""
        Rs = [list(r) for r in self.R]
        newp = list(self.p)
        if p is not None:
            newp = _add(newp, _mv(Rs, p))
        newR = Rs if R is None else _mm(Rs, R)
        return SRef(self.node, tuple(tuple(sp.expand(x) for x in r) for r in newR),
                    tuple(sp.expand(x) for x in newp))

    @property
    def Rl(self) -> M3:
        return [list(r) for r in self.R]

    @property
    def pl(self) -> V3:
        return list(self.p)


@dataclass
class SpatialKinematics:
    """The symbols of a spatial model and what :mod:`rodgen.symbolic.common` reads."""

    model: ValidSpatialModel
    q: list[sp.Symbol]
    qd: list[sp.Symbol]
    qdd: list[sp.Symbol]
    u: list[sp.Symbol]
    params: list[sp.Symbol]
    param_values: dict[sp.Symbol, float]
    gravity: V3
    generalized: list[tuple[sp.Symbol, sp.Expr]] = field(default_factory=list)
    springs: list[tuple[sp.Expr, sp.Expr, sp.Expr]] = field(default_factory=list)
    dampers: list[tuple[sp.Expr, sp.Expr]] = field(default_factory=list)
    #: per velocity (nv of them): the coordinate whose rate it is, or a Dummy for a free joint's velocities
    vq: list[sp.Symbol] = field(default_factory=list)
    #: a coordinate -> the index of its rate among the velocities (free joints' coordinates have none)
    vel_of: dict[sp.Symbol, int] = field(default_factory=dict)

    def velocity_view(self) -> "SpatialKinematics":
        """These kinematics with ``q`` replaced by :attr:`vq`, so that the generalized forces of springs,
        dampers and inputs (:mod:`rodgen.symbolic.common`) come out in nv rows, one per velocity."""
        from dataclasses import replace
        return replace(self, q=self.vq)


def spatial_kinematics(model: ValidSpatialModel) -> SpatialKinematics:
    params = [sp.Symbol(p.name, real=True) for p in model.parameters]
    pmap = {p.name: s for p, s in zip(model.parameters, params)}
    pvals = {s: p.value for p, s in zip(model.parameters, params)}
    coords = model.coordinates()
    q = [sp.Symbol(c.name, real=True) for c in coords]
    vels = model.velocities()
    qd = [sp.Symbol(nm, real=True) for nm, _ in vels]
    qdd = [sp.Symbol(nm + "'" if c is None else c + "''", real=True) for nm, c in vels]
    qmap = {c.name: s for c, s in zip(coords, q)}
    vq = [qmap[c] if c is not None else sp.Dummy(nm, real=True) for nm, c in vels]
    vel_of = {qmap[c]: i for i, (_, c) in enumerate(vels) if c is not None}
    inputs = model.inputs()
    u = [sp.Symbol(i.name, real=True) for i in inputs]
    umap = {i.name: s for i, s in zip(inputs, u)}

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, pmap)

    k = SpatialKinematics(model, q, qd, qdd, u, params, pvals, [X(g) for g in model.gravity], vq=vq,
                          vel_of=vel_of)
    for lk in model.links:
        jt = lk.joint
        for cname, uname in zip(jt.coordinates, jt.inputs):
            k.generalized.append((umap[uname], qmap[cname]))
        if jt.coordinates and jt.spring is not None:
            k.springs.append((X(jt.spring.stiffness), qmap[jt.coordinates[0]], X(jt.spring.rest)))
        if jt.coordinates and jt.damping is not None:
            k.dampers.append((X(jt.damping), qmap[jt.coordinates[0]]))
        for sg in lk.segments:
            ext = sg.extension
            if ext is None:
                continue
            lsym = qmap[ext.coordinate]
            if ext.force is not None:
                k.generalized.append((umap[ext.force], lsym))
            if ext.spring is not None:
                k.springs.append((X(ext.spring.stiffness), lsym, X(ext.spring.rest)))
            if ext.damping is not None:
                k.dampers.append((X(ext.damping), lsym))
    return k


class SpatialTree:
    """Turns a ValidSpatialModel into the expanded tree (see the module docstring) and keeps the frames of
    its links, segments and named points."""

    def __init__(self, model: ValidSpatialModel, k: SpatialKinematics) -> None:
        self.model = model
        self.k = k
        self.pmap = {p.name: s for p, s in zip(model.parameters, k.params)}
        self.qmap = {str(s): s for s in k.q}
        self.nodes: list[SNode] = []
        self.link_frame: dict[str, SRef] = {}
        self.along: dict[str, V3] = {}
        self.seg_start: dict[str, list[SRef]] = {}
        self.seg_end: dict[str, list[SRef]] = {}
        self.frames: dict[str, SRef] = {}
        self._virtual: dict[tuple[str, int, sp.Expr], int] = {}
        for lk in model.links:
            self._link(lk)

    def X(self, v: Expression) -> sp.Expr:
        return to_sympy(v, self.pmap)

    def V(self, v: Sequence[Expression]) -> V3:
        return [self.X(x) for x in v]

    def add(self, node: SNode) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _unit(self, v: V3, where: str) -> V3:
        n2 = sp.Add(*[x ** 2 for x in v])
        if n2 == 1:
            return v
        norm = sp.sqrt(n2)
        if not norm.free_symbols:
            return [_numeric(x / norm) for x in v]
        return [x / norm for x in v]

    def _link(self, lk: ValidSpatialLink) -> None:
        jt = lk.joint
        if lk.parent is None:
            at = SRef(-1)
        else:
            at = self._attachment(self.model.link_named(lk.parent), lk.at)
        frame = at.moved(rpy_matrix(*self.V(jt.rpy)), self.V(jt.xyz))
        offset = self.X(jt.offset)
        if jt.type in LIE_JOINTS:
            syms = [self.qmap[c] for c in jt.coordinates]
            v0 = [str(s) for s in self.k.qd].index(jt.velocities[0])
            i = self.add(SNode(lk.name, frame.node, False, frame.Rl, frame.pl, [_0, _0, _1], _0,
                               lie=(jt.type, syms, v0)))
            frame = SRef(i)
        elif jt.type in ("revolute", "prismatic"):
            axis = self._unit(self.V(jt.axis), f"link {lk.name!r}.joint.axis")
            coord = self.qmap[jt.coordinates[0]]
            rev = jt.type == "revolute"
            i = self.add(SNode(lk.name, frame.node, rev, frame.Rl, frame.pl, axis, coord + offset))
            frame = SRef(i)
        elif jt.type == "two_angle":
            phi, psi = (self.qmap[c] for c in jt.coordinates)
            dphi = phi
            if jt.angles == "absolute" and lk.parent is not None:
                up = self.model.link_named(lk.parent)
                if not _is_identity(frame.Rl):
                    raise DerivationError(f"link {lk.name!r}: an absolute two-angle link must be attached to its "
                                          f"parent without rotation")
                if up.joint.type == "two_angle":
                    phi_p, psi_p = (self.qmap[c] for c in up.joint.coordinates)
                    i0 = self.add(SNode(f"{lk.name}_undo", frame.node, True, frame.Rl, frame.pl, [_0, _1, _0],
                                        psi_p))
                    frame = SRef(i0)
                    dphi = phi - phi_p
                # else a parent that only translates (the model stage checked it): its axes are the ground's
            i1 = self.add(SNode(f"{lk.name}_phi", frame.node, True, frame.Rl, frame.pl, [_0, _0, _1], dphi))
            i2 = self.add(SNode(f"{lk.name}_psi", i1, True, _eye(), _zero3(), [_0, -_1, _0], psi))
            frame = SRef(i2)
        self.link_frame[lk.name] = frame
        along = self._unit(self.V(lk.along), f"link {lk.name!r}.along")
        self.along[lk.name] = along
        starts: list[SRef] = []
        ends: list[SRef] = []
        for sg in lk.segments:
            starts.append(frame)
            if sg.variable:
                lvar = self.qmap[sg.extension.coordinate]  # type: ignore[union-attr]
                # the node's axes are the link's: the segment slides along the link axis
                i = self.add(SNode(sg.name, frame.node, False, frame.Rl, frame.pl, along, lvar))
                frame = SRef(i)
            else:
                frame = frame.moved(None, _scale(self.X(sg.length), along))
            ends.append(frame)
        self.seg_start[lk.name], self.seg_end[lk.name] = starts, ends
        lf = self.link_frame[lk.name]
        self.frames[f"{lk.name}.joint"] = lf
        for b in lk.bodies:
            Rb = rpy_matrix(*self.V(b.rpy))
            xx, xy, xz, yy, yz, zz = (self.X(x) for x in b.inertia)
            Ic = _mm(Rb, _mm([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], _mt(Rb)))
            self._body(lf, self.X(b.mass), self.V(b.com), Ic)
            if b.name is not None:
                self.frames[b.name] = lf.moved(None, self.V(b.com))
        for i, sg in enumerate(lk.segments):
            self.frames[f"{sg.name}.end"] = ends[i]
            for j, pm in enumerate(sg.masses):
                at_ = self._station(lk, i, pm.fraction, pm.offset)
                self._body(at_, self.X(pm.mass), _zero3(), [[_0] * 3 for _ in range(3)])
                if pm.name is not None:
                    self.frames[pm.name] = at_
            for j, rd in enumerate(sg.rods):
                at_ = self._station(lk, i, rd.fraction, rd.offset)
                It = self.X(rd.inertia)
                Ic = [[It * ((_1 if r == c else _0) - along[r] * along[c]) for c in range(3)] for r in range(3)]
                self._body(at_, self.X(rd.mass), _zero3(), Ic)
                if rd.name is not None:
                    self.frames[rd.name] = at_
        for mk in lk.markers:
            idx = None if mk.segment is None else [s.name for s in lk.segments].index(mk.segment)
            st = self._station(lk, idx, mk.fraction, mk.offset)
            self.frames[mk.name] = st.moved(rpy_matrix(*self.V(mk.rpy)), self.V(mk.xyz))

    def _body(self, ref: SRef, m: sp.Expr, c: V3, Ic: M3) -> None:
        """A body (mass, centre of mass and inertia about it, in the frame ``ref``) on ref's node."""
        if ref.node < 0:
            return   # welded to the ground: no dynamics
        R = ref.Rl
        cn = _add(ref.pl, _mv(R, c))
        In = _mm(R, _mm(Ic, _mt(R))) if not _is_identity(R) else Ic
        self.nodes[ref.node].bodies.append((m, [sp.expand(x) for x in cn], [[sp.expand(x) for x in r] for r in In]))

    def _station(self, lk: ValidSpatialLink, i: Optional[int], fraction: Expression, offset: Expression) -> SRef:
        """The frame at ``fraction*length + offset`` along segment i of a link (its axes the link's)."""
        along = self.along[lk.name]
        off = self.X(offset)
        if i is None:
            return self.link_frame[lk.name].moved(None, _scale(off, along))
        sg = lk.segments[i]
        a = self.X(fraction)
        start, end = self.seg_start[lk.name][i], self.seg_end[lk.name][i]
        if a == 0:
            return start.moved(None, _scale(off, along))
        if a == 1:
            return end.moved(None, _scale(off, along))
        if not sg.variable:
            return start.moved(None, _scale(a * self.X(sg.length) + off, along))
        key = (sg.name, start.node, a)
        if key not in self._virtual:
            lvar = self.qmap[sg.extension.coordinate]  # type: ignore[union-attr]
            self._virtual[key] = self.add(SNode(f"{sg.name}_at", start.node, False, start.Rl, start.pl, along,
                                                a * lvar))
        return SRef(self._virtual[key]).moved(None, _scale(off, along))

    def _attachment(self, parent: ValidSpatialLink, at: str) -> SRef:
        names = [s.name for s in parent.segments]
        if at == "start":
            return self.link_frame[parent.name]
        if at == "end":
            return self.seg_end[parent.name][-1] if names else self.link_frame[parent.name]
        if at in names:
            return self.seg_end[parent.name][names.index(at)]
        mk = next(m for m in parent.markers if m.name == at)
        idx = None if mk.segment is None else names.index(mk.segment)
        return self._station(parent, idx, mk.fraction, mk.offset).moved(rpy_matrix(*self.V(mk.rpy)),
                                                                          self.V(mk.xyz))


def _prefix(k: SpatialKinematics) -> str:
    taken = [str(s) for s in [*k.q, *k.qd, *k.qdd, *k.u, *k.params]]
    prefix = "r_"
    while any(t.startswith(prefix) for t in taken):
        prefix += "_"
    return prefix


def quaternion_matrix(x: sp.Expr, y: sp.Expr, z: sp.Expr, w: sp.Expr) -> M3:
    """The rotation of the unit quaternion (x, y, z, w) (Eigen's ``toRotationMatrix``, as Pinocchio)."""
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


#: The motion columns of the joints with several: (angular, axis index) in the order of their velocities.
LIE_COLUMNS = {"free": ((False, 0), (False, 1), (False, 2), (True, 0), (True, 1), (True, 2)),
               "spherical": ((True, 0), (True, 1), (True, 2)),
               "planar": ((False, 0), (False, 1), (True, 2))}


class _Joints:
    """Per-node quantities shared by the recursions, each emitted once: the map T, the rotation R and origin
    p of each node in its parent, the motion subspace, the tree coordinate rates, the body inertias.

    A node has one motion *column* (a single-axis joint) or six (a free joint: linear, then angular, node
    frame). ``S``, ``sd`` and ``Tmap`` are per column (``T`` maps the model's nv velocities onto the
    columns' rates), ``cols[i]`` lists node i's columns and ``node_of`` gives a column's node; in a model
    without free joints columns and nodes coincide."""

    def __init__(self, nodes: list[SNode], k: SpatialKinematics, e: _Emitter) -> None:
        self.e = e
        self.Tmap: list[list[tuple[int, sp.Expr]]] = []
        self.cols: list[list[int]] = []
        self.node_of: list[int] = []
        self.R: list[M3] = []
        self.p: list[V3] = []
        self.S: list[tuple[V3, V3]] = []
        self.sd: list[sp.Expr] = []
        self.lie = [nd.lie is not None for nd in nodes]
        for i, nd in enumerate(nodes):
            if nd.lie is not None:
                kind, syms, v0 = nd.lie
                ids = []
                for c, (angular, axis) in enumerate(LIE_COLUMNS[kind]):
                    unit = [_1 if r == axis else _0 for r in range(3)]
                    self.S.append((unit, _zero3()) if angular else (_zero3(), unit))
                    self.Tmap.append([(v0 + c, _1)])
                    self.sd.append(k.qd[v0 + c])
                    self.node_of.append(i)
                    ids.append(len(self.S) - 1)
                self.cols.append(ids)
                if kind == "planar":
                    c = e(sp.cos(syms[2]), f"{i}_c")
                    s = e(sp.sin(syms[2]), f"{i}_s")
                    Rj: M3 = [[c, -s, _0], [s, c, _0], [_0, _0, _1]]
                    pj: V3 = [syms[0], syms[1], _0]
                else:
                    Rj = quaternion_matrix(*syms[-4:])
                    pj = list(syms[:3]) if kind == "free" else _zero3()
                R = Rj if _is_identity(nd.R0) else _mm(nd.R0, Rj)
                p = _add(nd.p0, pj if _is_identity(nd.R0) else _mv(nd.R0, pj))
                self.R.append([[e(sp.expand(R[r][c_]), f"{i}_R{r}{c_}") for c_ in range(3)] for r in range(3)])
                self.p.append([e(sp.expand(p[r]), f"{i}_p{r}") for r in range(3)])
                continue
            free = sp.sympify(nd.coord).free_symbols
            row = [(k.vel_of[qj], sp.diff(nd.coord, qj)) for qj in k.q if qj in free]
            row = [(j, cf) for j, cf in row if cf != 0]
            if any(qj in cf.free_symbols for _, cf in row for qj in k.q):
                raise DerivationError(f"joint {nd.name!r}: coordinate {nd.coord} is not linear in q")
            self.Tmap.append(row)
            self.cols.append([len(self.S)])
            self.node_of.append(i)
            self.sd.append(e(sp.Add(*[cf * k.qd[j] for j, cf in row]), f"{i}_sd"))
            if nd.revolute:
                c = e(sp.cos(nd.coord), f"{i}_c")
                s = e(sp.sin(nd.coord), f"{i}_s")
                R = _mm(nd.R0, rot_axis(nd.axis, c, s))
                p = list(nd.p0)
                self.S.append((list(nd.axis), _zero3()))
            else:
                R = nd.R0
                p = _add(nd.p0, _scale(nd.coord, _mv(nd.R0, nd.axis)))
                self.S.append((_zero3(), list(nd.axis)))
            self.R.append([[e(sp.expand(R[r][c_]), f"{i}_R{r}{c_}") for c_ in range(3)] for r in range(3)])
            self.p.append([e(sp.expand(p[r]), f"{i}_p{r}") for r in range(3)])
        self.init_bodies(nodes, e)

    def joint_motion(self, i: int, rates: Sequence[sp.Expr] | dict[int, sp.Expr]) -> tuple[V3, V3]:
        """Σ S_c rate_c over node i's columns (``rates`` indexed by column)."""
        w, v = _zero3(), _zero3()
        for c in self.cols[i]:
            w = _add(w, _scale(rates[c], self.S[c][0]))
            v = _add(v, _scale(rates[c], self.S[c][1]))
        return w, v

    def init_bodies(self, nodes: list[SNode], e: _Emitter) -> None:
        # rigid-body inertia of each node's bodies about its origin: (m, h, Ibar)
        self.body: list[tuple[sp.Expr, V3, M3]] = []
        for i, nd in enumerate(nodes):
            m = sp.Add(*[b[0] for b in nd.bodies])
            h = [sp.Add(*[b[0] * b[1][r] for b in nd.bodies]) for r in range(3)]
            Ib = [[sp.Add(*[b[2][r][c_] + b[0] * ((_dot(b[1], b[1]) if r == c_ else _0) - b[1][r] * b[1][c_])
                            for b in nd.bodies]) for c_ in range(3)] for r in range(3)]
            m = e(m, f"{i}_m")
            h = [e(h[r], f"{i}_h{r}") for r in range(3)]
            Is = {}
            for r in range(3):
                for c_ in range(r, 3):
                    Is[r, c_] = e(sp.expand(Ib[r][c_]), f"{i}_I{r}{c_}")
            self.body.append((m, h, [[Is[min(r, c_), max(r, c_)] for c_ in range(3)] for r in range(3)]))

    def motion_in(self, i: int, w: V3, v: V3, tag: str) -> tuple[V3, V3]:
        """A motion vector of node i's parent, in node i's frame."""
        e, R, p = self.e, self.R[i], self.p[i]
        wc = [e(x, f"{i}_{tag}w{r}") for r, x in enumerate(_mtv(R, w))]
        vs = _add(v, _cross(w, p))
        vc = [e(x, f"{i}_{tag}v{r}") for r, x in enumerate(_mtv(R, vs))]
        return wc, vc

    def force_out(self, i: int, n: V3, f: V3, tag: str) -> tuple[V3, V3]:
        """A force in node i's frame, in its parent's frame (moment about the parent's origin)."""
        e, R, p = self.e, self.R[i], self.p[i]
        fp = [e(x, f"{tag}f{r}") for r, x in enumerate(_mv(R, f))]
        np_ = [e(x, f"{tag}n{r}") for r, x in enumerate(_add(_mv(R, n), _cross(p, fp)))]
        return np_, fp


def _inertia_times(m: sp.Expr, h: V3, Ib: M3, w: V3, v: V3) -> tuple[V3, V3]:
    """I (w, v) for a rigid-body inertia (m, h, Ibar): (Ibar w + h x v, m v - h x w)."""
    return _add(_mv(Ib, w), _cross(h, v)), [m * v[r] - x for r, x in enumerate(_cross(h, w))]


def derive_spatial(model: ValidSpatialModel, k: Optional[SpatialKinematics] = None,
                   tree: Optional[SpatialTree] = None) -> Equations:
    """Equations of motion of a spatial model by the composite-body (M), Newton–Euler (h, inverse dynamics)
    and composite gravity (G) recursions (``k`` and ``tree``: the model's kinematics and expanded tree, when
    already built)."""
    k = k or spatial_kinematics(model)
    tree = tree or SpatialTree(model, k)
    nodes = tree.nodes
    e = _Emitter(_prefix(k))
    N, n = len(nodes), len(k.qd)
    J = _Joints(nodes, k, e)
    Tmap, S, sd, body = J.Tmap, J.S, J.sd, J.body
    NC = len(S)

    # --- composite-rigid-body algorithm ---------------------------------------------------------------
    acc: list[list[list]] = [[[body[i][0]], [[x] for x in body[i][1]], [[[x] for x in row] for row in body[i][2]]]
                             for i in range(N)]
    comp: list[tuple[sp.Expr, V3, M3]] = [(_0, [], [])] * N
    for i in reversed(range(N)):
        m = e(sp.Add(*acc[i][0]), f"{i}_Cm")
        h = [e(sp.Add(*acc[i][1][r]), f"{i}_Ch{r}") for r in range(3)]
        Is = {}
        for r in range(3):
            for c_ in range(r, 3):
                Is[r, c_] = e(sp.Add(*acc[i][2][r][c_]), f"{i}_CI{r}{c_}")
        Ib = [[Is[min(r, c_), max(r, c_)] for c_ in range(3)] for r in range(3)]
        comp[i] = (m, h, Ib)
        par = nodes[i].parent
        if par < 0:
            continue
        R, p = J.R[i], J.p[i]
        Rh = [e(x, f"{i}_CRh{r}") for r, x in enumerate(_mv(R, h))]
        RIR = _mm(R, _mm(Ib, _mt(R)))
        hp = _add(Rh, _scale(m, p))
        # Ibar about the parent origin: R Ibar R' - [Rh]x[p]x - [p]x[Rh]x - m [p]x[p]x
        sRh, sp_ = _skew(Rh), _skew(p)
        A1, A2, A3 = _mm(sRh, sp_), _mm(sp_, sRh), _mm(sp_, sp_)
        acc[par][0].append(m)
        for r in range(3):
            acc[par][1][r].append(hp[r])
            for c_ in range(r, 3):
                acc[par][2][r][c_].append(e(RIR[r][c_], f"{i}_CRI{r}{c_}") - A1[r][c_] - A2[r][c_]
                                          - m * A3[r][c_])
    Mt: dict[tuple[int, int], sp.Expr] = {}
    for i in range(N):
        m, h, Ib = comp[i]
        for a_ in J.cols[i]:
            Sw, Sv = S[a_]
            Fn, Ff = _inertia_times(m, h, Ib, Sw, Sv)
            Fn = [e(x, f"{a_}_Fn{r}") for r, x in enumerate(Fn)]
            Ff = [e(x, f"{a_}_Ff{r}") for r, x in enumerate(Ff)]
            for b_ in J.cols[i]:
                if b_ <= a_:
                    Mt[a_, b_] = e(_dot(S[b_][0], Fn) + _dot(S[b_][1], Ff), f"M{a_}_{b_}")
            j = i
            while nodes[j].parent >= 0:
                Fn, Ff = J.force_out(j, Fn, Ff, f"{a_}_F{j}")
                j = nodes[j].parent
                for b_ in J.cols[j]:
                    Mt[a_, b_] = e(_dot(S[b_][0], Fn) + _dot(S[b_][1], Ff), f"M{a_}_{b_}")

    # --- recursive Newton-Euler: velocities, velocity-product accelerations, body forces --------------
    vel: list[tuple[V3, V3]] = []
    Ivs: list[tuple[V3, V3]] = []

    def body_force(i: int, aw: V3, av: V3) -> list[list[list[sp.Expr]]]:
        """f = I a + v x* (I v) of node i's bodies, as lists to which the children's forces are added."""
        m, h, Ib = body[i]
        w, v = vel[i]
        In, If = Ivs[i]
        fn, ff = _inertia_times(m, h, Ib, aw, av)
        xn = _add(_cross(w, In), _cross(v, If))
        xf = _cross(w, If)
        return [[[fn[r] + xn[r]] for r in range(3)], [[ff[r] + xf[r]] for r in range(3)]]

    def backward(frc: list[list[list[list[sp.Expr]]]], tag: str) -> list[sp.Expr]:
        out: list[sp.Expr] = [_0] * NC
        for i in reversed(range(N)):
            fn = [e(sp.Add(*frc[i][0][r]), f"{i}_{tag}fn{r}") for r in range(3)]
            ff = [e(sp.Add(*frc[i][1][r]), f"{i}_{tag}ff{r}") for r in range(3)]
            for c in J.cols[i]:
                out[c] = e(_dot(S[c][0], fn) + _dot(S[c][1], ff), f"{c}_{tag}tau")
            par = nodes[i].parent
            if par >= 0:
                pn, pf = J.force_out(i, fn, ff, f"{i}_{tag}fp")
                for r in range(3):
                    frc[par][0][r].append(pn[r])
                    frc[par][1][r].append(pf[r])
        return out

    cacc: list[tuple[V3, V3]] = []
    frc: list = []
    accl: list[tuple[V3, V3]] = []
    for i, nd in enumerate(nodes):
        if nd.parent >= 0:
            win, vin = J.motion_in(i, vel[nd.parent][0], vel[nd.parent][1], "vp")
        else:
            win, vin = _zero3(), _zero3()
        Sw, Sv = J.joint_motion(i, sd)
        w = [e(win[r] + Sw[r], f"{i}_w{r}") for r in range(3)]
        v = [e(vin[r] + Sv[r], f"{i}_v{r}") for r in range(3)]
        vel.append((w, v))
        # c = v x (S sd): (w x Sw, w x Sv + v x Sw)
        cw = _cross(w, Sw)
        cv = _add(_cross(w, Sv), _cross(v, Sw))
        cacc.append(([e(x, f"{i}_cw{r}") for r, x in enumerate(cw)], [e(x, f"{i}_cv{r}") for r, x in enumerate(cv)]))
        m, h, Ib = body[i]
        In, If = _inertia_times(m, h, Ib, w, v)
        Ivs.append(([e(x, f"{i}_Ivn{r}") for r, x in enumerate(In)], [e(x, f"{i}_Ivf{r}") for r, x in enumerate(If)]))
        if nd.parent >= 0:
            aw_in, av_in = J.motion_in(i, accl[nd.parent][0], accl[nd.parent][1], "ap")
        else:
            aw_in, av_in = _zero3(), _zero3()
        aw = [e(aw_in[r] + cacc[i][0][r], f"{i}_aw{r}") for r in range(3)]
        av = [e(av_in[r] + cacc[i][1][r], f"{i}_av{r}") for r in range(3)]
        accl.append((aw, av))
        frc.append(body_force(i, aw, av))
    tau = backward(frc, "")

    # --- gravity: the composite of each subtree in the gravity field ----------------------------------
    grav: list[V3] = []
    Gt: list[sp.Expr] = []
    for i, nd in enumerate(nodes):
        gp = grav[nd.parent] if nd.parent >= 0 else k.gravity
        g = [e(x, f"{i}_g{r}") for r, x in enumerate(_mtv(J.R[i], gp))]
        grav.append(g)
        m, h, _ = comp[i]
        wn = _cross(h, g)
        wf = _scale(m, g)
        for c in J.cols[i]:
            Gt.append(e(-(_dot(S[c][0], wn) + _dot(S[c][1], wf)), f"{c}_G"))

    # --- inverse dynamics: Newton-Euler with the accelerations, the ground accelerating against gravity --
    mark = len(e.assignments)
    iacl: list[tuple[V3, V3]] = []
    ifrc: list = []
    for i, nd in enumerate(nodes):
        sdd = {c: sp.Add(*[cf * k.qdd[j] for j, cf in Tmap[c]]) for c in J.cols[i]}
        if nd.parent >= 0:
            aw_in, av_in = J.motion_in(i, iacl[nd.parent][0], iacl[nd.parent][1], "iap")
        else:
            aw_in, av_in = J.motion_in(i, _zero3(), _scale(sp.S.NegativeOne, k.gravity), "iap")
        Aw, Av = J.joint_motion(i, sdd)
        aw = [e(aw_in[r] + cacc[i][0][r] + Aw[r], f"{i}_iaw{r}") for r in range(3)]
        av = [e(av_in[r] + cacc[i][1][r] + Av[r], f"{i}_iav{r}") for r in range(3)]
        iacl.append((aw, av))
        ifrc.append(body_force(i, aw, av))
    itau = backward(ifrc, "i")
    inverse_assignments = e.assignments[mark:]
    del e.assignments[mark:]

    # --- back to the model's coordinates -----------------------------------------------------------------
    M, h, G, inverse = to_model_coordinates(e, Tmap, Mt, tau, Gt, itau, n)

    # --- world frames: energies and marker frames ----------------------------------------------------------
    world = _world_frames(nodes, J, e)
    T: sp.Expr = _0
    for i in range(N):
        m, hb, Ib = body[i]
        if m == 0 and all(x == 0 for row in Ib for x in row):
            continue
        w, v = vel[i]
        T = e(T + _dot(w, _mv(Ib, w)) / 2 + m * _dot(v, v) / 2 + _dot(w, _cross(hb, v)), f"{i}_T")
    # V from the composite first moment of each root's subtree in the ground frame, R h + m p (no world frames)
    Vg = [-_dot(k.gravity, _add(_scale(comp[i][0], J.p[i]), _mv(J.R[i], comp[i][1])))
          for i in range(N) if nodes[i].parent < 0]
    V = e(sp.Add(*Vg), "Vg") + spring_energy(k)  # type: ignore[arg-type]
    frames = {}
    jacobians = {}
    biases = {}
    velocities = {}
    for name, ref in tree.frames.items():
        frames[name] = _frame_of(ref, world)
        jacobians[name] = _frame_jacobian(ref, frames[name][0], nodes, J, world, n)
        biases[name] = _frame_bias(ref, world, vel, accl)
        velocities[name] = _frame_velocity(ref, world, vel)
    kv = k.velocity_view()
    K, D = spring_forces(kv), damper_forces(kv)  # type: ignore[arg-type]
    points = {nm: sp.Matrix(pos) for nm, (pos, _) in frames.items()}
    eqs = Equations(model=model, method="recursive", q=k.q, qd=k.qd, qdd=k.qdd, u=k.u,  # type: ignore[arg-type]
                    params=k.params, param_values=k.param_values, M=M, h=h, G=G, K=K, D=D,
                    B=input_map(kv), T=T, V=V, points=points,  # type: ignore[arg-type]
                    assignments=e.assignments, coordinates=model.coordinates(), inputs=model.inputs(),
                    inverse=inverse, inverse_assignments=inverse_assignments)
    eqs.frames = {nm: (sp.Matrix(pos), sp.Matrix(rot)) for nm, (pos, rot) in frames.items()}
    eqs.frame_jacobians = jacobians
    eqs.frame_biases = biases
    eqs.frame_velocities = velocities
    return eqs


def _frame_velocity(ref: SRef, world: list[tuple[M3, V3]], vel: list[tuple[V3, V3]]) -> sp.Matrix:
    """J qd of a frame (its Jacobian as :func:`_frame_jacobian`): the velocity of its origin and its angular
    velocity, ground frame, from its node's spatial velocity (w, v) of the recursion (node axes), for the point
    r of the node: R (v + w x r), R w."""
    if ref.node < 0:
        return sp.zeros(6, 1)
    Rw = world[ref.node][0]
    w, v = vel[ref.node]
    return sp.Matrix(_mv(Rw, _add(v, _cross(w, ref.pl))) + _mv(Rw, w))


def _frame_bias(ref: SRef, world: list[tuple[M3, V3]], vel: list[tuple[V3, V3]],
                accl: list[tuple[V3, V3]]) -> sp.Matrix:
    """J̇ qd of a frame (its Jacobian as :func:`_frame_jacobian`): the classical acceleration of its origin and
    its angular acceleration at qdd = 0, ground frame. From its node's spatial velocity (w, v) and its spatial
    acceleration at qdd = 0 without gravity (aw, av), node axes, for the point r of the node:
    a = av + aw x r + w x (v + w x r)."""
    if ref.node < 0:
        return sp.zeros(6, 1)
    Rw = world[ref.node][0]
    (w, v), (aw, av) = vel[ref.node], accl[ref.node]
    r = ref.pl
    a = _add(_add(av, _cross(aw, r)), _cross(w, _add(v, _cross(w, r))))
    return sp.Matrix(_mv(Rw, a) + _mv(Rw, aw))


def _frame_jacobian(ref: SRef, pos: V3, nodes: list[SNode], J: _Joints, world: list[tuple[M3, V3]],
                    n: int) -> sp.Matrix:
    """The (6, n) Jacobian of a frame in the ground frame: rows 0-2 the velocity of its origin, rows 3-5 its
    angular velocity (geometric: a revolute node i adds z_i and z_i x (p - o_i), a prismatic one z_i)."""
    out = sp.zeros(6, n)
    i = ref.node
    while i >= 0:
        Rw, pw = world[i]
        if nodes[i].lie is not None:
            # the node's velocity columns in its own frame: linear R e_k, angular R e_k x (p - o) and R e_k
            for c in J.cols[i]:
                zw, zv = _mv(Rw, J.S[c][0]), _mv(Rw, J.S[c][1])
                col = _add(zv, _cross(zw, [pos[r] - pw[r] for r in range(3)])) + zw
                for a_, cf in J.Tmap[c]:
                    for r in range(6):
                        out[r, a_] += cf * col[r]
            i = nodes[i].parent
            continue
        z = _mv(Rw, nodes[i].axis)
        if nodes[i].revolute:
            col = _cross(z, [pos[r] - pw[r] for r in range(3)]) + z
        else:
            col = z + _zero3()
        for a_, cf in J.Tmap[J.cols[i][0]]:
            for r in range(6):
                out[r, a_] += cf * col[r]
        i = nodes[i].parent
    return out


def _world_frames(nodes: list[SNode], J: _Joints, e: _Emitter) -> list[tuple[M3, V3]]:
    """Rotation and origin of every node in the ground frame."""
    out: list[tuple[M3, V3]] = []
    for i, nd in enumerate(nodes):
        if nd.parent < 0:
            out.append((J.R[i], J.p[i]))
            continue
        Rp, pp = out[nd.parent]
        R = [[e(x, f"{i}_W{r}{c}") for c, x in enumerate(row)] for r, row in enumerate(_mm(Rp, J.R[i]))]
        p = [e(x, f"{i}_Wp{r}") for r, x in enumerate(_add(pp, _mv(Rp, J.p[i])))]
        out.append((R, p))
    return out


def _frame_of(ref: SRef, world: list[tuple[M3, V3]]) -> tuple[V3, M3]:
    if ref.node < 0:
        return ref.pl, ref.Rl
    Rw, pw = world[ref.node]
    return _add(pw, _mv(Rw, ref.pl)), _mm(Rw, ref.Rl)


def spatial_forward_dynamics(model: ValidSpatialModel, k: Optional[SpatialKinematics] = None,
                             tree: Optional[SpatialTree] = None, F: Optional[sp.Matrix] = None,
                             F_assignments: Sequence[tuple[sp.Symbol, sp.Expr]] = (),
                             node_forces: Sequence[tuple[int, NodeForce]] = ()) -> ForwardDynamics:
    """Forward dynamics of a spatial model by the articulated-body algorithm, O(n) straight-line code.

    ``F`` (n x 1, in q, qd, the time, the parameters and the symbols of ``F_assignments``: the derivation's
    world frames, on which the force elements' laws are written) are the force elements' generalized forces
    Jᵀ F: they join the joint forces (not applied on the nodes). The assignments F needs are emitted first
    (those this recursion emits itself, the joints' rotations, are the same symbols and kept once).
    ``node_forces`` are external forces applied on nodes instead, O(1) each: ``(node, law)`` with ``law(w, v,
    e)`` the force ``(n, f)`` in the node's frame (moment about its origin) from the node's velocity ``(w, v)``
    (``e`` emits intermediates).

    Applies when the expanded tree has one node per coordinate (no couplings, no absolute two-angle link
    below another, no mass at an intermediate fraction of a variable segment); DerivationError otherwise.
    """
    k = k or spatial_kinematics(model)
    if model.couplings:
        raise DerivationError(f"model {model.name!r} couples coordinates; the articulated-body algorithm needs "
                              f"independent joints")
    tree = tree or SpatialTree(model, k)
    nodes = tree.nodes
    e = _Emitter(_prefix(k))
    J = _Joints(nodes, k, e)
    N, n, NC = len(nodes), len(k.qd), len(J.S)
    if NC != n:
        raise DerivationError(f"model {model.name!r}: the articulated-body algorithm needs one joint per "
                              f"coordinate; masses at intermediate fractions of variable segments (or absolute "
                              f"two-angle links below another) add {NC - n} dependent joints")
    Tm = sp.zeros(n, n)
    for i, row in enumerate(J.Tmap):
        for j, cf in row:
            Tm[i, j] = cf
    if Tm == sp.eye(n):
        Tinv = Tm
    else:
        if Tm.det() == 0:
            raise DerivationError(f"model {model.name!r}: the joint coordinates are not independent")
        Tinv = Tm.inv()
    kv = k.velocity_view()
    Q = -spring_forces(kv) - damper_forces(kv)  # type: ignore[arg-type]
    if k.u:
        Q += input_map(kv) * sp.Matrix(k.u)  # type: ignore[arg-type]
    if F is not None:
        Q += F
        _emit_needed(e, F, F_assignments)
    tau = [e(sp.Add(*[Tinv[j, i] * Q[j] for j in range(n) if Tinv[j, i] != 0]), f"{i}_Q") for i in range(NC)]

    def six(w: V3, v: V3) -> list[sp.Expr]:
        return list(w) + list(v)

    # pass 1 (outward): velocities, velocity-product accelerations, rigid inertias, bias forces
    vel: list[tuple[V3, V3]] = []
    cacc: list[list[sp.Expr]] = []
    IA: list[list[list[list[sp.Expr]]]] = []   # 6x6 lists of terms (upper triangle used)
    pA: list[list[list[sp.Expr]]] = []
    for i, nd in enumerate(nodes):
        if nd.parent >= 0:
            win, vin = J.motion_in(i, vel[nd.parent][0], vel[nd.parent][1], "vp")
        else:
            win, vin = _zero3(), _zero3()
        Sw, Sv = J.joint_motion(i, J.sd)
        w = [e(win[r] + Sw[r], f"{i}_w{r}") for r in range(3)]
        v = [e(vin[r] + Sv[r], f"{i}_v{r}") for r in range(3)]
        vel.append((w, v))
        cw = _cross(w, Sw)
        cv = _add(_cross(w, Sv), _cross(v, Sw))
        cacc.append([e(x, f"{i}_c{r}") for r, x in enumerate(six(cw, cv))])
        m, h, Ib = J.body[i]
        sh = _skew(h)
        full = [[Ib[r][c] for c in range(3)] + [sh[r][c] for c in range(3)] for r in range(3)]
        full += [[-sh[r][c] for c in range(3)] + [m if r == c else _0 for c in range(3)] for r in range(3)]
        # rows 3..5 of [[Ibar, [h]x], [[h]x^T, m 1]]: [h]x^T = -[h]x
        IA.append([[[full[r][c]] for c in range(6)] for r in range(6)])
        In, If = _inertia_times(m, h, Ib, w, v)
        In = [e(x, f"{i}_Ivn{r}") for r, x in enumerate(In)]
        If = [e(x, f"{i}_Ivf{r}") for r, x in enumerate(If)]
        xn = _add(_cross(w, In), _cross(v, If))
        xf = _cross(w, If)
        pA.append([[x] for x in six(xn, xf)])
    # external forces on their nodes: the bias force takes minus the external force
    for node, law in node_forces:
        fn, ff = law(vel[node][0], vel[node][1], e)
        for r, x in enumerate(six(fn, ff)):
            if not _z(x):
                pA[node][r].append(-x)
    # pass 2 (inward): articulated inertias and bias forces
    U: list[list[sp.Expr]] = [[]] * N
    Dinv: list[sp.Expr] = [_0] * NC
    uu: list[sp.Expr] = [_0] * N
    multi: dict[int, tuple] = {}     # node with several columns -> (S, U, L, 1/D, u) of its joint
    for i in reversed(range(N)):
        Ii = {}
        for r in range(6):
            for c in range(r, 6):
                Ii[r, c] = e(sp.Add(*IA[i][r][c]), f"{i}_IA{r}{c}")
        Im = [[Ii[min(r, c), max(r, c)] for c in range(6)] for r in range(6)]
        pi = [e(sp.Add(*pA[i][r]), f"{i}_pA{r}") for r in range(6)]
        par = nodes[i].parent
        if J.lie[i]:
            # k columns: U = IA S (6 x k), D = Sᵀ U (k x k, by L D Lᵀ), u = tau - Sᵀ pA; to the parent
            # Ia = IA - U D⁻¹ Uᵀ, pa = pA + Ia c + U D⁻¹ u
            cols = J.cols[i]
            Sc = [six(*J.S[c]) for c in cols]
            Uc = [[e(sp.Add(*[Im[r][c] * S_[c] for c in range(6) if S_[c] != 0]), f"{i}_U{a_}_{r}")
                   for r in range(6)] for a_, S_ in enumerate(Sc)]
            Dm = [[sp.Add(*[Sc[a_][r] * Uc[b_][r] for r in range(6) if Sc[a_][r] != 0]) for b_ in range(len(cols))]
                  for a_ in range(len(cols))]
            L, dinv = _ldl_factor(e, Dm, f"{i}_")
            for a_, c in enumerate(cols):
                Dinv[c] = dinv[a_]
            uv = [e(tau[c] - sp.Add(*[Sc[a_][r] * pi[r] for r in range(6) if Sc[a_][r] != 0]), f"{i}_u{a_}")
                  for a_, c in enumerate(cols)]
            multi[i] = (Sc, Uc, L, dinv, uv)
            if par < 0:
                continue
            W = [_ldl_apply(e, L, dinv, [Uc[a_][r] for a_ in range(len(cols))], f"{i}_W{r}_") for r in range(6)]
            z = _ldl_apply(e, L, dinv, uv, f"{i}_z")
            Ia = [[e(Im[r][c] - sp.Add(*[Uc[a_][r] * W[c][a_] for a_ in range(len(cols))]), f"{i}_Ia{r}{c}")
                   if c >= r else None for c in range(6)] for r in range(6)]
            Ia = [[Ia[min(r, c)][max(r, c)] for c in range(6)] for r in range(6)]
            ci = [sp.Add(*[Ia[r][c] * cacc[i][c] for c in range(6) if cacc[i][c] != 0]) for r in range(6)]
            pa = [e(pi[r] + ci[r] + sp.Add(*[Uc[a_][r] * z[a_] for a_ in range(len(cols))]), f"{i}_pa{r}")
                  for r in range(6)]
            _to_parent(e, J, i, par, Ia, pa, IA, pA)
            continue
        Si = six(*J.S[J.cols[i][0]])
        U[i] = [e(sp.Add(*[Im[r][c] * Si[c] for c in range(6) if Si[c] != 0]), f"{i}_U{r}") for r in range(6)]
        D = e(sp.Add(*[Si[r] * U[i][r] for r in range(6) if Si[r] != 0]), f"{i}_D")
        ci_ = J.cols[i][0]
        Dinv[ci_] = e(1 / D, f"{i}_Dinv")
        uu[i] = e(tau[ci_] - sp.Add(*[Si[r] * pi[r] for r in range(6) if Si[r] != 0]), f"{i}_u")
        if par < 0:
            continue
        Ia = [[e(Im[r][c] - U[i][r] * U[i][c] * Dinv[ci_], f"{i}_Ia{r}{c}") if c >= r else None for c in range(6)]
              for r in range(6)]
        Ia = [[Ia[min(r, c)][max(r, c)] for c in range(6)] for r in range(6)]
        ci = [sp.Add(*[Ia[r][c] * cacc[i][c] for c in range(6) if cacc[i][c] != 0]) for r in range(6)]
        uD = e(uu[i] * Dinv[ci_], f"{i}_uD")
        pa = [e(pi[r] + ci[r] + U[i][r] * uD, f"{i}_pa{r}") for r in range(6)]
        _to_parent(e, J, i, par, Ia, pa, IA, pA)
    # pass 3 (outward): accelerations; the ground accelerates against gravity
    acc: list[tuple[V3, V3]] = []
    sdd: list[sp.Expr] = [_0] * NC
    for i, nd in enumerate(nodes):
        if nd.parent >= 0:
            aw_in, av_in = J.motion_in(i, acc[nd.parent][0], acc[nd.parent][1], "ap")
        else:
            aw_in, av_in = J.motion_in(i, _zero3(), _scale(sp.S.NegativeOne, k.gravity), "ap")
        a1 = [e(x + cacc[i][r], f"{i}_a1{r}") for r, x in enumerate(six(aw_in, av_in))]
        if J.lie[i]:
            # x = D⁻¹ (u - Uᵀ a1), a = a1 + S x
            Sc, Uc, L, dinv, uv = multi[i]
            cols = J.cols[i]
            rhs = [e(uv[a_] - sp.Add(*[Uc[a_][r] * a1[r] for r in range(6)]), f"{i}_rb{a_}")
                   for a_ in range(len(cols))]
            x = _ldl_apply(e, L, dinv, rhs, f"{i}_x")
            for a_, c in enumerate(cols):
                sdd[c] = x[a_]
            a = [e(a1[r] + sp.Add(*[Sc[a_][r] * x[a_] for a_ in range(len(cols)) if Sc[a_][r] != 0]), f"{i}_a{r}")
                 for r in range(6)]
            acc.append((a[:3], a[3:]))
            continue
        ci_ = J.cols[i][0]
        qdd_i = e((uu[i] - sp.Add(*[U[i][r] * a1[r] for r in range(6)])) * Dinv[ci_], f"{i}_sdd")
        sdd[ci_] = qdd_i
        Si = six(*J.S[ci_])
        a = [e(a1[r] + Si[r] * qdd_i, f"{i}_a{r}") for r in range(6)]
        acc.append((a[:3], a[3:]))
    qdd = sp.Matrix([sp.Add(*[Tinv[j, i] * sdd[i] for i in range(NC) if Tinv[j, i] != 0]) for j in range(n)])
    return ForwardDynamics(model, k.q, k.qd, k.u, k.params, k.param_values, e.assignments, qdd,  # type: ignore[arg-type]
                           Dinv)


def _emit_needed(e: _Emitter, exprs: sp.Matrix, assignments: Sequence[tuple[sp.Symbol, sp.Expr]]) -> None:
    """Append to ``e`` the assignments (in their order) that ``exprs`` refer to, directly or through others,
    and that ``e`` does not define already."""
    index = {s: i for i, (s, _) in enumerate(assignments)}
    have = {s for s, _ in e.assignments}
    need: set[int] = set()
    stack = [s for s in exprs.free_symbols if s in index and s not in have]
    while stack:
        s = stack.pop()
        i = index[s]
        if i in need:
            continue
        need.add(i)
        stack.extend(x for x in assignments[i][1].free_symbols if x in index and x not in have)
    for i in sorted(need):
        e.assignments.append(assignments[i])
        e._names.add(str(assignments[i][0])[len(e.prefix):])    # a later emission of the name is an error


def _to_parent(e: _Emitter, J: _Joints, i: int, par: int, Ia: list[list[sp.Expr]], pa: list[sp.Expr],
               IA: list, pA: list) -> None:
    """Add node i's articulated inertia Ia and bias pa, moved to its parent's frame, to the parent's."""
    # to the parent: rotate (blockdiag(R, R) Ia blockdiag(R, R)ᵀ), then shift by p
    R, p = J.R[i], J.p[i]
    A = [row[:3] for row in Ia[:3]]
    B = [row[3:] for row in Ia[:3]]
    C = [row[3:] for row in Ia[3:]]
    Ar = _sym_emit(e, _mm(R, _mm(A, _mt(R))), f"{i}_IrA")
    Br = [[e(x, f"{i}_IrB{r}{c}") for c, x in enumerate(row)] for r, row in enumerate(_mm(R, _mm(B, _mt(R))))]
    Cr = _sym_emit(e, _mm(R, _mm(C, _mt(R))), f"{i}_IrC")
    px = _skew(p)
    # B'' = B + [p]x C ; A'' = A - B[p]x + [p]x Bᵀ - [p]x C [p]x = A + [p]x Bᵀ - B'' [p]x ; C'' = C
    # (B'' emitted once and reused in A'', as the congruence (Xᵀ Ia) X of the planar recursion does)
    pC = _mm(px, Cr)
    B2 = [[e(_sum((Br[r][c], pC[r][c])), f"{i}_IrD{r}{c}") for c in range(3)] for r in range(3)]
    A2 = _mm(B2, px)
    A3 = _mm(px, _mt(Br))
    for r in range(3):
        for c in range(3):
            if c >= r:
                IA[par][r][c].append(_sum((Ar[r][c], A3[r][c], -A2[r][c])))
                IA[par][r + 3][c + 3].append(Cr[r][c])
            IA[par][r][c + 3].append(B2[r][c])
    pn, pf = J.force_out(i, pa[:3], pa[3:], f"{i}_pp")
    for r in range(3):
        pA[par][r].append(pn[r])
        pA[par][r + 3].append(pf[r])


def _ldl_factor(e: _Emitter, A: list[list[sp.Expr]], tag: str) -> tuple[list[list[sp.Expr]], list[sp.Expr]]:
    """L D Lᵀ of a symmetric positive definite k x k matrix (a joint's Sᵀ IA S) in straight-line code: the unit
    lower triangle L and the inverse pivots 1/D (positive exactly where A is positive definite)."""
    n = len(A)
    L: list[list[sp.Expr]] = [[_0] * n for _ in range(n)]
    LD: list[list[sp.Expr]] = [[_0] * n for _ in range(n)]
    dinv: list[sp.Expr] = []
    for j in range(n):
        D = e(A[j][j] - sp.Add(*[L[j][k] * LD[j][k] for k in range(j)]), f"{tag}LD{j}")
        dinv.append(e(1 / D, f"{tag}LDi{j}"))
        for r in range(j + 1, n):
            LD[r][j] = e(A[r][j] - sp.Add(*[L[r][k] * LD[j][k] for k in range(j)]), f"{tag}LDL{r}{j}")
            L[r][j] = e(LD[r][j] * dinv[j], f"{tag}LL{r}{j}")
    return L, dinv


def _ldl_apply(e: _Emitter, L: list[list[sp.Expr]], dinv: list[sp.Expr], b: list[sp.Expr], tag: str
               ) -> list[sp.Expr]:
    """x with L D Lᵀ x = b (a factorisation of :func:`_ldl_factor`)."""
    n = len(b)
    y: list[sp.Expr] = []
    for r in range(n):
        y.append(e(b[r] - sp.Add(*[L[r][k] * y[k] for k in range(r)]), f"{tag}y{r}"))
    x: list[sp.Expr] = [_0] * n
    for r in reversed(range(n)):
        x[r] = e(y[r] * dinv[r] - sp.Add(*[L[k][r] * x[k] for k in range(r + 1, n)]), f"{tag}x{r}")
    return x


def _sym_emit(e: _Emitter, A: M3, tag: str) -> M3:
    out = {}
    for r in range(3):
        for c in range(r, 3):
            out[r, c] = e(A[r][c], f"{tag}{r}{c}")
    return [[out[min(r, c), max(r, c)] for c in range(3)] for r in range(3)]


def spatial_articulated(eqs: Equations, k: Optional[SpatialKinematics] = None,
                        tree: Optional[SpatialTree] = None) -> tuple[Optional[ForwardDynamics], str]:
    """The articulated-body forward dynamics of a spatial model's equations, or None and the reason."""
    model = eqs.model
    if eqs.couplings or getattr(model, "couplings", None):
        return None, "the model couples coordinates"
    try:
        fd = spatial_forward_dynamics(model, k, tree, eqs.F if eqs.forces else None,  # type: ignore[arg-type]
                                      eqs.assignments)
    except DerivationError as exc:
        return None, str(exc)
    pivots = [sp.sympify(d) for d in fd.inverse_pivots]
    if any(d.is_Number and not (d.is_finite and d > 0) for d in pivots):
        return None, "an articulated inertia of the model is not positive"
    return fd, ""


#: Codes of the joints with a configuration of their own in ``Equations.lie_joints`` and the table's
#: ``lie_joints`` (``RODGEN_JOINT_FREE`` ...).
LIE_CODES = {"free": 0, "spherical": 1, "planar": 2}


def configuration_rate(k: SpatialKinematics, tree: SpatialTree
                       ) -> tuple[sp.Matrix, tuple[tuple[int, int, int], ...]]:
    """dq/dt (nq, 1) of a model with free, spherical or planar joints, and their layout (code of
    :data:`LIE_CODES`, index of the first coordinate in q, of the first velocity in qd).

    A free joint's position turns with its rotation, d[x y z]/dt = R(quat) v_linear; a quaternion (free or
    spherical joint) by d quat/dt = 1/2 quat ⊗ (w, 0) with w the angular velocity in the link's own frame
    (vector part 1/2 (qw w + qv × w), scalar part -1/2 qv·w); a planar joint's position by Rz(theta) (vx, vy)
    and theta by wz; every other coordinate's rate is its velocity."""
    rate: list[sp.Expr] = [_0] * len(k.q)
    index = {s: i for i, s in enumerate(k.q)}
    for qj, vj in k.vel_of.items():
        rate[index[qj]] = k.qd[vj]
    layout: list[tuple[int, int, int]] = []
    for nd in tree.nodes:
        if nd.lie is None:
            continue
        kind, syms, v0 = nd.lie
        i0 = index[syms[0]]
        layout.append((LIE_CODES[kind], i0, v0))
        if kind == "planar":
            c, s = sp.cos(syms[2]), sp.sin(syms[2])
            vx, vy, wz = k.qd[v0:v0 + 3]
            rate[i0], rate[i0 + 1], rate[i0 + 2] = c * vx - s * vy, s * vx + c * vy, wz
            continue
        quat = syms[-4:]
        ang = k.qd[v0 + 3:v0 + 6] if kind == "free" else k.qd[v0:v0 + 3]
        j0 = i0
        if kind == "free":
            R = quaternion_matrix(*quat)
            lin = k.qd[v0:v0 + 3]
            for r in range(3):
                rate[i0 + r] = sp.expand(_dot(R[r], lin))
            j0 = i0 + 3
        qv, qw = quat[:3], quat[3]
        vec = _add(_scale(qw, ang), _cross(qv, ang))
        for r in range(3):
            rate[j0 + r] = vec[r] / 2
        rate[j0 + 3] = -_dot(qv, ang) / 2
    return sp.Matrix(rate), tuple(layout)


def derive_spatial_model(model: ValidSpatialModel, method: str) -> Equations:
    """``rodgen.derive`` for a spatial model: ``"recursive"``, ``"matrix"`` (the recursive equations
    substituted into closed form and simplified, for small models: :mod:`rodgen.symbolic.closed_form`) or
    ``"lagrange"`` (the reference: Lagrange's equations from the kinetic and potential energy)."""
    k = spatial_kinematics(model)
    tree = SpatialTree(model, k)
    if model.lie and model.couplings:
        raise DerivationError(f"model {model.name!r}: coupled coordinates with a free, spherical or planar joint "
                              f"are not supported yet")
    if method == "lagrange" and model.lie:
        raise DerivationError(f"model {model.name!r} has a free, spherical or planar joint: the Lagrange "
                              f"reference takes joints whose velocities are the coordinates' rates only; use "
                              f"method='recursive'")
    if method == "lagrange":
        from .spatial_lagrange import derive_spatial_lagrange
        eqs = derive_spatial_lagrange(model)
    else:
        eqs = derive_spatial(model, k, tree)
    frames, jacobians = eqs.frames, eqs.frame_jacobians
    if model.couplings:
        from .coupling import coupling_functions, reduce_couplings
        full_q = list(eqs.q)
        f = coupling_functions(eqs)       # of the full equations: dependent symbol -> its expression
        eqs = reduce_couplings(eqs)
        # d q_full / d q: the independent coordinates' own columns, the coupled ones' derivatives
        Jc = sp.Matrix([[sp.diff(f.get(qf, qf), qi) for qi in eqs.q] for qf in full_q])
        eqs.frames = {nm: (p.xreplace(f), R.xreplace(f)) for nm, (p, R) in frames.items()}
        eqs.frame_jacobians = {nm: jac.xreplace(f) * Jc for nm, jac in jacobians.items()}
        eqs.frame_biases = {}   # J̇ of the coupled coordinates' map too: the rows differentiate J qd
        eqs.frame_velocities = {}
    else:
        eqs.frames, eqs.frame_jacobians = frames, jacobians
    velocity_names = [c.name for c in eqs.coordinates] if not model.lie else [
        c or v for v, c in model.velocities()]
    for i, name in enumerate(velocity_names):
        if eqs.M[i, i] == 0:
            link = next((x.link for x in model.coordinates() if x.name == name), None)
            raise ModelError(f"coordinate {name!r} moves no mass: the mass matrix is singular",
                             source=model.source, where=f"link {link!r}")
    from .forces import apply_forces
    apply_forces(eqs)
    eqs.articulated, eqs.articulated_reason = spatial_articulated(eqs, k, tree)
    if model.lie:
        eqs.configuration_rate, eqs.lie_joints = configuration_rate(k, tree)
    # a model with contacts, loops or dry friction gets its constraint blocks (its limits among them); a
    # model with joint limits alone keeps them as data (URDF limits are not constraints of the dynamics)
    if model.contacts or model.loops or model.frictions():
        from .constraints import constraint_equations
        eqs.constraints = constraint_equations(eqs)
    else:
        eqs.constraints = []
    if method == "matrix":
        from .closed_form import closed_form
        eqs = closed_form(eqs)
    return eqs


__all__ = ["derive_spatial", "spatial_forward_dynamics", "SpatialTree", "SNode", "SRef", "spatial_kinematics",
           "rpy_matrix", "derive_spatial_model"]
