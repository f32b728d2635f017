"""Derivatives of a model's inverse dynamics by differentiating the recursive Newton–Euler algorithm.

g(q, qd) = M(q) a + bias(q, qd) - B(q) u, with the accelerations ``a`` and the inputs ``u`` held fixed, has the
derivatives ∂g/∂q (on the tangent space where a joint has its own configuration) and ∂g/∂qd, both nv × nv.
Their rigid-body part is the derivative of the recursive Newton–Euler algorithm (RNEA), computed as in
Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms" (RSS 2018; Pinocchio's
``computeRNEADerivatives``), over the expanded tree of :mod:`rodgen.symbolic.spatial` (for a planar model its
planar expanded tree lowered onto the spatial one by :func:`rodgen.symbolic.planar_tree.lower`: revolute nodes
about z, prismatic nodes in the plane, so variable segments, masses at fractions of them, rods, elastic links
and floating bases are nodes like any other), in the ground frame, where moving a quantity to the parent is a
sum:

* outward, per node i and each of its motion columns c: the column in the ground frame ``J_c`` (a motion
  vector, velocity at the ground origin), the velocity ``v_i`` and the acceleration with gravity
  ``a_i = a_parent + Σ (v_i × J_c) sd_c + J_c sdd_c`` (the ground accelerating at -g), and the columns'
  ``dV/dq = v_parent × J_c``, ``dA/dq = a_parent × J_c + v_parent × dV/dq``, ``dA/dv = v_i × J_c + dV/dq``;
  the bodies' inertia ``Y_i`` in the ground frame, their force ``f_i = Y_i a_i + v_i ×* Y_i v_i`` and
  ``B_i`` with ``B_i m = v_i ×* (Y_i m) - Y_i (v_i × m) + m ×* (Y_i v_i)`` (the derivative of the force
  by the velocity, ``Ẏ`` included), held as its two blocks that are not zero: ``B = [[B_w, 0], [-2 [p]×, 0]]``
  with ``p`` the bodies' momentum (:func:`~rodgen.symbolic.spatial._inertia_rate`: 12 numbers, not 36, summed
  and multiplied; ``F_y``'s linear half is zero);
* inward, with ``Y``, ``B`` and ``f`` summed over the subtree of node i, per column c of node i:
  ``F_a = Y J_c``, ``F_y = Bᵀ J_c``, ``F_q = B dV/dq + Y dA/dq``, ``F_v = B J_c + Y dA/dv``; for every column
  k of the subtree (i's own columns included) ``∂τ_c/∂q_k = J_c · F_q(k)`` and ``∂τ_c/∂v_k = J_c · F_v(k)``,
  and for every column k of the strict subtree ``∂τ_k/∂q_c = F_a(k) · dA/dq(c) + F_y(k) · dV/dq(c)`` and
  ``∂τ_k/∂v_c = F_a(k) · dA/dv(c) + F_y(k) · J_c``; then ``F_q(c) += J_c ×* f`` (the subtree turned with
  the joint) for the ancestors' rows.

An entry is nonzero only where its row and column lie on one branch of the tree, and every product with a
zero or a one is left out when the code is built (a column or a body fixed to the ground gives constants),
so the code holds O(n) per-node terms and one or two 6-term dot products per pair (ancestor, descendant):
O(n · depth). The tree coordinates are ``s = T q`` (T constant), so ∂g/∂q = Tᵀ (∂τ/∂s) T. The rest of g (the
springs, dampers, force elements and the input map: ``K + D - F - B u``) is differentiated by
:func:`~rodgen.symbolic.derivative.forward_derivatives` (every variable at once, each symbol carrying only
its nonzero derivatives; large expressions first split into single operations by
:func:`~rodgen.symbolic.derivative.split_large_expressions`), its configuration columns moved onto the tangent
space by dq/dδ = ∂(dq/dt)/∂qd.

Not covered, so the RHS Jacobian keeps the tangent of the inverse dynamics (``Equations.inverse_dynamics_tangent``):
coupled coordinates (the tree's coordinates are then functions of the independent ones, not ``T q`` with a
constant T), trees of more than :data:`MAX_PAIRS` pairs of columns on one branch, and a planar model's equations
of the planar recursion (``method="planar"``, kept as the comparison for both the derivation and this
derivative).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Optional

import sympy as sp

from ..model.valid import ValidModel
from .equations import Equations
from .recursive import _Emitter
from .rnea_loop import NodeLoop, node_loop
from .spatial import (
    V3,
    SpatialTree,
    _0,
    _add,
    _cross,
    _fcross,
    _inertia,
    _inertia_in_ground,
    _inertia_rate,
    _Joints,
    _mcross,
    _mul,
    _mv,
    _prefix,
    _rate_mv,
    _rate_tmv,
    _sum,
    _world_frames,
    spatial_kinematics,
)

Six = list  # a motion (w, v) or a force (n, f): 6 expressions, ground frame, about/at the ground origin


@dataclass(frozen=True)
class InverseDynamicsDerivatives:
    """∂g/∂q and ∂g/∂qd of g = M a + bias - B u (a, u fixed) as straight-line code.

    assignments : intermediate ``(symbol, expression)`` pairs in evaluation order, in q, qd, the accelerations
        ``qdd`` (the symbols of ``Equations.qdd``, standing for a), u, the time and the parameters.
    dq : (nv, nv) ∂g/∂q, the columns on the tangent space (``q ⊕ δ``) where the model has free, spherical or
        planar joints, else by the coordinates.
    dv : (nv, nv) ∂g/∂qd.
    parents : the tree of the velocities, ``parents[j] < j`` (-1 for a root): M[i, j] is zero unless one of i, j
        is an ancestor of the other, so M factorises as Lᵀ D L without fill-in (Featherstone's LTDL). Where the
        tree's columns are not the velocities one to one (a virtual or an undo node), ``parents[j] = j - 1``:
        every earlier velocity counts as an ancestor, a dense factorisation.
    pairs : the same derivatives with the dot products of the pairs of columns on different nodes of one branch
        as data (:class:`PairProducts`), for a loop in the code; None where the tree's columns are not the
        velocities one to one.
    motion : the outward pass's per-node motion and its partials as symbols of ``assignments``
        (:class:`TreeMotion`), for the derivatives of frames' motion; None for planar trees without frames.
    nodes : the per-node terms as one step per kind of node (:class:`~rodgen.symbolic.rnea_loop.NodeLoop`), for
        a loop over the nodes; None where a node is not a single-axis joint with its velocity one to one.
        Derived on first use (about as long as the rest for a small tree, and used from
        ``CodegenOptions.node_loop_min`` nodes only): ``node_count`` says beforehand how many nodes it has.
    node_count : the nodes of :attr:`nodes` where it may exist, else 0.
    """

    assignments: list[tuple[sp.Symbol, sp.Expr]]
    dq: sp.Matrix
    dv: sp.Matrix
    parents: tuple[int, ...]
    pairs: Optional["PairProducts"] = None
    motion: Optional["TreeMotion"] = None
    node_count: int = 0
    node_builder: Optional[Callable[[], Optional[NodeLoop]]] = field(default=None, repr=False, compare=False)

    @cached_property
    def nodes(self) -> Optional[NodeLoop]:
        return self.node_builder() if self.node_builder is not None else None


@dataclass(frozen=True)
class TreeMotion:
    """The outward pass of the recursion, as the symbols of :attr:`InverseDynamicsDerivatives.assignments`, for
    the derivatives of frames' motion (the constraint rows, :mod:`rodgen.symbolic.constrained_derivative`).
    Ground frame, motions (w, v) with v the velocity at the ground origin.

    nodes : the expanded tree's nodes; frames : a named frame's node and placement in it (``SpatialTree.frames``).
    world : per node its rotation and origin in the ground frame.
    cols, node_of, tmap : per node its motion columns; per column its node, and its rate as velocities
        ``[(j, coefficient)]``.
    J, dVdq, dAdq, dAdv : per column its motion and the outward pass's partials (see the module docstring).
    v, a : per node its velocity and acceleration (the ground accelerating at -g).
    """

    nodes: list
    frames: dict
    world: list
    cols: list[list[int]]
    node_of: list[int]
    tmap: list[list[tuple[int, sp.Expr]]]
    J: list[Six]
    dVdq: list[Six]
    dAdq: list[Six]
    dAdv: list[Six]
    v: list[Six]
    a: list[Six]


#: The numbers :class:`PairProducts` gives per velocity: six each of J, dA/dq, dV/dq, dA/dv, F_q, F_v, F_a, F_y.
PAIR_VECTORS = ("J", "dAdq", "dVdq", "dAdv", "Fq", "Fv", "Fa", "Fy")
#: Where F_y's linear half stands in a velocity's 48 numbers: always zero (B's columns of linear motion are, see
#: :func:`~rodgen.symbolic.spatial._inertia_rate`), so the pairs' loop of the code leaves it out.
FY_LINEAR = tuple(range(6 * PAIR_VECTORS.index("Fy") + 3, 6 * PAIR_VECTORS.index("Fy") + 6))


@dataclass(frozen=True)
class PairProducts:
    """The O(n · depth) part of :class:`InverseDynamicsDerivatives` as data: per-velocity vectors and the pairs.

    vectors : per velocity j, 48 expressions: six each of (in :data:`PAIR_VECTORS`' order) its column J, dA/dq,
        dV/dq and dA/dv, what it gives as the ancestor of a pair, and F_q (after the joint's turn ``J ×* f``), F_v,
        F_a and F_y, what it gives as the descendant.
    ancestors : per velocity d, the velocities of the nodes strictly above its own node (a joint's own columns,
        a free joint's six, are not among them), nearest first.
    dq, dv : ∂g/∂q and ∂g/∂qd without the products of these pairs. For every d and a in ``ancestors[d]``:
        ``dq[a, d] += J(a)·F_q(d)``, ``dv[a, d] += J(a)·F_v(d)``,
        ``dq[d, a] += F_a(d)·dA/dq(a) + F_y(d)·dV/dq(a)``, ``dv[d, a] += F_a(d)·dA/dv(a) + F_y(d)·J(a)``
        give :attr:`InverseDynamicsDerivatives.dq` and ``.dv``.
    """

    vectors: tuple[tuple[sp.Expr, ...], ...]
    ancestors: tuple[tuple[int, ...], ...]
    dq: sp.Matrix
    dv: sp.Matrix

    @property
    def count(self) -> int:
        """The number of pairs (four 6-term dot products each)."""
        return sum(len(a) for a in self.ancestors)


def velocity_tree(nodes: list, Jt: _Joints, nv: int) -> tuple[int, ...]:
    """The parent of each velocity in the expanded tree (see :class:`InverseDynamicsDerivatives`)."""
    dense = tuple(j - 1 for j in range(nv))
    if len(Jt.S) != nv or any(len(row) != 1 for row in Jt.Tmap):
        return dense
    vel = [row[0][0] for row in Jt.Tmap]
    if sorted(vel) != list(range(nv)):
        return dense
    out = [-1] * nv
    for i, nd in enumerate(nodes):
        cols = Jt.cols[i]
        par = nd.parent
        while par >= 0 and not Jt.cols[par]:
            par = nodes[par].parent
        prev = vel[Jt.cols[par][-1]] if par >= 0 else -1
        for c in cols:
            out[vel[c]] = prev
            prev = vel[c]
    if any(p >= j for j, p in enumerate(out)):
        return dense
    return tuple(out)




def _dot6(a: Six, b: Six) -> sp.Expr:
    return _sum([_mul(a[r], b[r]) for r in range(6)])


#: The most pairs of motion columns on one branch (Σ over columns of the columns in its subtree, n (n + 1) / 2 for
#: a chain of n joints) for which :func:`inverse_dynamics_derivatives` derives; a larger tree keeps the tangent of
#: the inverse dynamics, whose code grows like n instead of n · depth (a chain of 54 joints has 1485 pairs: about
#: 150 k operations of straight-line code; the 36-joint chain's 666 pairs give 72 k).
MAX_PAIRS = 1500


def applies(eqs: Equations) -> bool:
    """Whether :func:`inverse_dynamics_derivatives` derives these equations: a model without coupled
    coordinates (its expanded tree moves with the model's coordinates through a constant T), spatial or
    planar (a planar model's tree lowered onto the spatial one, :func:`rodgen.symbolic.planar_tree.lower`),
    except equations of the planar recursion (``method="planar"``, kept for comparison: they keep the tangent
    of the inverse dynamics, as before)."""
    model = eqs.model
    if eqs.couplings or getattr(model, "couplings", None):
        return False
    if getattr(model, "spatial", False):
        return True
    return isinstance(model, ValidModel) and str(eqs.method) != "planar"


def inverse_dynamics_derivatives(eqs: Equations) -> Optional[InverseDynamicsDerivatives]:
    """∂g/∂q and ∂g/∂qd of the equations of a spatial or planar model (see the module's docstring); None where
    :func:`applies` is false or the tree has more than :data:`MAX_PAIRS` pairs of columns on one branch (coupled
    coordinates, ``method="planar"`` and such large trees keep the tangent of the inverse dynamics)."""
    if not applies(eqs):
        return None
    model = eqs.model
    frames: Optional[dict] = None
    if isinstance(model, ValidModel):       # planar: the planar expanded tree as a spatial one
        from .planar_tree import lower
        k, lowered, _, _ = lower(model)
        nodes = lowered.nodes
    else:
        k = spatial_kinematics(model)   # type: ignore[arg-type]
        tree = SpatialTree(model, k)    # type: ignore[arg-type]
        nodes, frames = tree.nodes, tree.frames
    e = _Emitter(_prefix(k) + "d_")
    Jt = _Joints(nodes, k, e)
    world = _world_frames(nodes, Jt, e)
    N, nv, NC = len(nodes), len(k.qd), len(Jt.S)
    depth = [0] * N
    for i, nd in enumerate(nodes):
        depth[i] = len(Jt.cols[i]) + (depth[nd.parent] if nd.parent >= 0 else 0)
    if sum(depth[Jt.node_of[c]] for c in range(NC)) > MAX_PAIRS:
        return None
    gravity = k.gravity
    sdd = [_sum([_mul(cf, k.qdd[j]) for j, cf in Jt.Tmap[c]]) for c in range(NC)]

    def emit(x: Six, tag: str) -> Six:
        return [e(sp.sympify(v), f"{tag}{r}") for r, v in enumerate(x)]

    # --- outward: columns, velocities, accelerations, forces and B of every node in the ground frame -----
    Jc: list[Six] = [[]] * NC
    dVdq: list[Six] = [[]] * NC
    dAdq: list[Six] = [[]] * NC
    dAdv: list[Six] = [[]] * NC
    ov: list[Six] = []
    oa: list[Six] = []
    Ynode: list[tuple[sp.Expr, V3, list]] = []
    fnode: list[Six] = []
    Bnode: list[tuple[list, list]] = []     # B's blocks (Bw, p): see spatial._inertia_rate
    zero6: Six = [_0] * 6
    for i, nd in enumerate(nodes):
        oR, op = world[i]
        par = nd.parent
        vpar = ov[par] if par >= 0 else zero6
        apar = oa[par] if par >= 0 else [_0, _0, _0] + [-x for x in gravity]
        vi: Six = list(vpar)
        ai: Six = list(apar)
        dJ: dict[int, Six] = {}
        for c in Jt.cols[i]:
            Sw, Sv = Jt.S[c]
            w = _mv(oR, Sw)
            Jc[c] = emit(w + _add(_mv(oR, Sv), _cross(op, w)), f"{c}_DJ")
            vi = [_sum((vi[r], _mul(Jt.sd[c], Jc[c][r]))) for r in range(6)]
        vi = emit(vi, f"{i}_Dv")
        for c in Jt.cols[i]:
            dJ[c] = emit(_mcross(vi, Jc[c]), f"{c}_DdJ")
            ai = [_sum((ai[r], _mul(Jt.sd[c], dJ[c][r]), _mul(sdd[c], Jc[c][r]))) for r in range(6)]
            if par >= 0:
                dVdq[c] = emit(_mcross(vpar, Jc[c]), f"{c}_DVq")
                dAdq[c] = emit([_sum((x, y)) for x, y in zip(_mcross(apar, Jc[c]), _mcross(vpar, dVdq[c]))],
                               f"{c}_DAq")
                dAdv[c] = emit([_sum((x, y)) for x, y in zip(dJ[c], dVdq[c])], f"{c}_DAv")
            else:
                dVdq[c] = zero6
                dAdq[c] = emit(_mcross(apar, Jc[c]), f"{c}_DAq")
                dAdv[c] = dJ[c]
        ai = emit(ai, f"{i}_Da")
        ov.append(vi)
        oa.append(ai)
        # the bodies' inertia about the ground origin, ground axes
        m, h, Ib = Jt.body[i]
        if m == 0 and all(x == 0 for x in h):
            Ynode.append((_0, [_0] * 3, [[_0] * 3 for _ in range(3)]))
            fnode.append(zero6)
            Bnode.append(([[_0] * 3 for _ in range(3)], [_0] * 3))
            continue
        hw, Iw, _ = _inertia_in_ground(e, oR, op, m, h, Ib, f"{i}_D")
        Ynode.append((m, hw, Iw))
        oh = emit(_inertia(m, hw, Iw, vi), f"{i}_Doh")
        fnode.append(emit([_sum((x, y)) for x, y in zip(_inertia(m, hw, Iw, ai), _fcross(vi, oh))], f"{i}_Df"))
        Bw, pm = _inertia_rate(m, hw, Iw, vi, oh)   # B x = v ×* (Y x) - Y (v × x) + x ×* (Y v)
        Bnode.append(([[e(sp.expand(Bw[r][c_]), f"{i}_DB{r}_{c_}") for c_ in range(3)] for r in range(3)], pm))

    # --- inward: composite Y, B, f; the entries of every (ancestor, descendant) pair of columns -------------
    accY: list[list] = [[[Ynode[i][0]], [[x] for x in Ynode[i][1]], [[[x] for x in row] for row in Ynode[i][2]]]
                        for i in range(N)]
    accB: list[list] = [[[[x] for x in row] for row in Bnode[i][0]] for i in range(N)]
    accP: list[list] = [[[x] for x in Bnode[i][1]] for i in range(N)]
    accF: list[list] = [[[x] for x in fnode[i]] for i in range(N)]
    below: list[list[int]] = [[] for _ in range(N)]     # columns of the strict subtree of each node
    Fa: list[Six] = [[]] * NC
    Fy: list[Six] = [[]] * NC
    Fq: list[Six] = [[]] * NC
    Fv: list[Six] = [[]] * NC
    Dq: dict[tuple[int, int], sp.Expr] = {}
    Dv: dict[tuple[int, int], sp.Expr] = {}
    strict: set[tuple[int, int]] = set()   # (ancestor, descendant) columns on different nodes
    for i in reversed(range(N)):
        m = e(_sum(accY[i][0]), f"{i}_DCm")
        h = [e(_sum(accY[i][1][r]), f"{i}_DCh{r}") for r in range(3)]
        Iu = {}
        for r in range(3):
            for c_ in range(r, 3):
                Iu[r, c_] = e(_sum(accY[i][2][r][c_]), f"{i}_DCI{r}{c_}")
        Ib = [[Iu[min(r, c_), max(r, c_)] for c_ in range(3)] for r in range(3)]
        Bw = [[e(_sum(accB[i][r][c_]), f"{i}_DCB{r}_{c_}") for c_ in range(3)] for r in range(3)]
        pm = [e(_sum(accP[i][r]), f"{i}_DCp{r}") for r in range(3)]
        F = [e(_sum(accF[i][r]), f"{i}_DCf{r}") for r in range(6)]
        own = Jt.cols[i]
        for c in own:
            Fa[c] = emit(_inertia(m, h, Ib, Jc[c]), f"{c}_DFa")
            Fy[c] = emit(_rate_tmv(Bw, pm, Jc[c]), f"{c}_DFy")
            Fq[c] = emit([_sum((x, y)) for x, y in zip(_rate_mv(Bw, pm, dVdq[c]), _inertia(m, h, Ib, dAdq[c]))],
                         f"{c}_DFq")
            Fv[c] = emit([_sum((x, y)) for x, y in zip(_rate_mv(Bw, pm, Jc[c]), _inertia(m, h, Ib, dAdv[c]))],
                         f"{c}_DFv")
        for c in own:
            for kk in own + below[i]:
                Dq[c, kk] = _dot6(Jc[c], Fq[kk])
                Dv[c, kk] = _dot6(Jc[c], Fv[kk])
            for kk in below[i]:
                strict.add((c, kk))
                Dq[kk, c] = _sum((_dot6(Fa[kk], dAdq[c]), _dot6(Fy[kk], dVdq[c])))
                Dv[kk, c] = _sum((_dot6(Fa[kk], dAdv[c]), _dot6(Fy[kk], Jc[c])))
        par = nodes[i].parent
        if par < 0:
            continue
        for c in own:
            Fq[c] = emit([_sum((x, y)) for x, y in zip(Fq[c], _fcross(Jc[c], F))], f"{c}_DFqf")
        below[par] += own + below[i]
        accY[par][0].append(m)
        for r in range(3):
            accY[par][1][r].append(h[r])
            for c_ in range(r, 3):
                accY[par][2][r][c_].append(Iu[r, c_])
        for r in range(6):
            accF[par][r].append(F[r])
        for r in range(3):
            accP[par][r].append(pm[r])
            for c_ in range(3):
                accB[par][r][c_].append(Bw[r][c_])

    # --- the model's velocities: T' D T; then the rest of g ---------------------------------------------------
    # where every column is one velocity (coefficient 1), the pairs' products also apart, for a loop in the code
    vel = [row[0][0] if len(row) == 1 and row[0][1] == 1 else -1 for row in Jt.Tmap]
    loop = len(vel) == nv and sorted(vel) == list(range(nv))
    dq, dv = sp.zeros(nv, nv), sp.zeros(nv, nv)
    lq, lv = sp.zeros(nv, nv), sp.zeros(nv, nv)
    rq, rv = sp.zeros(nv, nv), sp.zeros(nv, nv)     # the rest of g alone
    for D, full, part in ((Dq, dq, lq), (Dv, dv, lv)):
        for (c, kk), val in D.items():
            held = loop and ((c, kk) in strict or (kk, c) in strict)
            for a_, ca in Jt.Tmap[c]:
                for b_, cb in Jt.Tmap[kk]:
                    full[a_, b_] += _mul(_mul(ca, cb), val)
                    if loop and not held:
                        part[a_, b_] += _mul(_mul(ca, cb), val)
    assignments = list(e.assignments)
    bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(nv, 1)
    assert eqs.F is not None
    rest = list(eqs.K + eqs.D - eqs.F - bu)
    if any(x != 0 for x in rest):
        from .derivative import forward_derivatives, split_large_expressions
        nq = len(eqs.q)
        # an expanded force law (a contact's, a Coulomb friction's, its Jᵀ f) as single operations first, as
        # the tangent does: differentiating it whole by each of its symbols repeats it in every partial
        chain, outs = split_large_expressions(eqs.assignments, rest, _prefix(k) + "drs_")
        extra, jac = forward_derivatives(chain, outs, list(eqs.q) + list(eqs.qd), prefix=_prefix(k) + "dr_",
                                         fold=True)
        assignments += extra
        if eqs.configuration_rate is not None:   # dq/dδ_j = d(dq/dt)/d qd_j
            tq = eqs.configuration_rate.jacobian(sp.Matrix(eqs.qd))
        else:
            tq = sp.eye(nq)
        for r in range(nv):
            for j in range(nv):
                extra_q = _sum([_mul(jac[r][i], tq[i, j]) for i in range(nq) if tq[i, j] != 0])
                dq[r, j] += extra_q
                dv[r, j] += jac[r][nq + j]
                rq[r, j] += extra_q
                rv[r, j] += jac[r][nq + j]
                if loop:
                    lq[r, j] += extra_q
                    lv[r, j] += jac[r][nq + j]
    pairs = None
    if loop:
        vectors: list[tuple[sp.Expr, ...]] = [()] * nv
        ancestors: list[tuple[int, ...]] = [()] * nv
        for c in range(NC):
            vectors[vel[c]] = tuple(sp.sympify(x) for vec in (Jc[c], dAdq[c], dVdq[c], dAdv[c], Fq[c], Fv[c],
                                                              Fa[c], Fy[c]) for x in vec)
        for i, nd in enumerate(nodes):
            above: list[int] = []
            par = nd.parent
            while par >= 0:
                above += [vel[c] for c in reversed(Jt.cols[par])]
                par = nodes[par].parent
            for c in Jt.cols[i]:
                ancestors[vel[c]] = tuple(above)
        assert all(v[r] == 0 for v in vectors for r in FY_LINEAR)   # the code's pairs' loop leaves it out
        pairs = PairProducts(tuple(vectors), tuple(ancestors), lq, lv)
    motion = None if frames is None else TreeMotion(nodes, frames, world, Jt.cols, Jt.node_of, Jt.Tmap, Jc, dVdq,
                                                    dAdq, dAdv, ov, oa)
    builder = None
    if loop and not any(Jt.lie) and len(nodes) == NC:
        qs = list(eqs.q)
        coordinate = []
        for nd in nodes:
            found = [j for j, qj in enumerate(qs) if qj in sp.sympify(nd.coord).free_symbols]
            coordinate.append(found[0] if len(found) == 1 else -1)
        if -1 not in coordinate:
            def builder() -> Optional[NodeLoop]:
                per_node = node_loop(nodes, [nd.revolute for nd in nodes], coordinate,
                                     [vel[Jt.cols[i][0]] for i in range(N)], qs, list(gravity), _prefix(k) + "n_",
                                     rq, rv)
                # each kind's backward step gives F_q, F_v, F_a, F_y: the last 24 of a velocity's 48 numbers
                assert per_node is None or all(kind.backward[1][r - 24] == 0 for kind in per_node.kinds
                                               for r in FY_LINEAR)
                return per_node
    return InverseDynamicsDerivatives(assignments, dq, dv, velocity_tree(nodes, Jt, nv), pairs, motion=motion,
                                      node_count=N if builder is not None else 0, node_builder=builder)

__all__ = ["InverseDynamicsDerivatives", "PairProducts", "TreeMotion", "PAIR_VECTORS", "FY_LINEAR",
           "inverse_dynamics_derivatives", "applies", "velocity_tree", "MAX_PAIRS"]
