"""Constraint rows of a model: contacts, loop closures, coordinate limits, dry friction with stiction.

For every block the symbolic stage returns (docs/ARCHITECTURE.md, "Constraints")

    position c(q)     the rows (contact: tangential position along the ground and
                      gap above it; loop: r_b - r_a; limit: q - lower or upper - q;
                      friction: the coordinate q itself, held while it sticks)
    jacobian J(q)     = dc/dq
    bias              = J̇ q̇ = d/dt (J(q)) q̇ = sum_k d(J q̇)/dq_k q̇_k,

(with free, spherical or planar joints the velocities v are not the coordinates' rates: J maps the nv
velocities, J = dc/dq · d(dq/dt)/dv, and the bias is sum_k d(J v)/dq_k (dq_k/dt) with dq/dt the
configuration rate ``Equations.configuration_rate``),

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
from dataclasses import dataclass, replace

import sympy as sp

from ..errors import ModelError
from ..model.expr import Expression
from .convert import to_sympy
from .equations import ConstraintEquations, Equations

#: A loop whose markers are further apart than this (metres) at the initial coordinates is refused.
LOOP_TOLERANCE = 1e-6


def constraint_equations(eqs: Equations) -> list[ConstraintEquations]:
    """The constraint blocks of ``eqs.model`` in the order contacts, loops, limits, frictions (empty if none)."""
    model = eqs.model
    if not (model.contacts or model.loops or model.limits() or model.frictions()):
        return []
    names: dict[str, sp.Symbol] = {str(s): s for s in eqs.params}
    q, qd = list(eqs.q), list(eqs.qd)

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, names)

    inline = _inliner(eqs)

    def point(name: str) -> sp.Matrix:
        return inline(eqs.points[name])

    # dq/dt: qd, or with free, spherical or planar joints the configuration rate (nq) of the nv velocities,
    # whose Jacobian by the velocities maps a row's dc/dq onto the velocities
    rate = eqs.configuration_rate if eqs.configuration_rate is not None else sp.Matrix(qd)
    tangent = rate.jacobian(qd) if eqs.configuration_rate is not None and q else None

    def block(name: str, kind: str, position: sp.Matrix, friction: sp.Expr | None = None,
              kinetic: sp.Expr | None = None, jacobian: sp.Matrix | None = None,
              bias: sp.Matrix | None = None) -> ConstraintEquations:
        if bias is not None and jacobian is not None:
            return ConstraintEquations(name, kind, position, jacobian, bias, friction, kinetic)
        if jacobian is not None:
            J = jacobian
        elif not q:
            J = sp.zeros(position.shape[0], 0)
        else:
            J = position.jacobian(q) if tangent is None else position.jacobian(q) * tangent
        Jqd = J * sp.Matrix(qd)
        bias = Jqd.jacobian(q) * rate if q else sp.zeros(position.shape[0], 1)
        return ConstraintEquations(name, kind, position, J, bias, friction, kinetic)

    out: list[ConstraintEquations] = []
    if getattr(model, "spatial", False):
        out.extend(_spatial_blocks(eqs, X, inline, block))
    else:
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
    for fr in model.frictions():
        out.append(block(fr.name, "friction", sp.Matrix([coord[fr.coordinate]]), X(fr.static), X(fr.kinetic)))
    _check_loops(eqs, out)
    return out


def ground_axes(normal: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """(t1, t2, n) of a spatial ground plane (:class:`~rodgen.model.spatial.SpatialGround`): n the unit
    normal, t1 the world x axis projected onto the plane (the world y axis when n is along x), t2 = n × t1."""
    n = normal / sp.sqrt(sum(c ** 2 for c in normal))
    n = sp.Matrix([sp.nsimplify(c) if c.is_Number else c for c in n])
    ex = sp.Matrix([1, 0, 0])
    if all(c.is_Number for c in n) and n[1] == 0 and n[2] == 0:
        ex = sp.Matrix([0, 1, 0])
    t1 = ex - (ex.T * n)[0] * n
    t1 = t1 / sp.sqrt(sum(c ** 2 for c in t1))
    return t1, n.cross(t1), n


def _spatial_blocks(eqs: Equations, X, inline, block) -> list[ConstraintEquations]:  # type: ignore[no-untyped-def]
    """The contact and loop blocks of a spatial model, from its named frames ``eqs.frames`` and their
    Jacobians ``eqs.frame_jacobians`` (rows 0-2 the origin's velocity, 3-5 the angular velocity, world axes).

    contact (3 rows): ``[t1·r, t2·r, n·r - h]`` of the frame's origin r, so that λ = [f_t1, f_t2, f_n]
    in the ground's axes; its Jacobian ``[t1 t2 n]ᵀ J_v``; a flat foot (6 rows) also the orientation error
    against the ground's axes, with the Jacobian ``[t1 t2 n]ᵀ J_ω`` (λ: the moments in those axes too).
    loop (3 rows): ``r_b - r_a``; with ``rows = 6`` also ``½ vee(R_b R_aᵀ - R_a R_bᵀ)`` (zero when the
    orientations agree), whose Jacobian is taken as the relative angular velocity ``J_ω,b - J_ω,a`` (the
    derivative of that error where it is zero); the bias is ``J̇ q̇`` of these Jacobians.
    """
    model = eqs.model

    def key(name: str) -> str:
        return name if name in eqs.frames else f"{name}.joint"

    def frame(name: str) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        k = key(name)
        pos, rot = eqs.frames[k]
        return inline(pos), inline(rot), inline(eqs.frame_jacobians[k])

    def velocity(names: tuple[str, ...], signs: tuple[int, ...], A: sp.Matrix, angular: bool) -> sp.Matrix | None:
        """J q̇ of the rows A (sum of sign J_frame) from the frames' velocities of the recursion (None when it
        does not give them: J q̇ is then the product)."""
        if not all(key(nm) in eqs.frame_velocities for nm in names):
            return None
        fv = sum((sg * eqs.frame_velocities[key(nm)] for nm, sg in zip(names, signs)), sp.zeros(6, 1))
        out = A * fv[0:3, :]
        return out.col_join(A * fv[3:6, :]) if angular else out

    rate = eqs.configuration_rate if eqs.configuration_rate is not None else sp.Matrix(eqs.qd)
    tangents: dict[sp.Symbol, sp.Expr] = {}

    def jdot_v(rows: sp.Matrix) -> sp.Matrix:
        """J̇ q̇ of Jacobian rows J written in the recursion's intermediate symbols (not inlined)."""
        return sp.Matrix(rate_derivative(eqs, list(rows * sp.Matrix(eqs.qd)), rate, tangents))

    def bias(names: tuple[str, ...], signs: tuple[int, ...], A: sp.Matrix, angular: bool,
             raw: sp.Matrix) -> sp.Matrix:
        """J̇ q̇ of the rows A (sum of sign J_frame) of the frames' origins (and angular rows): from the
        recursion's frame biases when it gives them (A constant), else by differentiating J q̇ (raw: J's rows)."""
        if not all(key(nm) in eqs.frame_biases for nm in names):
            return jdot_v(raw)
        fb = sum((sg * eqs.frame_biases[key(nm)] for nm, sg in zip(names, signs)), sp.zeros(6, 1))
        out = A * fb[0:3, :]
        return out.col_join(A * fb[3:6, :]) if angular else out

    out: list[ConstraintEquations] = []
    ground = getattr(model, "ground")           # a ValidSpatialGround: the plane n·r = height
    t1, t2, n = ground_axes(sp.Matrix([X(c) for c in ground.normal]))
    height = X(ground.height)
    T = sp.Matrix.vstack(t1.T, t2.T, n.T)
    for c in model.contacts:
        r, R, Jf = frame(c.marker)
        raw = eqs.frame_jacobians[key(c.marker)]
        pos, J, Jraw = T * r - sp.Matrix([0, 0, height]), T * Jf[0:3, :], T * raw[0:3, :]
        if c.rows == 6:
            # a flat foot: also ½ vee(R Rgᵀ - Rg Rᵀ) against the ground's axes Rg = Tᵀ, in those axes, whose
            # Jacobian is taken as the frame's angular velocity (in the ground's axes), as a 6-row loop's
            E = (R * T - T.T * R.T) / 2
            pos = pos.col_join(T * sp.Matrix([E[2, 1], E[0, 2], E[1, 0]]))
            J = J.col_join(T * Jf[3:6, :])
            Jraw = Jraw.col_join(T * raw[3:6, :])
        out.append(replace(block(c.name, "contact", pos, X(c.friction), jacobian=J,
                                 bias=bias((c.marker,), (1,), T, c.rows == 6, Jraw)),
                           sole=getattr(c, "sole", None), velocity=velocity((c.marker,), (1,), T, c.rows == 6)))
    for lp in model.loops:
        ra, Ra, Ja = frame(lp.a)
        rb, Rb, Jb = frame(lp.b)
        raw = eqs.frame_jacobians[key(lp.b)] - eqs.frame_jacobians[key(lp.a)]
        pos, J, Jraw = rb - ra, Jb[0:3, :] - Ja[0:3, :], raw[0:3, :]
        if lp.rows == 6:
            E = (Rb * Ra.T - Ra * Rb.T) / 2
            pos = pos.col_join(sp.Matrix([E[2, 1], E[0, 2], E[1, 0]]))
            J = J.col_join(Jb[3:6, :] - Ja[3:6, :])
            Jraw = raw
        out.append(replace(block(lp.name, "loop", pos, jacobian=J,
                                 bias=bias((lp.b, lp.a), (1, -1), sp.eye(3), lp.rows == 6, Jraw)),
                           velocity=velocity((lp.b, lp.a), (1, -1), sp.eye(3), lp.rows == 6)))
    return out


def rate_derivative(eqs: Equations, exprs: list[sp.Expr], rate: sp.Matrix,
                    tangents: dict[sp.Symbol, sp.Expr]) -> list[sp.Expr]:
    """d/dt of ``exprs`` (in q, the velocities and the intermediate symbols of ``eqs.assignments``) along
    q̇ = ``rate`` at constant velocities, in forward mode through the assignments: each intermediate the
    expressions depend on gets its time derivative as a new assignment appended to ``eqs.assignments``
    (once per symbol: ``tangents`` keeps them for the next call). So J̇ q̇ of a frame costs about as much as
    its Jacobian, instead of the derivative of its inlined closed form by every coordinate."""
    q = list(eqs.q)
    qrate = {x: rate[i] for i, x in enumerate(q)}
    known = {sym: ex for sym, ex in eqs.assignments}
    needed: set[sp.Symbol] = set()
    stack = [x for ex in exprs for x in sp.sympify(ex).free_symbols if x in known]
    while stack:
        x = stack.pop()
        if x in needed or x in tangents:
            continue
        needed.add(x)
        stack.extend(y for y in known[x].free_symbols if y in known and y not in needed)

    def d(ex: sp.Expr) -> sp.Expr:
        terms = []
        for x in sorted(ex.free_symbols, key=sp.default_sort_key):
            dx = qrate.get(x, tangents.get(x, sp.Integer(0)))
            if dx != 0:
                terms.append(sp.diff(ex, x) * dx)
        return sp.Add(*terms)
    for sym, ex in list(eqs.assignments):
        if sym in needed:
            dt = d(ex)
            if dt != 0 and not isinstance(dt, sp.Symbol):
                t = sp.Symbol(f"_dt_{sym}")
                eqs.assignments.append((t, dt))
                dt = t
            tangents[sym] = dt
    return [d(sp.sympify(ex)) for ex in exprs]


def _inliner(eqs: Equations):  # type: ignore[no-untyped-def]
    """Substitute the recursive method's intermediate symbols, if an expression refers to any."""
    if not eqs.assignments:
        return lambda m: m
    known = {s for s, _ in eqs.assignments}
    subs: dict[sp.Symbol, sp.Expr] = {}

    def inline(m: sp.Matrix) -> sp.Matrix:
        if not m.free_symbols & known:
            return m
        if not subs:    # the closed forms of every intermediate, built on the first expression that needs them
            for sym, ex in eqs.assignments:
                subs[sym] = ex.xreplace(subs)
        return m.xreplace(subs)
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
        lp = loops[b.name]
        if len(b.position) != 2:
            err = [float(e.xreplace(vals)) for e in b.position]
            gap = math.sqrt(sum(x * x for x in err[:3]))
            turn = math.sqrt(sum(x * x for x in err[3:]))
            if not (gap <= LOOP_TOLERANCE and turn <= LOOP_TOLERANCE):
                raise ModelError(
                    f"the loop is not closed at the initial coordinates: frames {lp.a!r} and {lp.b!r} are "
                    f"{gap:.6g} m apart" + (f" and their orientations differ ({turn:.6g})" if len(err) > 3 else "")
                    + f" (tolerance {LOOP_TOLERANCE:g}); set the initial coordinates so that the frames meet",
                    source=eqs.model.source, where=f"loop {b.name!r}")
            continue
        dx, dy = (float(e.xreplace(vals)) for e in b.position)
        gap = math.hypot(dx, dy)
        if not gap <= LOOP_TOLERANCE:
            raise ModelError(
                f"the loop is not closed at the initial coordinates: markers {lp.a!r} and {lp.b!r} are "
                f"{gap:.6g} m apart (dx = {dx:.6g} m, dy = {dy:.6g} m; tolerance {LOOP_TOLERANCE:g} m); "
                f"set the links' initial angles and lengths so that the markers meet",
                source=eqs.model.source, where=f"loop {b.name!r}")




@dataclass
class ConstrainedTerms:
    """Everything the constrained dynamics needs at one state, as straight-line code.

    The mass matrix is factorised symbolically as ``P M Pᵀ = L D Lᵀ`` (unit lower
    ``L``, diagonal ``D``, ``P`` a fixed permutation of the coordinates that keeps
    the fill-in of the tree's sparsity small); every entry that is zero whatever
    the state (an entry of M of two coordinates on different branches, a Jacobian
    entry of a coordinate the point does not depend on) is skipped. Each quantity
    is an intermediate symbol of ``assignments``, so the code grows with the
    nonzero entries of L (at most n³/6 operations), never by expansion.

    pivots : (n) the pivots D of the factorisation; M is positive definite iff all are > 0.
    qdd_free : (n) M⁻¹ (B u - bias), the accelerations without constraint forces.
    response : (rows, n) row i is M⁻¹ J_iᵀ (the accelerations a unit force on row i causes).
    delassus : (rows, rows) J M⁻¹ Jᵀ, symmetric.
    velocity : (rows) J q̇.
    free_acceleration : (rows) J qdd_free + J̇ q̇, the rows' acceleration without constraint forces.
    position, jacobian : (rows) c(q) and the rows of J, written with the sines and cosines the mass
        matrix and the bias already compute (an absolute angle as a sum of the relative angles of
        the recursion, by the addition theorems) so that no angle's sine is computed twice.
    order : the permutation P, as the coordinate indices in elimination order.
    """

    assignments: list[tuple[sp.Symbol, sp.Expr]]
    pivots: list[sp.Expr]
    qdd_free: list[sp.Expr]
    response: list[list[sp.Expr]]
    delassus: list[list[sp.Expr]]
    velocity: list[sp.Expr]
    free_acceleration: list[sp.Expr]
    position: list[sp.Expr]
    jacobian: list[sp.Matrix]
    order: list[int]


def elimination_order(pattern: list[list[bool]]) -> list[int]:
    """An order of the coordinates for the factorisation of a matrix of the given nonzero ``pattern``:
    the natural order or its reverse (the leaves of a tree first, the floating base last), whichever
    gives the fewer nonzero entries in L."""
    n = len(pattern)

    def fill(order: list[int]) -> int:
        nz = [[pattern[a][b] for b in order] for a in order]
        count = 0
        for j in range(n):
            for i in range(j + 1, n):
                if nz[i][j]:
                    count += 1
                    continue
                if any(nz[i][k] and nz[j][k] for k in range(j)):
                    nz[i][j] = nz[j][i] = True
                    count += 1
        return count
    natural, reverse = list(range(n)), list(range(n - 1, -1, -1))
    return reverse if fill(reverse) < fill(natural) else natural


class _Factored:
    """The sparse factorisation P M Pᵀ = L D Lᵀ of a model's mass matrix and its constraint rows, as
    intermediate symbols appended to ``assignments`` (shared by :func:`constrained_terms` and
    :func:`constrained_solve`)."""

    def __init__(self, eqs: Equations) -> None:
        n = len(eqs.qd)     # M is nv x nv
        self.n = n
        self.zero = zero = sp.Integer(0)
        rows = [c.jacobian[i, :] for c in eqs.constraints for i in range(c.nrows)]
        self.f = (eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)) - eqs.bias
        M = eqs.M
        self.order = order = elimination_order([[M[i, j] != 0 for j in range(n)] for i in range(n)])
        Mp = [[M[order[i], order[j]] for j in range(n)] for i in range(n)]
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = list(eqs.assignments)
        self.counter = 0
        new = self.new
        # P M P^T = L D L^T; E[i][k] = L[i][k] D[k]
        self.L = L = [[zero] * n for _ in range(n)]
        E = [[zero] * n for _ in range(n)]
        self.D: list[sp.Expr] = []
        self.Dinv: list[sp.Expr] = []
        for j in range(n):
            d = new(Mp[j][j] - sp.Add(*[L[j][k] * E[j][k] for k in range(j) if L[j][k] != 0]), "d")
            self.D.append(d)
            self.Dinv.append(new(1 / d, "r"))
            for i in range(j + 1, n):
                s = Mp[i][j] - sp.Add(*[L[i][k] * E[j][k] for k in range(j) if L[i][k] != 0 and E[j][k] != 0])
                if s != 0:
                    E[i][j] = new(s, "e")
                    L[i][j] = new(E[i][j] * self.Dinv[j], "l")
        # the rows' sines and cosines from those the mass matrix and the bias already compute
        known = _trig_args([ex for _, ex in eqs.assignments] + list(M) + list(eqs.bias))
        self.share = share = _angle_sums(_trig_args(list(rows_all(eqs))), known, list(eqs.q), new)
        self.rows = [row.xreplace(share) for row in rows] if share else rows

    def new(self, ex: sp.Expr, stem: str) -> sp.Expr:
        """A symbol for ``ex`` (zero and plain symbols stay as they are)."""
        if ex == 0 or isinstance(ex, sp.Symbol):
            return ex
        self.counter += 1
        s = sp.Symbol(f"_cfd_{stem}{self.counter}")
        self.assignments.append((s, ex))
        return s

    def forward(self, x: list[sp.Expr], stem: str) -> tuple[list[sp.Expr], list[sp.Expr]]:
        """(v, y): v = L^-1 P x, y = D^-1 v (elimination order)."""
        n, L, new = self.n, self.L, self.new
        v: list[sp.Expr] = []
        for i in range(n):
            v.append(new(x[self.order[i]] - sp.Add(*[L[i][k] * v[k] for k in range(i)
                                                      if L[i][k] != 0 and v[k] != 0]), stem + "v"))
        return v, [new(v[i] * self.Dinv[i], stem + "y") for i in range(n)]

    def backward(self, y: list[sp.Expr], stem: str) -> list[sp.Expr]:
        """Pᵀ L^-T y (the coordinates' order) for y in elimination order."""
        n, L, zero = self.n, self.L, self.zero
        z: list[sp.Expr] = [zero] * n
        for i in range(n - 1, -1, -1):
            z[i] = self.new(y[i] - sp.Add(*[L[k][i] * z[k] for k in range(i + 1, n) if L[k][i] != 0 and z[k] != 0]),
                            stem + "z")
        out: list[sp.Expr] = [zero] * n
        for i in range(n):
            out[self.order[i]] = z[i]
        return out

    def solve(self, x: list[sp.Expr], stem: str) -> tuple[list[sp.Expr], list[sp.Expr], list[sp.Expr]]:
        """(v, y, z): v = L^-1 P x, y = D^-1 v (elimination order) and z = M^-1 x (the coordinates' order)."""
        v, y = self.forward(x, stem)
        return v, y, self.backward(y, stem)


def constrained_terms(eqs: Equations) -> ConstrainedTerms:
    """The :class:`ConstrainedTerms` of ``eqs`` (its constraint blocks all stacked, in the order of
    ``eqs.constraints``); ``eqs.constraints`` must be filled (:func:`constraint_equations`)."""
    fa = _Factored(eqs)
    n, rows, zero, new = fa.n, fa.rows, fa.zero, fa.new
    nr = len(rows)
    _, _, qdd_free = fa.solve([fa.f[i] for i in range(n)], "f")
    V: list[list[sp.Expr]] = []
    Y: list[list[sp.Expr]] = []
    response: list[list[sp.Expr]] = []
    for r, row in enumerate(rows):
        v, y, a = fa.solve([row[j] for j in range(n)], f"j{r}_")
        V.append(v)
        Y.append(y)
        response.append(a)
    # J M^-1 J^T = (L^-1 P J^T)^T D^-1 (L^-1 P J^T)
    delassus = [[zero] * nr for _ in range(nr)]
    for r in range(nr):
        for s in range(r + 1):
            ex = sp.Add(*[Y[r][i] * V[s][i] for i in range(n) if V[r][i] != 0 and V[s][i] != 0])
            delassus[r][s] = delassus[s][r] = new(ex, "s")
    velocity = _velocities(eqs, rows, fa.share)
    bias = [ex.xreplace(fa.share) for c in eqs.constraints for ex in c.bias]
    free = [bias[r] + sp.Add(*[row[j] * qdd_free[j] for j in range(n) if row[j] != 0 and qdd_free[j] != 0])
            for r, row in enumerate(rows)]
    position = [ex.xreplace(fa.share) for c in eqs.constraints for ex in c.position]
    return ConstrainedTerms(fa.assignments, fa.D, qdd_free, response, delassus, velocity, free, position, rows,
                            fa.order)


@dataclass
class ConstrainedSolve:
    """The constrained dynamics for a set of held constraint rows, solved in straight-line code.

    Range space on the sparse factorisation P M Pᵀ = L D Lᵀ of :class:`ConstrainedTerms`: with
    V = L⁻¹ P Jᵀ and y_f = D⁻¹ L⁻¹ P (B u - bias) (forward substitutions only),
    S = J M⁻¹ Jᵀ = Vᵀ D⁻¹ V and J qdd0 = Vᵀ y_f; the equations of the held rows

        S λ = -(J qdd0 + J̇ q̇) - k_v J q̇ - k_p (c - target)     (k_v, k_p of each row: 2 alpha, beta²)

    are solved by L D Lᵀ (the rows in their order, no pivoting), and the accelerations by a single
    backward substitution, qdd = Pᵀ L⁻ᵀ (y_f + D⁻¹ V λ). Which rows are held is an input (``on``: 1 or
    0 per row, and off = 1 - on: no branch in the code, no rounding): the system solved is
    S' λ = on·rhs with S'_rs = on_r on_s S_rs and S'_rr = on_r S_rr + off_r, so a row that is not held
    gets λ = 0 exactly and leaves the others' numbers as those of the held rows' own system (its row and
    column of S' are those of the identity).
    Valid when every pivot of M is > 0 and the pivots of the held rows pass the caller's test (a
    singular S gives infinities or NaN, not an error).

    gains : (4 rows) the symbols on, off, k_v, k_p of each row (row r: gains[4r] .. gains[4r+3]).
    targets : (rows) the symbols c_target.
    pivots : (n) the pivots D of M.
    qdd : (n) the accelerations; lam : (rows) the constraint forces λ (0 in the rows not held).
    s_pivots, s_diag : (rows) the pivots of S' and the diagonal of S in the rows held (0 in the others).
    """

    assignments: list[tuple[sp.Symbol, sp.Expr]]
    gains: list[sp.Symbol]
    targets: list[sp.Symbol]
    pivots: list[sp.Expr]
    qdd: list[sp.Expr]
    lam: list[sp.Expr]
    s_pivots: list[sp.Expr]
    s_diag: list[sp.Expr]
    response: "InputResponse | None" = None


@dataclass
class InputResponse:
    """How qdd and λ of a :class:`ConstrainedSolve` change with the inputs, the same rows held at the same
    state: both are affine in u, so an input change du moves them by

        dqdd = Pᵀ L⁻ᵀ (D⁻¹ L⁻¹ P B du + D⁻¹ V dλ),   S' dλ = -on · Vᵀ D⁻¹ L⁻¹ P B du,

    on the factors the solve has already computed (L, D⁻¹, D⁻¹ V, the factors of S'). Built where B holds
    parameters only (the response then needs no state). About a tenth of the solve's operations.

    du : (nu) the symbols of the input change.
    carried : the symbols of the solve's ``assignments`` the response reads (the factors), in their order:
        the solve stores them, the response reads them back.
    assignments : the response's own intermediates (in carried, du, the parameters and the solve's gains).
    qdd : (n) dqdd; lam : (rows) dλ (0 in the rows not held).
    """

    du: list[sp.Symbol]
    carried: list[sp.Symbol]
    assignments: list[tuple[sp.Symbol, sp.Expr]]
    qdd: list[sp.Expr]
    lam: list[sp.Expr]


def constrained_solve(eqs: Equations) -> ConstrainedSolve:
    """The :class:`ConstrainedSolve` of ``eqs`` (the rows of ``eqs.constraints``, each held or not)."""
    fa = _Factored(eqs)
    n, rows, zero, new = fa.n, fa.rows, fa.zero, fa.new
    nr = len(rows)
    gains = [sp.Symbol(f"_cfd_k{i}") for i in range(4 * nr)]
    on, off = gains[0::4], gains[1::4]
    targets = [sp.Symbol(f"_cfd_t{i}") for i in range(nr)]
    _, yf = fa.forward([fa.f[i] for i in range(n)], "f")
    V: list[list[sp.Expr]] = []
    Y: list[list[sp.Expr]] = []
    for r, row in enumerate(rows):
        v, y = fa.forward([row[j] for j in range(n)], f"j{r}_")
        V.append(v)
        Y.append(y)
    S = [[zero] * nr for _ in range(nr)]
    diag: list[sp.Expr] = []
    for r in range(nr):
        for s in range(r + 1):
            ex = sp.Add(*[Y[r][i] * V[s][i] for i in range(n) if V[r][i] != 0 and V[s][i] != 0])
            if s == r:
                diag.append(new(ex, "s"))
                S[r][r] = new(on[r] * diag[r] + off[r], "s")
            else:
                S[r][s] = S[s][r] = new((on[r] * on[s]) * ex, "s")
    bias = [ex.xreplace(fa.share) for c in eqs.constraints for ex in c.bias]
    position = [ex.xreplace(fa.share) for c in eqs.constraints for ex in c.position]
    velocity = _velocities(eqs, rows, fa.share)
    rhs = []
    for r, row in enumerate(rows):
        free = bias[r] + sp.Add(*[V[r][i] * yf[i] for i in range(n) if V[r][i] != 0 and yf[i] != 0])
        vel = velocity[r]
        rhs.append(new(on[r] * (-free - gains[4 * r + 2] * vel - gains[4 * r + 3] * (position[r] - targets[r])),
                       "b"))
    # S = L_S D_S L_S^T, then lambda = L_S^-T D_S^-1 L_S^-1 rhs
    LS = [[zero] * nr for _ in range(nr)]
    ES = [[zero] * nr for _ in range(nr)]
    DS: list[sp.Expr] = []
    DSinv: list[sp.Expr] = []
    for j in range(nr):
        d = new(S[j][j] - sp.Add(*[LS[j][k] * ES[j][k] for k in range(j) if LS[j][k] != 0]), "ds")
        DS.append(d)
        DSinv.append(new(1 / d, "rs"))
        for i in range(j + 1, nr):
            e = S[i][j] - sp.Add(*[LS[i][k] * ES[j][k] for k in range(j) if LS[i][k] != 0 and ES[j][k] != 0])
            if e != 0:
                ES[i][j] = new(e, "es")
                LS[i][j] = new(ES[i][j] * DSinv[j], "ls")

    def lam_and_qdd(b: list[sp.Expr], y0: list[sp.Expr], stem: str) -> tuple[list[sp.Expr], list[sp.Expr]]:
        """λ = S'⁻¹ b by the factors of S', and qdd = Pᵀ L⁻ᵀ (y0 + D⁻¹ V λ)."""
        w: list[sp.Expr] = []
        for i in range(nr):
            w.append(new(b[i] - sp.Add(*[LS[i][k] * w[k] for k in range(i) if LS[i][k] != 0 and w[k] != 0]),
                         stem + "w"))
        lam: list[sp.Expr] = [zero] * nr
        for i in range(nr - 1, -1, -1):
            lam[i] = new(w[i] * DSinv[i] - sp.Add(*[LS[k][i] * lam[k] for k in range(i + 1, nr)
                                                     if LS[k][i] != 0 and lam[k] != 0]), stem + "lam")
        x = [new(y0[i] + sp.Add(*[Y[r][i] * lam[r] for r in range(nr) if Y[r][i] != 0]), stem + "x")
             for i in range(n)]
        return lam, fa.backward(x, stem + "a")

    lam, qdd = lam_and_qdd(rhs, yf, "")
    response = None
    if eqs.u and eqs.B.free_symbols <= set(eqs.params):
        # the response to an input change du with the same rows held: f = B du, and no other right-hand side
        main, fa.assignments = fa.assignments, []
        du = [sp.Symbol(f"_cfd_du{i}") for i in range(len(eqs.u))]
        vdu, ydu = fa.forward(list(eqs.B * sp.Matrix(du)), "du")
        # V_r · y = Y_r · v (Y = D⁻¹ V entry by entry)
        bdu = [new(-on[r] * sp.Add(*[Y[r][i] * vdu[i] for i in range(n) if Y[r][i] != 0 and vdu[i] != 0]), "db")
               for r in range(nr)]
        dlam, dqdd = lam_and_qdd(bdu, ydu, "d")
        own, fa.assignments = fa.assignments, main
        response = _response(main, InputResponse(du, [], own, dqdd, dlam), set(eqs.params) | set(gains))
    # the diagonal of the rows held (0 in the others): a mode's solve drops the rows not held entirely
    return ConstrainedSolve(fa.assignments, gains, targets, fa.D, qdd, lam, DS,
                            [on[r] * diag[r] for r in range(nr)], response)


def _response(main: list[tuple[sp.Symbol, sp.Expr]], r: "InputResponse",
              inputs: set[sp.Symbol]) -> "InputResponse | None":
    """``r`` with its ``carried`` symbols (those of ``main`` it reads, in the order of ``main``), or None when
    it reads anything but them, its ``du`` and ``inputs`` (the response needs the state then)."""
    used: set[sp.Basic] = set()
    for ex in [ex for _, ex in r.assignments] + list(r.qdd) + list(r.lam):
        used |= sp.sympify(ex).free_symbols
    used -= {s for s, _ in r.assignments}
    carried = [s for s, _ in main if s in used]
    if not used <= set(carried) | set(r.du) | inputs:
        return None
    return replace(r, carried=carried)


def _velocities(eqs: Equations, rows: list[sp.Matrix], share: dict) -> list[sp.Expr]:  # type: ignore[type-arg]
    """J q̇ of every constraint row: a block's ``velocity`` where the derivation gives it, else the rows
    (``rows``, J with the shared sines and cosines) times q̇."""
    qd = list(eqs.qd)
    out: list[sp.Expr] = []
    for c in eqs.constraints:
        if c.velocity is not None:
            out.extend(ex.xreplace(share) for ex in c.velocity)
            continue
        for row in rows[len(out):len(out) + c.nrows]:
            out.append(sp.Add(*[row[j] * qd[j] for j in range(len(qd)) if row[j] != 0]))
    return out


MODE_BLOCKS_MAX = 3
"""Models with 2 .. MODE_BLOCKS_MAX constraint blocks get a solve per contact mode (see :func:`solve_modes`)."""


def solve_modes(eqs: Equations, cs: ConstrainedSolve) -> list[tuple[tuple[int, ...], ConstrainedSolve]]:
    """One specialised :class:`ConstrainedSolve` of ``cs`` (the masked solve of ``eqs``) per contact mode
    worth it: (held blocks, solve).

    The modes are each block held alone, for a model of 2 .. ``MODE_BLOCKS_MAX`` blocks (none otherwise:
    every other mode, and every other model, keeps the masked solve). All blocks held is not one: its
    specialisation saves only the mask's products (about 1 % of the operations), less than the test that
    selects it costs. A mode's solve is
    the masked one with its on, off gains set (1, 0 on the rows of the held blocks, 0, 1 on the others)
    and the numbers carried through the assignments: the rows not held drop out of J M^-1 J^T (its
    diagonal in s is 0 there), its factorisation and the back substitution, and so do their forward
    substitutions.
    Its gains symbols are those of the masked solve (on, off no longer appear)."""
    nb = len(eqs.constraints)
    if not 2 <= nb <= MODE_BLOCKS_MAX:
        return []
    start = [0]
    for c in eqs.constraints:
        start.append(start[-1] + c.nrows)
    modes: list[tuple[int, ...]] = [(b,) for b in range(nb)]
    out = []
    for held in modes:
        rows = {r for b in held for r in range(start[b], start[b + 1])}
        subs: dict[sp.Basic, sp.Expr] = {}
        for r in range(start[-1]):
            subs[cs.gains[4 * r]] = sp.Integer(1 if r in rows else 0)
            subs[cs.gains[4 * r + 1]] = sp.Integer(0 if r in rows else 1)
        out.append((held, _specialise(cs, subs)))
    return out


def _specialise(cs: ConstrainedSolve, subs: dict[sp.Basic, sp.Expr]) -> ConstrainedSolve:
    """``cs`` with ``subs`` put in, an assignment that becomes a number or a single symbol folded into
    its uses."""
    def fold(pairs: list) -> list[tuple[sp.Symbol, sp.Expr]]:
        kept = []
        for sym, ex in pairs:
            ex = sp.sympify(ex).xreplace(subs)
            if ex.is_Number or ex.is_Symbol:
                subs[sym] = ex
            else:
                kept.append((sym, ex))
        return kept

    assignments = fold(cs.assignments)

    def put(xs: list[sp.Expr]) -> list[sp.Expr]:
        return [sp.sympify(x).xreplace(subs) for x in xs]
    response = None
    if cs.response is not None:
        r = cs.response
        own = fold(r.assignments)
        # what the masked response reads besides its factors and du (the parameters, the gains)
        read: set[sp.Basic] = set()
        for ex in [ex for _, ex in r.assignments] + list(r.qdd) + list(r.lam):
            read |= sp.sympify(ex).free_symbols
        inputs = read - {s for s, _ in r.assignments} - set(r.carried) - set(r.du)
        response = _response(assignments, InputResponse(r.du, [], own, put(r.qdd), put(r.lam)), inputs)
    return ConstrainedSolve(assignments, cs.gains, cs.targets, put(cs.pivots), put(cs.qdd), put(cs.lam),
                            put(cs.s_pivots), put(cs.s_diag), response)


def rows_all(eqs: Equations) -> list[sp.Expr]:
    """Every expression of the constraint rows: positions, Jacobians, biases."""
    return [ex for c in eqs.constraints for m in (c.position, c.jacobian, c.bias) for ex in m]


def _trig_args(exprs: list[sp.Expr]) -> list[sp.Expr]:
    """The arguments x of sin(x) and cos(x) in ``exprs``, each once, in SymPy's canonical order (not in the
    order of a set, which follows the hash seed and would make the generated temporaries differ between
    processes)."""
    out: set[sp.Expr] = set()
    for ex in exprs:
        if isinstance(ex, sp.Basic):
            out.update(f.args[0] for f in ex.atoms(sp.sin, sp.cos))
    return sorted(out, key=sp.default_sort_key)


def _angle_sums(wanted: list[sp.Expr], known: list[sp.Expr], q: list[sp.Symbol], new) -> dict:  # type: ignore[no-untyped-def]
    """sin(x), cos(x) of the angles in ``wanted`` that are sums of angles in ``known`` (integer
    combinations of coordinates, up to four terms), by the addition theorems:
    {sin(x): expression, cos(x): expression} (partial sums get symbols through ``new``)."""
    def form(x: sp.Expr) -> tuple[int, ...] | None:
        try:
            poly = sp.Poly(x, *q)
        except sp.PolynomialError:
            return None
        if poly.total_degree() != 1 or any(not c.is_integer for c in poly.coeffs()):
            return None
        if any(sum(m) != 1 for m in poly.monoms()):
            return None
        return tuple(int(poly.coeff_monomial(v)) for v in q)
    base = {}
    for x in known:
        f = form(x)
        if f is not None:
            base[f] = x
    goals = {}
    known_set = set(known)
    for x in wanted:
        if x in known_set:
            continue
        f = form(x)
        if f is not None:
            goals[f] = x
    if not base or not goals:
        return {}
    steps = [(f, x, 1) for f, x in base.items()] + [(tuple(-c for c in f), x, -1) for f, x in base.items()]
    # breadth-first: node -> (parent node, angle, sign)
    parent: dict[tuple[int, ...], tuple[tuple[int, ...] | None, sp.Expr, int]] = {}
    frontier = []
    for f, x, sgn in steps:
        if f not in parent:
            parent[f] = (None, x, sgn)
            frontier.append(f)
    for _ in range(3):
        nxt = []
        for node in frontier:
            for f, x, sgn in steps:
                key = tuple(a + b for a, b in zip(node, f))
                if key not in parent and any(key):
                    parent[key] = (node, x, sgn)
                    nxt.append(key)
        frontier = nxt
    memo: dict[tuple[int, ...], tuple[sp.Expr, sp.Expr]] = {}

    def sincos(node: tuple[int, ...]) -> tuple[sp.Expr, sp.Expr]:
        if node in memo:
            return memo[node]
        prev, x, sgn = parent[node]
        s1, c1 = sgn * sp.sin(x), sp.cos(x)
        if prev is None:
            out = (s1, c1)
        else:
            s0, c0 = sincos(prev)
            out = (new(s0 * c1 + c0 * s1, "sn"), new(c0 * c1 - s0 * s1, "cs"))
        memo[node] = out
        return out
    share = {}
    for f, x in goals.items():
        if f in parent:
            sn, cs = sincos(f)
            share[sp.sin(x)] = sn
            share[sp.cos(x)] = cs
    return share


__all__ = ["LOOP_TOLERANCE", "MODE_BLOCKS_MAX", "ConstrainedSolve", "InputResponse", "solve_modes",
            "ConstrainedTerms", "constraint_equations", "constrained_solve",
           "rate_derivative",
           "constrained_terms", "elimination_order",
           "initial_values"]
