"""The recursive method: composite-body and Newton–Euler recursions over an expanded rigid tree.

Borisov's recursive construction (SEEDS §1.6) builds the (n+1)-link matrices
from the n-link ones; done as an algorithm over the tree it is the
composite-rigid-body algorithm for the mass matrix and the recursive
Newton–Euler algorithm for the velocity and gravity terms. Every step is
emitted as a new intermediate Symbol bound to a small expression
(``Equations.assignments``); nothing is expanded, so the number of
assignments grows like n (velocity and gravity terms) and n·depth (the mass
matrix), never like n⁴.

The expanded tree
-----------------
The model is rewritten as a tree of *nodes*, each a body frame moved by one
joint relative to its parent frame (or to the ground):

* the angle of every link is a **revolute** node at the link's proximal
  hinge, rotated by ``beta + s`` where ``s`` is the tree coordinate (the
  angle relative to the parent link) and ``beta`` a constant offset;
* every variable segment is a **prismatic** node along the link axis, its
  tree coordinate the segment length;
* a point on a variable segment at an intermediate fraction ``a`` (a mass,
  a rod's centre, a marker that carries a child link) sits on a *virtual*
  prismatic node with tree coordinate ``a*l``;
* a floating base is two prismatic nodes along x and y.

Rigid segments and constant offsets are fixed translations inside a node
frame. Masses and rods are rigid bodies (mass, first moment, inertia about
the node origin) attached to a node. The tree coordinates are a constant
linear map of the model's coordinates, ``s = T q`` (absolute angles become
differences, virtual coordinates fractions of lengths), so by virtual work

    M = Tᵀ M_tree T,   h = Tᵀ h_tree,   G = Tᵀ G_tree.

Forward dynamics
----------------
:func:`forward_dynamics` runs the articulated-body algorithm over the same
tree and returns ``qdd`` as straight-line assignments, O(n) operations
instead of the O(n³) of a dense factorisation of M. It applies when the tree's
joints are the model's coordinates up to the constant map ``T`` (no masses at
intermediate fractions of variable segments, no coupled coordinates).

Planar spatial algebra: a motion vector is ``(w, vx, vy)`` (angular rate and
velocity of the body point at the frame origin), a force ``(n, fx, fy)``
(moment about the frame origin and force), a rigid-body inertia
``(m, hx, hy, I)`` (mass, first moment ``m c``, moment of inertia about the
origin), all in node coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import sympy as sp

from ..errors import DerivationError
from ..model.expr import Expression
from ..model.valid import AnyModel, ValidForce, ValidLink, ValidModel, valid_model
from .common import damper_forces, input_map, spring_energy, spring_forces
from .convert import to_sympy
from .equations import Equations, ForwardDynamics
from .kinematics import Kinematics, build_kinematics

_0 = sp.Integer(0)
_1 = sp.Integer(1)


@dataclass
class Node:
    """One joint + body frame of the expanded tree."""

    name: str
    parent: int                      # index of the parent node, -1 for the ground
    revolute: bool                   # else prismatic
    p0: tuple[sp.Expr, sp.Expr]      # fixed translation in the parent frame
    coord: sp.Expr                   # tree coordinate, linear in q
    beta: sp.Expr = _0               # revolute: constant angle offset
    axis: tuple[sp.Expr, sp.Expr] = (_1, _0)   # prismatic: unit direction in the parent (= own) frame
    bodies: list[tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]] = field(default_factory=list)  # (m, cx, cy, Icm)


@dataclass(frozen=True)
class Ref:
    """A point fixed in a node frame (node -1 is the ground frame)."""

    node: int
    x: sp.Expr = _0
    y: sp.Expr = _0

    def shifted(self, dx: sp.Expr, dy: sp.Expr = _0) -> "Ref":
        return Ref(self.node, self.x + dx, self.y + dy)


class _Emitter:
    """Collects ``(Symbol, expression)`` assignments; trivial expressions stay inline."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        self._names: set[str] = set()

    def __call__(self, expr: sp.Expr, name: str) -> sp.Expr:
        if expr.is_Atom or (expr.is_Mul and len(expr.args) == 2 and expr.args[0] == -1 and expr.args[1].is_Atom):
            return expr
        assert name not in self._names, f"intermediate {name!r} emitted twice"
        self._names.add(name)
        sym = sp.Symbol(f"{self.prefix}{name}", real=True)
        self.assignments.append((sym, expr))
        return sym


class _TreeBuilder:
    """Turns a ValidModel into the expanded tree (see module docstring)."""

    def __init__(self, model: ValidModel, k: Kinematics) -> None:
        self.model = model
        self.k = k
        self.pmap = {p.name: s for p, s in zip(model.parameters, k.params)}
        self.qmap = {str(s): s for s in k.q}
        self.nodes: list[Node] = []
        self.link_frame: dict[str, Ref] = {}
        self.seg_start: dict[str, list[Ref]] = {}
        self.seg_end: dict[str, list[Ref]] = {}
        self._virtual: dict[tuple[str, int, sp.Expr], int] = {}

    def X(self, v: Expression) -> sp.Expr:
        return to_sympy(v, self.pmap)

    def add(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def build(self) -> list[Node]:
        model = self.model
        base = Ref(-1)
        if model.base == "floating":
            bx, by = (self.qmap[nm] for nm in model.base_coordinates)
            ix = self.add(Node("base_x", -1, False, (_0, _0), bx, axis=(_1, _0)))
            iy = self.add(Node("base_y", ix, False, (_0, _0), by, axis=(_0, _1)))
            base = Ref(iy)
        done: set[str] = set()
        pending = list(model.links)
        while pending:                       # parents before children, whatever the declaration order
            progressed = False
            for lk in list(pending):
                if lk.parent is None or lk.parent in done:
                    self._link(lk, base)
                    done.add(lk.name)
                    pending.remove(lk)
                    progressed = True
            if not progressed:
                raise DerivationError(f"links {[lk.name for lk in pending]} do not hang from the ground")
        return self.nodes

    def _link(self, lk: ValidLink, base: Ref) -> None:
        k = self.k
        if lk.parent is None:
            hinge = base.shifted(self.X(lk.origin[0]), self.X(lk.origin[1]))
            parent_theta: sp.Expr = _0
        else:
            parent = self.model.link_named(lk.parent)
            hinge = self._attachment(parent, lk.at)
            parent_theta = k.theta[parent.name]
        rot = sp.expand(k.theta[lk.name] - parent_theta)
        lin = sp.Add(*[sp.diff(rot, qi) * qi for qi in k.q])
        beta = sp.simplify(rot - lin)
        if any(s in beta.free_symbols for s in k.q):
            raise DerivationError(f"the angle of link {lk.name!r} is not linear in the coordinates")
        rev = self.add(Node(lk.name, hinge.node, True, (hinge.x, hinge.y), lin, beta=beta))
        frame = Ref(rev)
        self.link_frame[lk.name] = frame
        starts: list[Ref] = []
        ends: list[Ref] = []
        for sg in lk.segments:
            starts.append(frame)
            if sg.variable:
                lvar = k.lengths[sg.name]
                frame = Ref(self.add(Node(sg.name, frame.node, False, (frame.x, frame.y), lvar)))
            else:
                frame = frame.shifted(self.X(sg.length))
            ends.append(frame)
        self.seg_start[lk.name], self.seg_end[lk.name] = starts, ends
        for i, sg in enumerate(lk.segments):
            for pm in sg.masses:
                at = self._station(lk, i, pm.fraction, pm.offset, pm.lateral)
                self.nodes[at.node].bodies.append((self.X(pm.mass), at.x, at.y, _0))
            for rd in sg.rods:
                at = self._station(lk, i, rd.fraction, rd.offset, rd.lateral)
                self.nodes[at.node].bodies.append((self.X(rd.mass), at.x, at.y, self.X(rd.inertia)))

    def _station(self, lk: ValidLink, i: Optional[int], fraction: Expression, offset: Expression,
                 lateral: Expression) -> Ref:
        """The point ``fraction*length + offset`` (+ ``lateral`` to the left) of segment i of a link."""
        off, lat = self.X(offset), self.X(lateral)
        if i is None:
            return self.link_frame[lk.name].shifted(off, lat)
        sg = lk.segments[i]
        a = self.X(fraction)
        start, end = self.seg_start[lk.name][i], self.seg_end[lk.name][i]
        if a == 0:
            return start.shifted(off, lat)
        if a == 1:
            return end.shifted(off, lat)
        if not sg.variable:
            return start.shifted(a * self.X(sg.length) + off, lat)
        key = (sg.name, start.node, a)
        if key not in self._virtual:   # a virtual prismatic joint with coordinate a*l
            self._virtual[key] = self.add(Node(f"{sg.name}_at", start.node, False, (start.x, start.y),
                                               a * self.k.lengths[sg.name]))
        return Ref(self._virtual[key], off, lat)

    def point_ref(self, name: str) -> Optional[Ref]:
        """The named point (a key of ``Equations.points``) in its node's frame, or None where that needs a
        node the tree does not have (a point at an intermediate fraction of a variable segment)."""
        for lk in self.model.links:
            if name == f"{lk.name}.joint":
                return self.link_frame[lk.name]
            for i, sg in enumerate(lk.segments):
                if name == f"{sg.name}.end":
                    return self.seg_end[lk.name][i]
                for j, pm in enumerate(sg.masses):
                    if name == (pm.name or f"{sg.name}.m{j}"):
                        return self._fixed_station(lk, i, pm.fraction, pm.offset, pm.lateral)
                for j, rd in enumerate(sg.rods):
                    if name == (rd.name or f"{sg.name}.rod{j}"):
                        return self._fixed_station(lk, i, rd.fraction, rd.offset, rd.lateral)
            for mk in lk.markers:
                if mk.name == name:
                    idx = None if mk.segment is None else [s.name for s in lk.segments].index(mk.segment)
                    return self._fixed_station(lk, idx, mk.fraction, mk.offset, mk.lateral)
        return None

    def _fixed_station(self, lk: ValidLink, i: Optional[int], fraction: Expression, offset: Expression,
                       lateral: Expression) -> Optional[Ref]:
        """:meth:`_station` without adding a node: None where it would."""
        if i is not None and lk.segments[i].variable and self.X(fraction) not in (0, 1):
            key = (lk.segments[i].name, self.seg_start[lk.name][i].node, self.X(fraction))
            if key not in self._virtual:
                return None
        return self._station(lk, i, fraction, offset, lateral)

    def _attachment(self, parent: ValidLink, at: str) -> Ref:
        names = [s.name for s in parent.segments]
        if at == "start":
            return self.link_frame[parent.name]
        if at == "end":
            return self.seg_end[parent.name][-1] if names else self.link_frame[parent.name]
        if at in names:
            return self.seg_end[parent.name][names.index(at)]
        mk = next(m for m in parent.markers if m.name == at)
        idx = None if mk.segment is None else names.index(mk.segment)
        return self._station(parent, idx, mk.fraction, mk.offset, mk.lateral)


def expanded_tree(model: AnyModel) -> tuple[list[Node], Kinematics]:
    """The expanded rigid tree of a model (a Model is validated on the way in) and its kinematics.

    Useful to rebuild the same mechanism in a rigid-body library (Pinocchio, MuJoCo):
    node ``i`` is a joint whose coordinate is ``nodes[i].coord`` (linear in ``kinematics.q``).
    """
    vm = valid_model(model)
    k = build_kinematics(vm)
    return _TreeBuilder(vm, k).build(), k


def _prefix(k: Kinematics) -> str:
    """A name prefix no model symbol starts with (model names start with a letter)."""
    taken = [str(s) for s in [*k.q, *k.qd, *k.qdd, *k.u, *k.params]]
    prefix = "r_"
    while any(t.startswith(prefix) for t in taken):
        prefix += "_"
    return prefix


class _Joints:
    """Per-node joint quantities shared by the recursions: the map T, rotations, origins, motion
    subspaces, rates and body inertias, each emitted once."""

    def __init__(self, nodes: list[Node], k: Kinematics, e: _Emitter) -> None:
        self.e = e
        # T: tree coordinate rates are T qd (T constant, sparse)
        self.Tmap: list[list[tuple[int, sp.Expr]]] = []
        for nd in nodes:
            free = sp.sympify(nd.coord).free_symbols
            row = [(j, sp.diff(nd.coord, qj)) for j, qj in enumerate(k.q) if qj in free]
            row = [(j, cf) for j, cf in row if cf != 0]
            if any(qj in cf.free_symbols for _, cf in row for qj in k.q):
                raise DerivationError(f"joint {nd.name!r}: coordinate {nd.coord} is not linear in q")
            self.Tmap.append(row)
        # joint transforms: rotation (c, s) and origin (px, py) of node i in its parent frame
        self.c: list[sp.Expr] = []
        self.s: list[sp.Expr] = []
        self.px: list[sp.Expr] = []
        self.py: list[sp.Expr] = []
        self.S: list[tuple[sp.Expr, sp.Expr, sp.Expr]] = []   # motion subspace (w, vx, vy), node coordinates
        self.sd: list[sp.Expr] = []                           # tree coordinate rate
        for i, nd in enumerate(nodes):
            self.sd.append(e(sp.Add(*[cf * k.qd[j] for j, cf in self.Tmap[i]]), f"{i}_sd"))
            if nd.revolute:
                ang = nd.beta + nd.coord
                self.c.append(e(sp.cos(ang), f"{i}_c"))
                self.s.append(e(sp.sin(ang), f"{i}_s"))
                self.px.append(e(nd.p0[0], f"{i}_px"))
                self.py.append(e(nd.p0[1], f"{i}_py"))
                self.S.append((_1, _0, _0))
            else:
                self.c.append(_1)
                self.s.append(_0)
                self.px.append(e(nd.p0[0] + nd.coord * nd.axis[0], f"{i}_px"))
                self.py.append(e(nd.p0[1] + nd.coord * nd.axis[1], f"{i}_py"))
                self.S.append((_0, nd.axis[0], nd.axis[1]))
        # rigid-body inertia of the bodies on each node, about the node origin
        self.body: list[tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]] = []
        for i, nd in enumerate(nodes):
            m = sp.Add(*[b[0] for b in nd.bodies])
            hx = sp.Add(*[b[0] * b[1] for b in nd.bodies])
            hy = sp.Add(*[b[0] * b[2] for b in nd.bodies])
            inertia = sp.Add(*[b[3] + b[0] * (b[1] ** 2 + b[2] ** 2) for b in nd.bodies])
            self.body.append((e(m, f"{i}_m"), e(hx, f"{i}_hx"), e(hy, f"{i}_hy"), e(inertia, f"{i}_I")))

    def motion_in(self, i: int, v: tuple[sp.Expr, ...], tag: str) -> tuple[sp.Expr, ...]:
        """Motion vector of the parent frame, expressed in node i's frame."""
        c, s, e = self.c[i], self.s[i], self.e
        w, vx, vy = v
        ux, uy = vx - w * self.py[i], vy + w * self.px[i]
        return (w, e(c * ux + s * uy, f"{i}_{tag}x"), e(-s * ux + c * uy, f"{i}_{tag}y"))

    def force_out(self, i: int, f: tuple[sp.Expr, ...], tag: str) -> tuple[sp.Expr, ...]:
        """Force in node i's frame, expressed in its parent's frame (moment about the parent origin)."""
        c, s, e = self.c[i], self.s[i], self.e
        nn, fx, fy = f
        Fx = e(c * fx - s * fy, f"{tag}x")
        Fy = e(s * fx + c * fy, f"{tag}y")
        return (e(nn + self.px[i] * Fy - self.py[i] * Fx, f"{tag}n"), Fx, Fy)


def to_model_coordinates(e: _Emitter, Tmap: Sequence[Sequence[tuple[int, sp.Expr]]],
                         Mt: dict[tuple[int, int], sp.Expr], tau: Sequence[sp.Expr], Gt: Sequence[sp.Expr],
                         itau: Sequence[sp.Expr], n: int) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix]:
    """The tree's M, h, G and inverse dynamics in the model's coordinates: ``M = T' M_tree T``,
    ``h = T' h_tree``, ``G = T' G_tree``, ``inverse = T' tau_tree``, with ``T`` given row by row as
    ``Tmap`` (node -> its (coordinate, coefficient) terms); compound entries of M, h, G become
    assignments of ``e``. Shared by the planar and the spatial derivation."""
    N = len(tau)
    M = sp.zeros(n, n)
    h = sp.zeros(n, 1)
    G = sp.zeros(n, 1)
    for (i, j), val in Mt.items():
        if val == 0:
            continue
        for a_, ca in Tmap[i]:
            for b_, cb in Tmap[j]:
                M[a_, b_] += ca * cb * val
                if i != j:
                    M[b_, a_] += ca * cb * val
    inverse = sp.zeros(n, 1)
    for i in range(N):
        for a_, ca in Tmap[i]:
            h[a_] += ca * tau[i]
            G[a_] += ca * Gt[i]
            inverse[a_] += ca * itau[i]
    for a_ in range(n):
        for b_ in range(a_, n):
            if len(M[a_, b_].args) > 1 and not M[a_, b_].is_Mul:
                M[a_, b_] = e(M[a_, b_], f"M_{a_}_{b_}")
            M[b_, a_] = M[a_, b_]
        h[a_] = e(h[a_], f"h_{a_}") if h[a_].is_Add else h[a_]
        G[a_] = e(G[a_], f"G_{a_}") if G[a_].is_Add else G[a_]
    return M, h, G, inverse


def derive_recursive(model: ValidModel) -> Equations:
    """Equations of motion by the composite-body (M) and Newton–Euler (h, G) recursions."""
    k = build_kinematics(model)
    nodes = _TreeBuilder(model, k).build()
    e = _Emitter(_prefix(k))
    N = len(nodes)
    n = len(k.q)
    J = _Joints(nodes, k, e)
    Tmap, c, s, px, py, S, sd, body = J.Tmap, J.c, J.s, J.px, J.py, J.S, J.sd, J.body
    motion_in, force_out = J.motion_in, J.force_out

    # --- composite-rigid-body algorithm: composite inertias, then M_tree ---------------------------
    acc: list[list[list[sp.Expr]]] = [[[b] for b in body[i]] for i in range(N)]
    world: list[list[sp.Expr]] = [[], [], []]            # composite (m, hx, hy) of everything, ground frame
    comp: list[tuple[sp.Expr, ...]] = [()] * N
    for i in reversed(range(N)):
        m, hx, hy, inertia = (e(sp.Add(*t), f"{i}_C{nm}") for t, nm in zip(acc[i], ("m", "hx", "hy", "I")))
        comp[i] = (m, hx, hy, inertia)
        rhx = e(c[i] * hx - s[i] * hy, f"{i}_Rhx")
        rhy = e(s[i] * hx + c[i] * hy, f"{i}_Rhy")
        moved = (m, m * px[i] + rhx, m * py[i] + rhy,
                 inertia + m * (px[i] ** 2 + py[i] ** 2) + 2 * (px[i] * rhx + py[i] * rhy))
        p = nodes[i].parent
        if p >= 0:
            for slot, val in zip(acc[p], moved):
                slot.append(val)
        else:
            for slot, val in zip(world, moved[:3]):
                slot.append(val)

    Mt: dict[tuple[int, int], sp.Expr] = {}
    for i in range(N):
        m, hx, hy, inertia = comp[i]
        w, sx, sy = S[i]
        # F = I^c S
        F: tuple[sp.Expr, ...] = (inertia * w + hx * sy - hy * sx, m * sx - w * hy, m * sy + w * hx)
        F = tuple(e(fv, f"{i}_F{nm}") for fv, nm in zip(F, "nxy"))
        Mt[i, i] = e(w * F[0] + sx * F[1] + sy * F[2], f"M{i}_{i}")
        j = i
        while nodes[j].parent >= 0:
            F = force_out(j, F, f"{i}_F{j}")
            j = nodes[j].parent
            wj, sxj, syj = S[j]
            Mt[i, j] = e(wj * F[0] + sxj * F[1] + syj * F[2], f"M{i}_{j}")

    def body_force(i: int, a: tuple[sp.Expr, ...], Iv: tuple[sp.Expr, ...]) -> list[list[sp.Expr]]:
        """f = I a + v x* (I v) of node i's bodies, as lists to which the children's forces are added."""
        m, hx, hy, inertia = body[i]
        w, vx, vy = vel[i]
        return [[inertia * a[0] + hx * a[2] - hy * a[1] + vx * Iv[2] - vy * Iv[1]],
                [m * a[1] - a[0] * hy - w * Iv[2]],
                [m * a[2] + a[0] * hx + w * Iv[1]]]

    def backward(frc: list[list[list[sp.Expr]]], tag: str) -> list[sp.Expr]:
        """The backward pass: each node's force (its own and its children's, summed), projected on its
        motion subspace; the names of the intermediates are prefixed with ``tag``."""
        out: list[sp.Expr] = [_0] * N
        for i in reversed(range(N)):
            f = tuple(e(sp.Add(*t), f"{i}_{tag}f{nm}") for t, nm in zip(frc[i], "nxy"))
            w, sx, sy = S[i]
            out[i] = e(w * f[0] + sx * f[1] + sy * f[2], f"{i}_{tag}tau")
            p = nodes[i].parent
            if p >= 0:
                for slot, val in zip(frc[p], force_out(i, f, f"{i}_{tag}fp")):
                    slot.append(val)
        return out

    # --- recursive Newton-Euler with qdd = 0 and no gravity: velocity terms ----------------------
    zero3 = (_0, _0, _0)
    vel: list[tuple[sp.Expr, ...]] = []
    acl: list[tuple[sp.Expr, ...]] = []
    frc: list[list[list[sp.Expr]]] = []
    Ivs: list[tuple[sp.Expr, ...]] = []
    for i, nd in enumerate(nodes):
        vp = vel[nd.parent] if nd.parent >= 0 else zero3
        ap = acl[nd.parent] if nd.parent >= 0 else zero3
        vin = motion_in(i, vp, "vp") if nd.parent >= 0 else zero3
        ain = motion_in(i, ap, "ap") if nd.parent >= 0 else zero3
        Sq = tuple(sv * sd[i] for sv in S[i])
        v = (e(vin[0] + Sq[0], f"{i}_w"), e(vin[1] + Sq[1], f"{i}_vx"), e(vin[2] + Sq[2], f"{i}_vy"))
        w, vx, vy = v
        # a = X a_p + v x S sd   (motion cross product)
        a = (ain[0], e(ain[1] - w * Sq[2] + vy * Sq[0], f"{i}_ax"), e(ain[2] + w * Sq[1] - vx * Sq[0], f"{i}_ay"))
        vel.append(v)
        acl.append(a)
        m, hx, hy, inertia = body[i]
        # f = I a + v x* (I v)
        Iv = (inertia * w + hx * vy - hy * vx, m * vx - w * hy, m * vy + w * hx)
        Iv = tuple(e(x, f"{i}_Iv{nm}") for x, nm in zip(Iv, "nxy"))
        Ivs.append(Iv)
        frc.append(body_force(i, a, Iv))
    tau = backward(frc, "")

    # --- gravity: the composite of each subtree in the gravity field -----------------------------
    gx0, gy0 = k.gravity
    grav: list[tuple[sp.Expr, sp.Expr]] = []
    Gt: list[sp.Expr] = []
    for i, nd in enumerate(nodes):
        gpx, gpy = grav[nd.parent] if nd.parent >= 0 else (gx0, gy0)
        g = (e(c[i] * gpx + s[i] * gpy, f"{i}_gx"), e(-s[i] * gpx + c[i] * gpy, f"{i}_gy"))
        grav.append(g)
        m, hx, hy, _ = comp[i]
        w, sx, sy = S[i]
        Gt.append(e(-(w * (hx * g[1] - hy * g[0]) + m * (sx * g[0] + sy * g[1])), f"{i}_G"))

    # --- recursive Newton-Euler with the accelerations and gravity: M qdd + h + G (inverse dynamics) --
    # the same recursion as the velocity terms, each node's acceleration with S sdd added and the ground
    # accelerating against gravity: O(n) code where M qdd + bias costs O(n^2)
    mark = len(e.assignments)          # what follows refers to qdd: kept apart from the assignments of M, h, G
    iacl: list[tuple[sp.Expr, ...]] = []
    ifrc: list[list[list[sp.Expr]]] = []
    for i, nd in enumerate(nodes):
        sdd = sp.Add(*[cf * k.qdd[j] for j, cf in Tmap[i]])
        ain = motion_in(i, iacl[nd.parent] if nd.parent >= 0 else (_0, -gx0, -gy0), "iap")
        w, vx, vy = vel[i]
        Sq = tuple(sv * sd[i] for sv in S[i])
        a = (e(ain[0] + S[i][0] * sdd, f"{i}_iaw"),
             e(ain[1] - w * Sq[2] + vy * Sq[0] + S[i][1] * sdd, f"{i}_iax"),
             e(ain[2] + w * Sq[1] - vx * Sq[0] + S[i][2] * sdd, f"{i}_iay"))
        iacl.append(a)
        ifrc.append(body_force(i, a, Ivs[i]))
    itau = backward(ifrc, "i")
    inverse_assignments = e.assignments[mark:]
    del e.assignments[mark:]

    # --- back to the model's coordinates: M = T' M_tree T, h = T' h_tree, G = T' G_tree ----------
    M, h, G, inverse = to_model_coordinates(e, Tmap, Mt, tau, Gt, itau, n)

    # --- energies: T from the node velocities, V from the composite first moment -----------------
    T: sp.Expr = _0
    for i in range(N):                   # a running sum, one small assignment per body
        m, hx, hy, inertia = body[i]
        w, vx, vy = vel[i]
        if m == 0 and inertia == 0:
            continue
        T = e(T + m * (vx ** 2 + vy ** 2) / 2 + w * (hx * vy - hy * vx) + inertia * w ** 2 / 2, f"{i}_T")
    V = e(-(gx0 * sp.Add(*world[1]) + gy0 * sp.Add(*world[2])), "Vg") + spring_energy(k)
    K, D = spring_forces(k), damper_forces(k)

    return Equations(model=model, method="recursive", q=k.q, qd=k.qd, qdd=k.qdd, u=k.u, params=k.params,
                     param_values=k.param_values, M=M, h=h, G=G, K=K, D=D,
                     B=input_map(k), T=T, V=V, points={nm: v.cartesian() for nm, v in k.points.items()},
                     assignments=e.assignments, coordinates=model.coordinates(), inputs=model.inputs(),
                     inverse=inverse, inverse_assignments=inverse_assignments)


def forward_dynamics(source: AnyModel, extra: Optional[sp.Matrix] = None,
                     elements: Sequence[tuple[ValidForce, sp.Matrix]] = ()) -> ForwardDynamics:
    """Forward dynamics by the articulated-body algorithm (Featherstone), O(n) operations.

    ``source`` is a ValidModel, or a Model (validated on the way in). ``extra`` (n x 1) are further
    generalized forces on the right-hand side in the model's symbols. ``elements`` are force elements
    with their generalized forces Jᵀ F: a viscous or Coulomb element at a point of the tree acts as a
    force on its node (the point's velocity from the node's, the law in the node's frame, which is its
    link's: O(1) per element); any other adds its Jᵀ F to the joint forces.

    Applies when the expanded tree's joints are the model's coordinates up to a
    constant invertible map (``T`` square): chains and trees of links whose
    masses sit at the ends of variable segments, at fixed offsets or on rigid
    segments. A mass at an intermediate fraction of a variable segment couples
    two joints of the tree; such models raise DerivationError (use the mass
    matrix and a Cholesky solve instead).
    """
    model = valid_model(source)
    k = build_kinematics(model)
    if model.couplings:
        raise DerivationError(f"model {model.name!r} couples coordinates; the articulated-body algorithm "
                              f"needs independent joints (use the mass matrix and a Cholesky solve)")
    builder = _TreeBuilder(model, k)
    nodes = builder.build()
    n, N = len(k.q), len(nodes)
    if N != n:
        raise DerivationError(f"model {model.name!r}: the articulated-body algorithm needs one joint per "
                              f"coordinate; masses at intermediate fractions of variable segments add "
                              f"{N - n} dependent joints")
    e = _Emitter(_prefix(k))
    J = _Joints(nodes, k, e)
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
    # generalized forces in tree coordinates: T^-T (B u - K - D)
    Q = -spring_forces(k) - damper_forces(k)
    if k.u:
        Q += input_map(k) * sp.Matrix(k.u)
    if extra is not None:
        Q += extra
    from .forces import LINK_FRAME_LAWS, link_frame_law
    local: list[tuple[ValidForce, Ref]] = []
    for f, generalized in elements:
        ref = builder.point_ref(f.point) if f.type in LINK_FRAME_LAWS else None
        if ref is None or ref.node < 0:
            Q += generalized
        else:
            local.append((f, ref))
    tau = [e(sp.Add(*[Tinv[j, i] * Q[j] for j in range(n) if Tinv[j, i] != 0]), f"{i}_Q") for i in range(N)]

    keys = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))

    def sym3(d: dict[tuple[int, int], sp.Expr]) -> list[list[sp.Expr]]:
        return [[d[(min(a, b), max(a, b))] for b in range(3)] for a in range(3)]

    # pass 1 (outward): velocities, velocity-product accelerations, rigid inertias and bias forces
    vel: list[tuple[sp.Expr, ...]] = []
    cacc: list[tuple[sp.Expr, ...]] = []
    IA: list[dict[tuple[int, int], list[sp.Expr]]] = []
    pA: list[list[list[sp.Expr]]] = []
    for i, nd in enumerate(nodes):
        vin = J.motion_in(i, vel[nd.parent], "vp") if nd.parent >= 0 else (_0, _0, _0)
        Sq = tuple(sv * J.sd[i] for sv in J.S[i])
        v = (e(vin[0] + Sq[0], f"{i}_w"), e(vin[1] + Sq[1], f"{i}_vx"), e(vin[2] + Sq[2], f"{i}_vy"))
        w, vx, vy = v
        vel.append(v)
        cacc.append((_0, e(-w * Sq[2] + vy * Sq[0], f"{i}_cx"), e(w * Sq[1] - vx * Sq[0], f"{i}_cy")))
        m, hx, hy, inertia = J.body[i]
        IA.append({(0, 0): [inertia], (0, 1): [-hy], (0, 2): [hx], (1, 1): [m], (1, 2): [], (2, 2): [m]})
        Iv = (inertia * w + hx * vy - hy * vx, m * vx - w * hy, m * vy + w * hx)
        Iv = tuple(e(x, f"{i}_Iv{nm}") for x, nm in zip(Iv, "nxy"))
        pA.append([[vx * Iv[2] - vy * Iv[1]], [-w * Iv[2]], [w * Iv[1]]])
    # force elements on their nodes: the bias force takes minus the external force
    for j, (f, ref) in enumerate(local):
        w, vx, vy = vel[ref.node]
        va = e(vx - w * ref.y, f"e{j}_va")
        vc = e(vy + w * ref.x, f"e{j}_vc")
        fa, fc = (e(x, f"e{j}_f{nm}") for x, nm in zip(link_frame_law(f, va, vc, builder.X), "ac"))
        for a, term in enumerate((ref.x * fc - ref.y * fa, fa, fc)):
            pA[ref.node][a].append(-term)
    # pass 2 (inward): articulated inertias and bias forces
    U: list[tuple[sp.Expr, ...]] = [()] * N
    Dinv: list[sp.Expr] = [_0] * N
    uu: list[sp.Expr] = [_0] * N
    for i in reversed(range(N)):
        Ii = {kk: e(sp.Add(*IA[i][kk]), f"{i}_IA{kk[0]}{kk[1]}") for kk in keys}
        pi = tuple(e(sp.Add(*pA[i][a]), f"{i}_pA{a}") for a in range(3))
        Ui = _matvec(sym3(Ii), J.S[i])
        U[i] = tuple(e(Ui[a], f"{i}_U{a}") for a in range(3))
        D = e(sum((J.S[i][a] * U[i][a] for a in range(3)), _0), f"{i}_D")
        Dinv[i] = e(1 / D, f"{i}_Dinv")
        uu[i] = e(tau[i] - sum((J.S[i][a] * pi[a] for a in range(3)), _0), f"{i}_u")
        p = nodes[i].parent
        if p < 0:
            continue
        Ia = {(a, b): e(Ii[(a, b)] - U[i][a] * U[i][b] * Dinv[i], f"{i}_Ia{a}{b}") for a, b in keys}
        Iam = sym3(Ia)
        ci = _matvec(Iam, cacc[i])
        Uud = e(uu[i] * Dinv[i], f"{i}_uD")
        pa = tuple(e(pi[a] + ci[a] + U[i][a] * Uud, f"{i}_pa{a}") for a in range(3))
        # to the parent: X^T Ia X with X = Rt P (Rt = diag(1, R^T), P the shift by the origin)
        c, s = J.c[i], J.s[i]
        Rt = [[_1, _0, _0], [_0, c, s], [_0, -s, c]]
        P = [[_1, _0, _0], [-J.py[i], _1, _0], [J.px[i], _0, _1]]
        R1 = _congruence(Rt, Iam, keys)
        B1 = sym3({kk: e(R1[kk], f"{i}_Ir{kk[0]}{kk[1]}") for kk in keys})
        B2 = _congruence(P, B1, keys)
        for kk in keys:
            IA[p][kk].append(e(B2[kk], f"{i}_Ip{kk[0]}{kk[1]}"))
        for a, val in enumerate(J.force_out(i, pa, f"{i}_pp")):
            pA[p][a].append(val)
    # pass 3 (outward): accelerations; the ground accelerates against gravity
    gx, gy = k.gravity
    acc: list[tuple[sp.Expr, ...]] = []
    sdd: list[sp.Expr] = []
    for i, nd in enumerate(nodes):
        ap = acc[nd.parent] if nd.parent >= 0 else (_0, -gx, -gy)
        ain = J.motion_in(i, ap, "ap")
        a1 = tuple(e(ain[a] + cacc[i][a], f"{i}_a1{a}") for a in range(3))
        qdd_i = e((uu[i] - sum((U[i][a] * a1[a] for a in range(3)), _0)) * Dinv[i], f"{i}_sdd")
        sdd.append(qdd_i)
        acc.append(tuple(e(a1[a] + J.S[i][a] * qdd_i, f"{i}_a{a}") for a in range(3)))
    qdd = sp.Matrix([sp.Add(*[Tinv[j, i] * sdd[i] for i in range(N) if Tinv[j, i] != 0]) for j in range(n)])
    return ForwardDynamics(model, k.q, k.qd, k.u, k.params, k.param_values, e.assignments, qdd, Dinv)


def _matvec(A: Sequence[Sequence[sp.Expr]], v: Sequence[sp.Expr]) -> list[sp.Expr]:
    """A v for a 3 x 3 A (lists; the sums SymPy's matrix product forms, without its matrix machinery)."""
    return [sp.Add(*[A[a][b] * v[b] for b in range(3) if A[a][b] != 0 and v[b] != 0]) for a in range(3)]


def _congruence(X: Sequence[Sequence[sp.Expr]], A: Sequence[Sequence[sp.Expr]],
                keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], sp.Expr]:
    """The entries ``keys`` of X^T A X (A symmetric, 3 x 3, lists), as (X^T A) X."""
    XtA = [[sp.Add(*[X[k][a] * A[k][b] for k in range(3) if X[k][a] != 0 and A[k][b] != 0]) for b in range(3)]
           for a in range(3)]
    return {(a, b): sp.Add(*[XtA[a][k] * X[k][b] for k in range(3) if XtA[a][k] != 0 and X[k][b] != 0])
            for a, b in keys}


def articulated_body(eqs: Equations) -> tuple[Optional[ForwardDynamics], str]:
    """The articulated-body forward dynamics of derived equations, or None and the reason it does not apply.

    It does not apply to coupled coordinates, to masses at intermediate fractions
    of variable segments (:func:`forward_dynamics` raises), to equations in other
    symbols than the model's kinematics, and where an articulated inertia is a
    number that is not positive (it would divide by zero or by a negative inertia).
    """
    def derive() -> ForwardDynamics:
        valid = {f.name: f for f in eqs.model.forces}
        return forward_dynamics(eqs.model, elements=[(valid[el.name], el.generalized) for el in eqs.forces])
    return checked_articulated(eqs, derive)


def checked_articulated(eqs: Equations, derive: Callable[[], ForwardDynamics]
                        ) -> tuple[Optional[ForwardDynamics], str]:
    """The forward dynamics ``derive()`` gives for ``eqs``, or None and the reason it does not apply: coupled
    coordinates, a DerivationError of ``derive``, other symbols than those of ``eqs``, an articulated
    inertia that is a number and not positive. Shared by :func:`articulated_body` and
    :func:`rodgen.symbolic.planar_tree.tree_articulated`."""
    if eqs.couplings or getattr(eqs.model, "couplings", None):
        return None, "the model couples coordinates"
    try:
        fd = derive()
    except DerivationError as exc:
        return None, str(exc)
    same = (list(fd.q) == list(eqs.q) and list(fd.qd) == list(eqs.qd) and list(fd.u) == list(eqs.u)
            and set(fd.params) <= set(eqs.params))
    if not same:
        return None, "the equations do not use the symbols of the model's kinematics"
    pivots = [sp.sympify(d) for d in fd.inverse_pivots]
    if len(pivots) != len(eqs.q) or any(d.is_Number and not (d.is_finite and d > 0) for d in pivots):
        return None, "an articulated inertia of the model is not positive"
    return fd, ""


__all__ = ["derive_recursive", "forward_dynamics", "articulated_body", "checked_articulated", "ForwardDynamics",
           "expanded_tree", "Node", "Ref"]
