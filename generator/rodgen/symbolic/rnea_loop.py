"""The derivative of the recursive Newton–Euler algorithm as one step per node, for a loop over the joints.

:mod:`rodgen.symbolic.rnea_derivatives` gives ∂g/∂q and ∂g/∂qd as straight-line code: O(n) per-node terms
and O(n · depth) dot products of pairs. For a long chain that code is long (about 10 kB of machine code per
joint) and does not stay in the processor's caches. Here the per-node terms are given once per *kind* of
node instead, over placeholders, so that the code stage can print a loop over the nodes:

* the forward step of a node (:attr:`NodeKind.forward`): from its parent's state (rotation and origin in
  the ground frame, velocity, acceleration with gravity: 24 numbers, ``P``), the node's constants (``K``)
  and its coordinate, rate and acceleration (``x``, ``xd``, ``xdd``), its own state (``S``), its column's
  vectors J, dA/dq, dV/dq, dA/dv (``V``, the first 24 of the 48 per velocity of
  :class:`~rodgen.symbolic.rnea_derivatives.PairProducts`) and its bodies' inertia Y, the derivative B of
  their force by the velocity and their force f in the ground frame (``C``: m, h, the six entries of the
  inertia's upper triangle, B's angular block B_w row by row and the momentum p that gives its other block
  not zero, ``-2 [p]×``, f: 28 numbers), which the loop sums over the subtree;
* the backward step (:attr:`NodeKind.backward`): from the subtree's sums ``C`` and the column's ``V``, its
  F_q (after the joint's turn ``J ×* f``), F_v, F_a, F_y (``F``, the other 24 of the 48) and the entries of
  ∂g/∂q and ∂g/∂qd on the diagonal, ``D = (J·F_q, J·F_v)``.

A kind is what the code of a step depends on: whether the node has a parent, revolute or prismatic, and
which of its constants (the fixed rotation and translation in the parent, the axis, the coordinate's
offset, the bodies' mass, first moment and inertia in the node frame) are exactly 0, 1 or -1 (left out
of the code, as in the straight-line form) or an expression in the parameters (written into the kind's
code); every other number is an entry of the node's row of a constant table, so the nodes of a chain
share two or three kinds. The same formulas as the straight-line form's, so the results are equal to
round-off. Applies where every node of the expanded tree has one motion column, one velocity with
coefficient 1 (no free, spherical or planar joint, no undo or virtual node); :class:`NodeLoop` carries the
rest of g's derivative (springs, dampers, force elements, input map) apart, as straight-line code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import sympy as sp

from .recursive import _Emitter
from .spatial import (
    V3,
    _0,
    _add,
    _cross,
    _dot,
    _fcross,
    _inertia,
    _inertia_in_ground,
    _inertia_rate,
    _mcross,
    _mm,
    _mul,
    _mv,
    _rate_mv,
    _rate_tmv,
    _scale,
    _sum,
    rot_axis,
)

#: Numbers per node: its state (rotation 9, origin 3, velocity 6, acceleration 6), its column's vectors as
#: the ancestor of a pair (J, dA/dq, dV/dq, dA/dv) and as the descendant (F_q, F_v, F_a, F_y), its sums over
#: the subtree (m, h 3, inertia 6, B_w 9, p 3, f 6).
STATE, VECTORS, SUMS = 24, 24, 28


@dataclass(frozen=True)
class NodeKind:
    """The code of one kind of node: (assignments, outputs) of its forward and backward steps.

    forward : outputs S (STATE), V (VECTORS), C (SUMS) over the placeholders ``P`` (STATE, the parent's
        state; unused without a parent), ``K`` (the kind's constants), ``x``, ``xd``, ``xdd`` and the
        parameters.
    backward : outputs F (VECTORS) and D (2) over ``C`` (SUMS, the subtree's sums), ``V`` (VECTORS) and the
        parameters.
    """

    forward: tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]
    backward: tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]
    nconst: int


@dataclass(frozen=True)
class NodeLoop:
    """The per-node form of the derivative (see the module's docstring).

    P, K, C, V : the placeholders (``K`` as long as the longest kind's constants).
    x, xd, xdd : the placeholders of the node's coordinate, rate and acceleration.
    kinds : the code of each kind of node.
    kind, parent, coordinate, velocity : per node (in tree order, parents first): its kind, its parent node
        (-1: the ground), the index of its coordinate in q and of its velocity in qd.
    constants : per node its kind's constants (floats).
    dq, dv : the rest of ∂g/∂q and ∂g/∂qd (springs, dampers, force elements, the input map), whose assignments
        are among :attr:`InverseDynamicsDerivatives.assignments`.
    """

    P: tuple[sp.Symbol, ...]
    K: tuple[sp.Symbol, ...]
    C: tuple[sp.Symbol, ...]
    V: tuple[sp.Symbol, ...]
    x: sp.Symbol
    xd: sp.Symbol
    xdd: sp.Symbol
    kinds: tuple[NodeKind, ...]
    kind: tuple[int, ...]
    parent: tuple[int, ...]
    coordinate: tuple[int, ...]
    velocity: tuple[int, ...]
    constants: tuple[tuple[float, ...], ...]
    dq: sp.Matrix
    dv: sp.Matrix




def _node_constants(nd: object, qsym: sp.Symbol) -> list[sp.Expr]:
    """The constants of a single-axis node: R0 (9), p0 (3), axis (3), offset, m, h (3), Ib (6 of the upper
    triangle), as :class:`rodgen.symbolic.spatial._Joints` computes them."""
    R0, p0, axis = nd.R0, nd.p0, nd.axis  # type: ignore[attr-defined]
    bodies = nd.bodies  # type: ignore[attr-defined]
    m = sp.Add(*[b[0] for b in bodies])
    h = [sp.Add(*[b[0] * b[1][r] for b in bodies]) for r in range(3)]
    Ib = [[sp.expand(sp.Add(*[b[2][r][c] + b[0] * ((_dot(b[1], b[1]) if r == c else _0) - b[1][r] * b[1][c])
                              for b in bodies])) for c in range(3)] for r in range(3)]
    off = sp.expand(nd.coord - qsym)  # type: ignore[attr-defined]
    return ([sp.sympify(x) for row in R0 for x in row] + [sp.sympify(x) for x in p0] + [sp.sympify(x) for x in axis]
            + [off, sp.sympify(m)] + [sp.sympify(x) for x in h]
            + [Ib[0][0], Ib[0][1], Ib[0][2], Ib[1][1], Ib[1][2], Ib[2][2]])


def _key(x: sp.Expr) -> object:
    """How a constant shapes a kind's code: an exact 0, 1, -1 or an expression stays; another number is ``K``."""
    if x.is_Number and x not in (0, 1, -1):
        return "K"
    return x


def node_loop(nodes: list, revolute: list[bool], coordinate: list[int], velocity: list[int], q: list,
              gravity: V3, prefix: str, dq: sp.Matrix, dv: sp.Matrix) -> Optional[NodeLoop]:
    """The per-node form for the expanded tree ``nodes`` (every node a single-axis joint: ``revolute[i]``,
    coordinate ``q[coordinate[i]]`` plus a constant, velocity ``velocity[i]`` with coefficient 1), or None
    where a node's constants are not numbers or expressions of the parameters."""
    P = tuple(sp.Symbol(f"{prefix}P{r}", real=True) for r in range(STATE))
    C = tuple(sp.Symbol(f"{prefix}C{r}", real=True) for r in range(SUMS))
    V = tuple(sp.Symbol(f"{prefix}V{r}", real=True) for r in range(VECTORS))
    x, xd, xdd = (sp.Symbol(f"{prefix}{nm}", real=True) for nm in ("x", "xd", "xdd"))
    qset = set(q)
    keys: dict[tuple, int] = {}
    kind_consts: list[list[sp.Expr]] = []
    kind: list[int] = []
    constants: list[tuple[float, ...]] = []
    for i, nd in enumerate(nodes):
        cs = _node_constants(nd, q[coordinate[i]])
        if any(c.free_symbols & qset for c in cs):
            return None
        key = (nd.parent >= 0, revolute[i], tuple(_key(c) for c in cs))
        if key not in keys:
            keys[key] = len(keys)
            kind_consts.append(cs)
        kind.append(keys[key])
        constants.append(tuple(float(c) for c in cs if _key(c) == "K"))
    nk = max((len(c) for c in constants), default=0)
    K = tuple(sp.Symbol(f"{prefix}K{r}", real=True) for r in range(max(nk, 1)))
    kinds = []
    for key, j in keys.items():
        has_parent, rev, _ = key
        e = _Emitter(f"{prefix}k{j}_")
        it = iter(K)
        cs = [next(it) if _key(c) == "K" else c for c in kind_consts[j]]
        fwd = _forward(e, cs, has_parent, rev, P, x, xd, xdd, gravity)
        fa = list(e.assignments)
        zero = [v == 0 for v in fwd[STATE:STATE + VECTORS]]
        e2 = _Emitter(f"{prefix}b{j}_")
        bwd = _backward(e2, C, [_0 if z else s for z, s in zip(zero, V)], has_parent)
        kinds.append(NodeKind((fa, fwd), (list(e2.assignments), bwd), sum(1 for c in kind_consts[j] if _key(c) == "K")))
    return NodeLoop(P, K, C, V, x, xd, xdd, tuple(kinds), tuple(kind), tuple(nd.parent for nd in nodes),
                    tuple(coordinate), tuple(velocity), tuple(constants), dq, dv)


def _forward(e: _Emitter, cs: list[sp.Expr], has_parent: bool, revolute: bool, P: tuple, x: sp.Symbol,
             xd: sp.Symbol, xdd: sp.Symbol, gravity: V3) -> list[sp.Expr]:
    """S, V, C of one node (see :class:`NodeKind`), as ``rnea_derivatives.inverse_dynamics_derivatives``'s
    outward pass computes them."""
    R0 = [cs[0:3], cs[3:6], cs[6:9]]
    p0, axis, off, m, h = cs[9:12], cs[12:15], cs[15], cs[16], cs[17:20]
    I00, I01, I02, I11, I12, I22 = cs[20:26]
    Ib = [[I00, I01, I02], [I01, I11, I12], [I02, I12, I22]]

    def emit(v: list, tag: str) -> list:
        return [e(sp.sympify(a), f"{tag}{r}") for r, a in enumerate(v)]

    coord = x + off
    if revolute:
        c = e(sp.cos(coord), "c")
        s = e(sp.sin(coord), "s")
        R = _mm(R0, rot_axis(axis, c, s))
        p = list(p0)
        Sw, Sv = list(axis), [_0, _0, _0]
    else:
        R = R0
        p = _add(p0, _scale(coord, _mv(R0, axis)))
        Sw, Sv = [_0, _0, _0], list(axis)
    R = [[e(sp.expand(R[r][c_]), f"R{r}{c_}") for c_ in range(3)] for r in range(3)]
    p = [e(sp.expand(p[r]), f"p{r}") for r in range(3)]
    if has_parent:
        Rp = [list(P[0:3]), list(P[3:6]), list(P[6:9])]
        oR = [[e(v, f"W{r}{c_}") for c_, v in enumerate(row)] for r, row in enumerate(_mm(Rp, R))]
        op = [e(v, f"Wp{r}") for r, v in enumerate(_add(list(P[9:12]), _mv(Rp, p)))]
        vpar, apar = list(P[12:18]), list(P[18:24])
    else:
        oR, op = R, p
        vpar, apar = [_0] * 6, [_0, _0, _0] + [-g for g in gravity]
    w = _mv(oR, Sw)
    J = emit(w + _add(_mv(oR, Sv), _cross(op, w)), "J")
    v = emit([_sum((vpar[r], _mul(xd, J[r]))) for r in range(6)], "v")
    dJ = emit(_mcross(v, J), "dJ")
    a = emit([_sum((apar[r], _mul(xd, dJ[r]), _mul(xdd, J[r]))) for r in range(6)], "a")
    if has_parent:
        dVdq = emit(_mcross(vpar, J), "Vq")
        dAdq = emit([_sum((p_, q_)) for p_, q_ in zip(_mcross(apar, J), _mcross(vpar, dVdq))], "Aq")
        dAdv = emit([_sum((p_, q_)) for p_, q_ in zip(dJ, dVdq)], "Av")
    else:
        dVdq = [_0] * 6
        dAdq = emit(_mcross(apar, J), "Aq")
        dAdv = dJ
    state = [oR[r][c_] for r in range(3) for c_ in range(3)] + list(op) + v + a
    vectors = J + dAdq + dVdq + dAdv
    if m == 0 and all(y == 0 for y in h):
        return state + vectors + [_0] * SUMS
    hw, Iw, Iu = _inertia_in_ground(e, oR, op, m, h, Ib, "")
    oh = emit(_inertia(m, hw, Iw, v), "oh")
    f = [_sum((p_, q_)) for p_, q_ in zip(_inertia(m, hw, Iw, a), _fcross(v, oh))]
    Bw, pm = _inertia_rate(m, hw, Iw, v, oh)
    B = [sp.expand(Bw[r][c_]) for r in range(3) for c_ in range(3)]
    sums = [m] + hw + [Iu[0, 0], Iu[0, 1], Iu[0, 2], Iu[1, 1], Iu[1, 2], Iu[2, 2]] + B + pm + f
    return state + vectors + [sp.sympify(y) for y in sums]


def _backward(e: _Emitter, C: tuple, V: list, has_parent: bool) -> list[sp.Expr]:
    """F (F_q after the turn, F_v, F_a, F_y) and D (J·F_q before the turn, J·F_v) of one node from its
    subtree's sums (see :class:`NodeKind`)."""
    m, h = C[0], list(C[1:4])
    Ib = [[C[4], C[5], C[6]], [C[5], C[7], C[8]], [C[6], C[8], C[9]]]
    Bw = [list(C[10 + 3 * r:13 + 3 * r]) for r in range(3)]
    pm = list(C[19:22])
    F = list(C[22:28])
    J, dAdq, dVdq, dAdv = V[0:6], V[6:12], V[12:18], V[18:24]

    def emit(v: list, tag: str) -> list:
        return [e(sp.sympify(a), f"{tag}{r}") for r, a in enumerate(v)]

    Fa = emit(_inertia(m, h, Ib, J), "Fa")
    Fy = emit(_rate_tmv(Bw, pm, J), "Fy")
    Fq = emit([_sum((p_, q_)) for p_, q_ in zip(_rate_mv(Bw, pm, dVdq), _inertia(m, h, Ib, dAdq))], "Fq")
    Fv = emit([_sum((p_, q_)) for p_, q_ in zip(_rate_mv(Bw, pm, J), _inertia(m, h, Ib, dAdv))], "Fv")
    D = [_sum([_mul(J[r], Fq[r]) for r in range(6)]), _sum([_mul(J[r], Fv[r]) for r in range(6)])]
    if has_parent:
        Fq = [_sum((p_, q_)) for p_, q_ in zip(Fq, _fcross(J, F))]
    return [sp.sympify(y) for y in Fq + Fv + Fa + Fy] + D


__all__ = ["NodeKind", "NodeLoop", "node_loop", "STATE", "VECTORS", "SUMS"]
