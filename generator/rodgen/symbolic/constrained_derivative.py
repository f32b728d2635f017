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

from typing import TYPE_CHECKING, Optional

import sympy as sp

from .constraints import ground_axes
from .convert import to_sympy
from .derivative import forward_derivatives
from .recursive import _Emitter
from .rnea_derivatives import Six
from .spatial import V3, _0, _add, _cross, _dot, _mtv, _mul, _mv, _prefix, _sum, _z

if TYPE_CHECKING:
    from .equations import Equations
    from .rnea_derivatives import TreeMotion


def lambda_symbols(nrows: int) -> list[sp.Symbol]:
    """The constraint forces λ of the partials, one real symbol per constraint row."""
    return [sp.Symbol(f"_lam{i}", real=True) for i in range(nrows)]


def constraint_partials(eqs: "Equations") -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Symbol],
                                                   list[list[sp.Expr]], list[list[sp.Expr]]]:
    """(assignments, λ symbols, dg, dk): ∂g/∂[q, qd] (nv rows) and ∂k/∂[q, qd] (one row per constraint
    row, the blocks in the order of ``eqs.constraints``), each 2 nv wide, in the symbols q, qd, the
    ``qdd`` symbols (the accelerations a), u, λ, the parameters and the time, through ``assignments``.
    Where the model has free, spherical or planar joints (nq != nv) the columns by q are on the tangent
    space, as the RHS Jacobian's: the derivative along ``q ⊕ δ``, dq/dδ = ∂(dq/dt)/∂qd.

    g = M a + bias - B u - Jᵀ λ, k = J a + J̇ qd. The part M a + bias - B u comes from the derivatives of
    the recursive Newton-Euler algorithm (:meth:`Equations.inverse_dynamics_derivatives`, O(n · depth))
    where they apply, else from forward-mode derivatives of :meth:`Equations.inverse_dynamics`
    (:func:`rodgen.symbolic.derivative.forward_derivatives`, 2 nv times its size). With the former, the rows
    of a spatial model's contacts and loops, -Jᵀ λ and k, come from the same recursion's motion
    (``TreeMotion`` of :mod:`rodgen.symbolic.rnea_derivatives`, see ``_motion_rows``: per held frame a few
    products per column of its path and per pair of them); the other rows (a planar model's, limits,
    frictions) are differentiated in forward mode through the kinematics' assignments. For solo12's four
    feet the routine has 18.7 k operations after the code stage's CSE (40 k when its contact rows were
    forward mode).
    """
    n, nq = len(eqs.qd), len(eqs.q)
    jac = sp.Matrix.vstack(*[c.jacobian for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, n)
    bias = sp.Matrix.vstack(*[c.bias for c in eqs.constraints]) if eqs.constraints else sp.zeros(0, 1)
    lam = lambda_symbols(jac.shape[0])
    k = jac * sp.Matrix(eqs.qdd) + bias
    held = -(jac.T * sp.Matrix(lam)) if lam else sp.zeros(n, 1)
    rnea = eqs.inverse_dynamics_derivatives()
    if rnea is None and nq != n:
        raise ValueError("constraint partials of a model with free, spherical or planar joints need the "
                         "derivatives of the recursive Newton-Euler algorithm (a spatial model without coupled "
                         "coordinates)")
    if rnea is None:
        bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)
        inverse, extra = eqs.inverse_dynamics()
        g = inverse - bu + held
        assignments, rows = forward_derivatives(eqs.assignments + extra, list(g) + list(k),
                                                list(eqs.q) + list(eqs.qd), prefix="_cp")
        return assignments, lam, rows[:n], rows[n:]
    # the spatial contacts' and loops' rows from the recursion's motion; the other rows in forward mode
    blocks = _motion_blocks(eqs, rnea.motion) if rnea.motion is not None else {}
    spans, r0 = [], 0
    for c in eqs.constraints:
        spans.append((c, r0))
        r0 += c.nrows
    rest = [r for c, r0 in spans if c.name not in blocks for r in range(r0, r0 + c.nrows)]
    nr = len(lam)
    dk: list[list[sp.Expr]] = [[_0] * (2 * n) for _ in range(nr)]
    dheld: list[list[sp.Expr]] = [[_0] * (2 * n) for _ in range(n)]
    derived: list[tuple[sp.Symbol, sp.Expr]] = []
    if rest:
        held_rest = -(jac[rest, :].T * sp.Matrix([lam[r] for r in rest]))
        derived, rows = forward_derivatives(eqs.assignments, list(held_rest) + [k[r] for r in rest],
                                            list(eqs.q) + list(eqs.qd), prefix="_cp")
        if eqs.configuration_rate is not None:     # dq/dδ_j = ∂(dq/dt)/∂qd_j
            tq = eqs.configuration_rate.jacobian(sp.Matrix(eqs.qd))
            rows = [[sp.Add(*[row[i] * tq[i, j] for i in range(nq) if tq[i, j] != 0 and row[i] != 0])
                     for j in range(n)] + row[nq:] for row in rows]
        dheld = rows[:n]
        for t, r in enumerate(rest):
            dk[r] = rows[n + t]
    if blocks:
        assert rnea.motion is not None
        e = _Emitter(_prefix(eqs) + "k_")    # type: ignore[arg-type]
        for b, (c, r0) in enumerate(spans):
            if c.name in blocks:
                terms, T, angular = blocks[c.name]
                _motion_rows(e, rnea.motion, f"b{b}_", terms, T, angular, lam[r0:r0 + c.nrows], dk[r0:r0 + c.nrows],
                             dheld)
        derived += e.assignments
    dg = [[rnea.dq[i, j] + dheld[i][j] for j in range(n)] + [rnea.dv[i, j] + dheld[i][n + j] for j in range(n)]
          for i in range(n)]
    seen: set[sp.Symbol] = set()
    assignments = []
    for sym, ex in list(rnea.assignments) + derived:   # the equations' own assignments may be in both
        if sym not in seen:
            seen.add(sym)
            assignments.append((sym, ex))
    return assignments, lam, dg, dk


def _motion_blocks(eqs: "Equations", tm: "TreeMotion"
                   ) -> dict[str, tuple[list[tuple[str, int]], Optional[sp.Matrix], bool]]:
    """The blocks whose rows the recursion's motion gives: a spatial model's contacts and loops, name -> (their
    frames with a sign, the rows' axes T (None: the ground's), whether three angular rows follow the three of the
    point). Frames the recursion's tree does not name are left to forward mode."""
    model = eqs.model
    if not getattr(model, "spatial", False):
        return {}

    def key(name: str) -> str:
        return name if name in eqs.frames else f"{name}.joint"

    out: dict[str, tuple[list[tuple[str, int]], Optional[sp.Matrix], bool]] = {}
    names = {str(s): s for s in eqs.params}
    ground = getattr(model, "ground")
    t1, t2, nrm = ground_axes(sp.Matrix([to_sympy(c, names) for c in ground.normal]))
    T = sp.Matrix.vstack(t1.T, t2.T, nrm.T)
    found = {c.name: ([(key(c.marker), 1)], T, c.rows == 6) for c in model.contacts}
    found.update({lp.name: ([(key(lp.b), 1), (key(lp.a), -1)], None, lp.rows == 6) for lp in model.loops})
    for c in eqs.constraints:
        if c.kind in ("contact", "loop") and c.name in found:
            terms, Tc, angular = found[c.name]
            if c.nrows == (6 if angular else 3) and all(f in tm.frames for f, _ in terms):
                out[c.name] = found[c.name]
    return out


def _motion_rows(e: _Emitter, tm: "TreeMotion", name: str, terms: list[tuple[str, int]],
                 T: Optional[sp.Matrix], angular: bool, lam: list[sp.Symbol], dk: list[list[sp.Expr]],
                 dheld: list[list[sp.Expr]]) -> None:
    """Adds one block's ∂k/∂[q, qd] to its rows ``dk`` and ∂(-Jᵀλ)/∂q to ``dheld`` from the recursion's motion.

    For a frame fixed at r in node i, with the node's velocity v = (w, v_O) and acceleration a = (ẇ, a_O) in the
    ground frame, the row k = a_O + ẇ × r + w × (v_O + w × r) (the classical acceleration of r; ẇ for angular
    rows), and a column c of a node on i's path moves the subtree below it as the screw J_c:
    ∂v/∂q_c = dV/dq_c - v × J_c, ∂a/∂q_c = dA/dq_c - a × J_c - v × dV/dq_c, ∂a/∂qd_c = dA/dv_c - v × J_c,
    ∂v/∂qd_c = J_c, ∂r/∂q_c = J_c's velocity at r (Pinocchio's frame acceleration derivatives). Moved to r
    (m(r) the velocity at r of a motion m), most terms cancel: ∂k/∂q_c = dA/dq_c(r) + ω_c × k + 2 dV/dq_c,ω × v_r,
    ∂k/∂qd_c = dA/dv_c(r) + 2 ω_c × v_r, about forty operations a column. The force
    F = Tᵀ λ held at r gives τ_c = P_c · F with P_c that velocity: ∂τ_c/∂q_j = -P_c · (ω_j × F) where j is on
    c's node or above it (the column turns with the subtree, F does not), ω_c · (P_j × F) where j is below c
    (only r moves); a moment N: -ω_c · (ω_j × N) and 0.
    """
    n = len(dheld)
    mv = (lambda x: x) if T is None else (lambda x: _mv([list(T.row(r)) for r in range(3)], x))
    mtv = (lambda x: x) if T is None else (lambda x: _mtv([list(T.row(r)) for r in range(3)], x))
    F = mtv(list(lam[:3]))
    N = mtv(list(lam[3:6])) if angular else None
    for t, (frame, sign) in enumerate(terms):
        ref = tm.frames[frame]
        if ref.node < 0:
            continue      # a frame of the ground: no motion
        tag = f"{name}{t}_"
        i = ref.node
        oR, op = tm.world[i]
        r = [e(x, f"{tag}r{c}") for c, x in enumerate(_add(op, _mv(oR, ref.pl)))]
        v, a = tm.v[i], tm.a[i]
        w, vO, wd = v[:3], v[3:], a[:3]
        vr = [e(x, f"{tag}vr{c}") for c, x in enumerate(_add(vO, _cross(w, r)))]
        path: list[int] = []       # the columns from the root down to node i
        node = i
        while node >= 0:
            path = list(tm.cols[node]) + path
            node = tm.nodes[node].parent
        depth = {c: d for d, c in enumerate(path)}
        first = {c: min(depth[x] for x in tm.cols[tm.node_of[c]]) for c in path}   # its node's first column

        def point(x: Six) -> V3:
            return _add(x[3:], _cross(x[:3], r))

        # the point's acceleration with the ground's -g (it cancels in the partials below)
        kg = [e(x, f"{tag}kg{c}") for c, x in enumerate(_add(point(a), _cross(w, vr)))]
        P: dict[int, V3] = {}
        for c in path:
            Jc, wc, dV = tm.J[c], tm.J[c][:3], tm.dVdq[c]
            P[c] = [e(x, f"{tag}P{c}_{j}") for j, x in enumerate(point(Jc))]
            # the partials of a, v and r above, moved to r (the velocity at r of m1 × m2 is
            # ω1 × m2(r) - ω2 × m1(r)), cancel to: ∂k/∂q_c = dA/dq_c(r) + ω_c × k + 2 dV/dq_c,ω × v_r and
            # ∂k/∂qd_c = dA/dv_c(r) + 2 ω_c × v_r; the angular rows ∂ẇ/∂q_c = dA/dq_c,ω - ẇ × ω_c - w × dV/dq_c,ω
            # and ∂ẇ/∂qd_c = dA/dv_c,ω - w × ω_c
            kq = _add(_add(point(tm.dAdq[c]), _cross(wc, kg)), [2 * x for x in _cross(dV[:3], vr)])
            kv = _add(point(tm.dAdv[c]), [2 * x for x in _cross(wc, vr)])
            cols: list[list[sp.Expr]] = []
            for lin, ang in ((kq, [_sum((x, -y, -z)) for x, y, z in zip(tm.dAdq[c][:3], _cross(wd, wc),
                                                                              _cross(w, dV[:3]))]),
                             (kv, [_sum((x, -y)) for x, y in zip(tm.dAdv[c][:3], _cross(w, wc))])):
                out = mv([e(x, f"{tag}k{c}_{len(cols)}_{j}") for j, x in enumerate(lin)])
                cols.append(out + (mv(ang) if angular else []))
            for (j, cf) in tm.tmap[c]:
                for row in range(len(cols[0])):
                    dk[row][j] = _sum((dk[row][j], _mul(sign * cf, cols[0][row])))
                    dk[row][n + j] = _sum((dk[row][n + j], _mul(sign * cf, cols[1][row])))
        # -Jᵀλ: rows c, columns j of the path
        wF = {c: [e(x, f"{tag}wF{c}_{j}") for j, x in enumerate(_cross(tm.J[c][:3], F))] for c in path}
        PF = {c: [e(x, f"{tag}PF{c}_{j}") for j, x in enumerate(_cross(P[c], F))] for c in path}
        wN = {c: [e(x, f"{tag}wN{c}_{j}") for j, x in enumerate(_cross(tm.J[c][:3], N))] for c in path} if N else {}
        for c in path:
            for jc in path:
                if first[jc] <= depth[c]:      # jc on c's node or above: the column turns, F does not
                    val = -_dot(P[c], wF[jc])
                    if N is not None:
                        val = _sum((val, -_dot(tm.J[c][:3], wN[jc])))
                else:                          # jc below c: only r moves
                    val = _dot(tm.J[c][:3], PF[jc])
                if _z(val):
                    continue
                for (a_, ca) in tm.tmap[c]:
                    for (b_, cb) in tm.tmap[jc]:
                        dheld[a_][b_] = _sum((dheld[a_][b_], _mul(-sign * ca * cb, val)))
