"""Force elements: point forces, friction laws and compliant ground contact, as generalized forces Jᵀ F.

Every element acts at a named point ``r(q)`` of ``Equations.points`` (a
marker or a mass point). Its Jacobian ``J = dr/dq`` (2 x n) gives the
point's velocity ``v = J q̇`` and the element's generalized force ``Jᵀ F``,
where ``F`` is the element's force on the point in the ground frame:

``point_force``
    ``F = (fx, fy)`` (``frame: world``) or ``fx e_a + fy e_c`` (``frame:
    link``), the components expressions of q, q̇, the time t and the parameters, or two
    inputs: then ``Jᵀ`` (of the frame's axes) becomes two columns of ``B``.
``viscous``
    ``F = -(c_a (e_a·v) e_a + c_c (e_c·v) e_c)``; ``e_a = (cos θ, sin θ)``
    along the axis of the point's link (absolute angle θ), ``e_c = (-sin θ,
    cos θ)`` across it. Isotropic: ``F = -c v``.
``coulomb``
    anisotropic: ``F = -N (μ_a tanh(v_a/v_s) e_a + μ_c tanh(v_c/v_s) e_c)``;
    isotropic: ``F = -μ N v / sqrt(v·v + v_s²)``.
``ground_contact``
    with the ground's tangent ``t``, normal ``n`` (docs/ARCHITECTURE.md,
    "Constraints"): penetration ``δ = -(n·r - h cos s)``, its rate ``δ' =
    -n·v``; normal force ``F_n = k δ^e (1 + c δ')`` where ``δ > 0`` and that
    is positive, else 0; ``F = F_n n - μ F_n tanh((t·v)/v_s) t``.

The element's ``generalized`` column is ``Jᵀ F``. The laws' columns (all but
input forces) sum to ``Equations.F`` (which then depends on ``Equations.t``), on the right-hand side:
``M q̈ + h + G + K + D = B u + F``; input forces add their ``Jᵀ e`` columns to
``B``. Everything is a closed-form expression of q, q̇, u and the parameters,
so the RHS Jacobian differentiates the laws exactly (``tanh``, the square root
and the contact's ``Piecewise`` included).
"""
from __future__ import annotations

from typing import Any, Callable

import sympy as sp

from ..model.expr import Expression
from ..model.valid import ValidForce, ValidModel
from .constraints import _inliner
from .convert import to_sympy
from .equations import Equations, ForceEquations


def _mul(A: sp.Matrix, B: sp.Matrix) -> sp.Matrix:
    """``A * B`` over the nonzero entries only: SymPy's product asks each entry of the other factor whether it is
    finite when it meets a zero (0*oo is nan), a walk through the assumptions that took half the force elements'
    derivation; these entries are finite, so the sums are the same."""
    return sp.Matrix(A.rows, B.cols, lambda i, j: sp.Add(*[A[i, k] * B[k, j] for k in range(A.cols)
                                                         if A[i, k] != 0 and B[k, j] != 0]))


def force_equations(eqs: Equations) -> list[ForceEquations]:
    """The force elements of ``eqs.model`` in declaration order (empty if it has none), for a planar model
    (points of ``eqs.points``, 2 components) and a spatial one (frames of ``eqs.frames``, 3 components)
    alike: only the point's position, its link's axes and the ground differ (:class:`_Planar`,
    :class:`_Spatial`)."""
    model = eqs.model
    if not model.forces:
        return []
    q, qd = list(eqs.q), list(eqs.qd)
    qdv = sp.Matrix(qd)
    pnames: dict[str, sp.Symbol] = {str(s): s for s in eqs.params}
    inline = _inliner(eqs)
    coord = _coordinates(eqs, inline)
    # each coordinate's rate: its velocity; a free, spherical or planar joint's coordinates have none (their
    # velocities are not the coordinates' rates), and its points move by the frame Jacobians, in nv columns
    lie = bool(getattr(model, "lie", False))
    pairs = list(zip(q, qd))
    if lie:
        rated = {c: qd[i] for i, (_, c) in enumerate(getattr(model, "velocities")()) if c is not None}
        pairs = [(qi, rated[str(qi)]) for qi in q if str(qi) in rated]
    rate = {f"{name}_dot": sum((sp.diff(ex, qi) * qdi for qi, qdi in pairs), sp.S.Zero)
            for name, ex in coord.items()}
    usym = {str(s): s for s in eqs.u}

    def X(v: Expression) -> sp.Expr:
        return to_sympy(v, pnames)

    geo: _Geometry = (_Spatial(eqs, X) if getattr(model, "spatial", False)
                      else _Planar(model, inline, eqs, coord, pnames, X))  # type: ignore[arg-type]
    out: list[ForceEquations] = []
    for f in model.forces:
        r = geo.position(f.point)
        J = geo.jacobian(f.point, r, q)
        v = _mul(J, qdv)
        names = {**pnames, **coord, **rate, "t": eqs.t}
        if f.force is not None:
            names.update(_point_states(f, geo, q, qdv, names, (r, v)))
        if f.type == "spring_damper":
            assert f.b is not None
            rb = geo.position(f.b)
            Jb = geo.jacobian(f.b, rb, q)
            F = _spring_damper(f, rb - r, _mul(Jb - J, qdv), X)
            out.append(ForceEquations(f.name, f.type, f.point, r, J, F, _mul((J - Jb).T, F), False))
            continue
        F = _law(f, r, v, geo, X, names, usym)
        out.append(ForceEquations(f.name, f.type, f.point, r, J, F, _mul(J.T, F), f.inputs is not None))
    return out


def _point_states(f: ValidForce, geo: "_Geometry", q: list[sp.Symbol], qdv: sp.Matrix,
                  names: dict[str, sp.Expr], at: tuple[sp.Matrix, sp.Matrix]) -> dict[str, sp.Expr]:
    """The point states (``x_<point>`` ... ``vz_<point>``, :data:`rodgen.model.validate.POINT_STATES`) a point
    force's expressions use (names not already in ``names``): the point's position and velocity in the
    ground frame (``at``: those of the force's own point, already known)."""
    from ..model.validate import point_states
    points = {p: "" for ex in f.force or () for nm in ex.names if "_" in nm and nm not in names
              for p in [nm.split("_", 1)[1]] if geo.has_point(p)}
    known = point_states(points, geo.dim)
    out: dict[str, sp.Expr] = {}
    cache: dict[str, tuple[sp.Matrix, sp.Matrix]] = {f.point: at}
    for ex in f.force or ():
        for nm in ex.names:
            if nm not in known:
                continue
            kind, p = known[nm]
            if p not in cache:
                r = geo.position(p)
                cache[p] = (r, _mul(geo.jacobian(p, r, q), qdv))
            r, v = cache[p]
            out[nm] = (v if kind.startswith("v") else r)["xyz".index(kind[-1])]
    return out


class _Geometry:
    """What a force law needs of the model's world: its dimension, a point's position, the axes of a link
    (along and across its axis, in the plane of the friction) and of a point's frame, and the ground."""

    dim = 2

    def position(self, point: str) -> sp.Matrix:
        raise NotImplementedError

    def has_point(self, point: str) -> bool:
        raise NotImplementedError

    def jacobian(self, point: str, r: sp.Matrix, q: list[sp.Symbol]) -> sp.Matrix:
        """d r / d q of the point at ``r`` (dim x n)."""
        return r.jacobian(q) if q else sp.zeros(self.dim, 0)

    def link_axes(self, link: str) -> tuple[sp.Matrix, sp.Matrix]:
        raise NotImplementedError

    def frame_axes(self, f: ValidForce) -> sp.Matrix:
        raise NotImplementedError

    def ground(self, r: sp.Matrix, v: sp.Matrix) -> tuple[sp.Expr, sp.Expr, sp.Matrix, sp.Matrix, sp.Matrix]:
        """Penetration depth, its rate, the unit normal, the tangential velocity and its basis (columns)."""
        raise NotImplementedError


class _Planar(_Geometry):
    def __init__(self, model: ValidModel, inline: Callable[[sp.Matrix], sp.Matrix], eqs: Equations,
                 coord: dict[str, sp.Expr], pnames: dict[str, sp.Symbol], X: Callable[[Expression], sp.Expr]):
        self.model, self.inline, self.eqs, self.X = model, inline, eqs, X
        self.theta = _angles(model, coord, pnames)

    def position(self, point: str) -> sp.Matrix:
        return self.inline(self.eqs.points[point])

    def has_point(self, point: str) -> bool:
        return point in self.eqs.points

    def link_axes(self, link: str) -> tuple[sp.Matrix, sp.Matrix]:
        th = self.theta[link]
        return sp.Matrix([sp.cos(th), sp.sin(th)]), sp.Matrix([-sp.sin(th), sp.cos(th)])

    def frame_axes(self, f: ValidForce) -> sp.Matrix:
        ea, ec = self.link_axes(f.link)
        return ea.row_join(ec)

    def ground(self, r: sp.Matrix, v: sp.Matrix) -> tuple[sp.Expr, sp.Expr, sp.Matrix, sp.Matrix, sp.Matrix]:
        s, height = self.X(self.model.ground.slope), self.X(self.model.ground.height)
        t = sp.Matrix([sp.cos(s), sp.sin(s)])
        n = sp.Matrix([-sp.sin(s), sp.cos(s)])
        return height * sp.cos(s) - (n.T * r)[0], -(n.T * v)[0], n, t, t


class _Spatial(_Geometry):
    dim = 3

    def __init__(self, eqs: Equations, X: Callable[[Expression], sp.Expr]):
        self.eqs, self.X = eqs, X
        g: Any = eqs.model.ground
        nv = sp.Matrix([X(c) for c in g.normal])
        self.n = _unit(nv)
        ex = sp.Matrix([1, 0, 0])
        t1 = ex - (self.n.T * ex)[0] * self.n
        if all(sp.simplify(c) == 0 for c in t1):
            t1 = sp.Matrix([0, 1, 0]) - self.n[1] * self.n
        self.t1 = _unit(t1)
        self.t2 = self.n.cross(self.t1)
        self.height = X(g.height)

    # The frames and their Jacobians as the derivation gives them: in the recursive method's intermediates
    # (the world frames, computed once), not inlined: a law's expressions grow with the law, not with the depth
    # of its point in the tree.
    def position(self, point: str) -> sp.Matrix:
        return self.eqs.frames[point][0]

    def has_point(self, point: str) -> bool:
        return point in self.eqs.frames

    def jacobian(self, point: str, r: sp.Matrix, q: list[sp.Symbol]) -> sp.Matrix:
        return self.eqs.frame_jacobians[point][:3, :]

    def _rotation(self, frame: str) -> sp.Matrix:
        return self.eqs.frames[frame][1]

    def link_axes(self, link: str) -> tuple[sp.Matrix, sp.Matrix]:
        lk: Any = self.eqs.model.link_named(link)
        a = self._rotation(f"{link}.joint") * _unit(sp.Matrix([self.X(c) for c in lk.along]))
        a = a - (self.n.T * a)[0] * self.n
        ea = _unit(a)
        return ea, self.n.cross(ea)

    def frame_axes(self, f: ValidForce) -> sp.Matrix:
        return self._rotation(f.point)

    def ground(self, r: sp.Matrix, v: sp.Matrix) -> tuple[sp.Expr, sp.Expr, sp.Matrix, sp.Matrix, sp.Matrix]:
        basis = self.t1.row_join(self.t2)
        return self.height - (self.n.T * r)[0], -(self.n.T * v)[0], self.n, basis.T * v, basis


def _unit(v: sp.Matrix) -> sp.Matrix:
    """``v / |v|``, the norm simplified where that is cheap (a unit vector of sines and cosines)."""
    nn = (v.T * v)[0]
    if sp.count_ops(nn) < 60:
        nn = sp.trigsimp(nn)
    return v if nn == 1 else v / sp.sqrt(nn)


def _spring_damper(f: ValidForce, d: sp.Matrix, dv: sp.Matrix, X: Callable[[Expression], sp.Expr]) -> sp.Matrix:
    """The force on point a of a spring-damper, ``d = r_b - r_a`` and its rate ``dv``."""
    assert f.stiffness is not None and f.damping is not None and f.rest_length is not None
    L = sp.sqrt((d.T * d)[0])
    Ldot = (d.T * dv)[0] / L
    return (X(f.stiffness) * (L - X(f.rest_length)) + X(f.damping) * Ldot) * d / L


def _law(f: ValidForce, r: sp.Matrix, v: sp.Matrix, geo: _Geometry, X: Callable[[Expression], sp.Expr],
         names: dict[str, sp.Expr], usym: dict[str, sp.Symbol]) -> sp.Matrix:
    """The force on the point in the ground frame (dim x 1)."""
    if f.type == "point_force":
        if f.inputs is not None:
            comps = [usym[nm] for nm in f.inputs]
        else:
            assert f.force is not None
            comps = [to_sympy(c, names) for c in f.force]  # type: ignore[arg-type]
        F = sp.Matrix(comps)
        return F if f.frame == "world" else geo.frame_axes(f) * F
    if f.type in LINK_FRAME_LAWS:
        ea, ec = geo.link_axes(f.link)
        fa, fc = link_frame_law(f, (ea.T * v)[0], (ec.T * v)[0], X)
        return fa * ea + fc * ec
    # ground_contact
    assert f.stiffness is not None and f.exponent is not None and f.damping is not None
    assert f.friction is not None and f.velocity_scale is not None
    depth, rate, n, vt, basis = geo.ground(r, v)
    fn = X(f.stiffness) * depth ** X(f.exponent) * (1 + X(f.damping) * rate)
    Fn = sp.Piecewise((fn, sp.And(depth > 0, fn > 0)), (0, True))
    vs = X(f.velocity_scale)
    if geo.dim == 2:    # the planar ground line: vt is its tangent t
        Ft = -X(f.friction) * Fn * sp.tanh((vt.T * v)[0] / vs)
        return Fn * n + Ft * vt
    # the ground plane: the regularised law along the sliding direction, tanh(|v_t|/v_s) v_t/|v_t|
    s2 = (vt.T * vt)[0]
    g = sp.Piecewise((1 / vs, sp.Eq(s2, 0)), (sp.tanh(sp.sqrt(s2) / vs) / sp.sqrt(s2), True))
    return Fn * n - X(f.friction) * Fn * g * (basis * vt)


#: The laws that are functions of the point's velocity in its link's frame (along, across) only.
LINK_FRAME_LAWS = ("viscous", "coulomb")


def link_frame_law(f: ValidForce, va: sp.Expr, vc: sp.Expr, X: Callable[[Expression], sp.Expr]
                   ) -> tuple[sp.Expr, sp.Expr]:
    """The force of a viscous or Coulomb element along and across its link, from the point's velocity
    components ``va`` (along) and ``vc`` (across). The isotropic laws depend on |v| only, so the link
    frame serves them as well as any."""
    assert f.along is not None and f.across is not None
    if f.type == "viscous":
        if f.isotropic:
            c = X(f.along)
            return -c * va, -c * vc
        return -X(f.along) * va, -X(f.across) * vc
    assert f.type == "coulomb" and f.normal is not None and f.velocity_scale is not None
    N, vs = X(f.normal), X(f.velocity_scale)
    if f.isotropic:
        k = -X(f.along) * N / sp.sqrt(va ** 2 + vc ** 2 + vs ** 2)
        return k * va, k * vc
    return -N * X(f.along) * sp.tanh(va / vs), -N * X(f.across) * sp.tanh(vc / vs)


def _coordinates(eqs: Equations, inline: Callable[[sp.Matrix], sp.Matrix]) -> dict[str, sp.Expr]:
    """Every coordinate of the model by name: the equations' own, and the dependent ones of a coupled model."""
    out: dict[str, sp.Expr] = {str(s): s for s in eqs.q}
    out.update({str(s): inline(sp.Matrix([ex]))[0] for s, ex in eqs.couplings.items()})
    return out


def _angles(model: ValidModel, coord: dict[str, sp.Expr], pnames: dict[str, sp.Symbol]) -> dict[str, sp.Expr]:
    """The absolute angle of every link (links are in tree order)."""
    theta: dict[str, sp.Expr] = {}
    for lk in model.links:
        own = coord[lk.coordinate] + to_sympy(lk.offset, pnames)
        theta[lk.name] = own if lk.parent is None or lk.angle == "absolute" else theta[lk.parent] + own
    return theta


def apply_forces(eqs: Equations) -> None:
    """Add the force elements of ``eqs.model`` to ``eqs``: ``forces``, ``F`` and the input forces' columns of B."""
    elements = force_equations(eqs)
    if not elements:
        return
    n = len(eqs.qd)
    F = sp.zeros(n, 1)
    B = eqs.B.copy()
    col = {s: j for j, s in enumerate(eqs.u)}
    for el in elements:
        if not el.input:
            F += el.generalized
            continue
        for j, usym in enumerate(eqs.u):
            d = el.generalized.diff(usym)
            if any(x != 0 for x in d):
                B[:, col[usym]] = B[:, col[usym]] + d
    eqs.forces = elements
    eqs.F = F
    eqs.B = B


__all__ = ["force_equations", "apply_forces", "link_frame_law", "LINK_FRAME_LAWS"]
