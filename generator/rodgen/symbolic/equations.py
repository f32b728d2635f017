"""The result of the symbolic stage: equations of motion in matrix form.

    M(q, p) qdd + h(q, qd, p) + G(q, p) + K(q, p) + D(qd, p) = B(q, p) u

``h`` holds the velocity (centrifugal and Coriolis) terms, ``G`` gravity,
``K`` the springs, ``D`` the dampers, ``B`` maps the inputs ``u`` (joint
torques, longitudinal forces) onto the generalized coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import sympy as sp

from ..model.core import Coordinate, Input
from ..model.valid import ValidModel

if TYPE_CHECKING:
    from .constraints import ConstrainedSolve, ConstrainedTerms
    from .derivative import TangentChain
    from .rnea_derivatives import InverseDynamicsDerivatives


#: The time ``t`` in the force elements' expressions (a point force ``F0*sin(w*t)``). Its assumptions set it
#: apart from a parameter or coordinate that a model might call ``t`` (those are ``Symbol(name, real=True)``).
TIME = sp.Symbol("t", real=True, finite=True)


@dataclass(frozen=True)
class ConstraintEquations:
    """The rows of one constraint block (a contact, a loop closure or a coordinate limit).

    See docs/ARCHITECTURE.md, "Constraints", for the rows of each kind.

    name : the contact's, loop's or limit's name in the model.
    kind : ``"contact"`` (2 rows: tangential position along the ground, gap above it),
        ``"loop"`` (2 rows: marker b minus marker a, x and y), ``"limit"`` (1 row:
        ``q - lower`` or ``upper - q``) or ``"friction"`` (1 row: the coordinate ``q``).
    position : (k, 1) the rows as functions of q and the parameters.
    jacobian : (k, n) d position / d q.
    bias : (k, 1) the time derivative of the Jacobian times qd (J̇ q̇).
    friction : the Coulomb coefficient of a contact, the static limit of a ``"friction"`` block (dry
        friction with stiction on a coordinate, 1 row: the coordinate); None otherwise.
    kinetic : the kinetic limit of a ``"friction"`` block; None otherwise.
    sole : a flat foot's sole ``(x_min, x_max, y_min, y_max)`` (its frame's tangential axes); None otherwise.
    velocity : (k, 1) J q̇ where the derivation gives it from its own velocities (a spatial model's contacts and
        loops by the recursive method: the frames' velocities of the recursion, in the intermediate symbols of
        ``Equations.assignments``); None otherwise (J q̇ is then the product).
    """

    name: str
    kind: str
    position: sp.Matrix
    jacobian: sp.Matrix
    bias: sp.Matrix
    friction: Optional[sp.Expr] = None
    kinetic: Optional[sp.Expr] = None
    sole: Optional[tuple[float, float, float, float]] = None
    velocity: Optional[sp.Matrix] = None

    @property
    def nrows(self) -> int:
        return int(self.position.shape[0])


@dataclass(frozen=True)
class ForceEquations:
    """One force element (see :mod:`rodgen.symbolic.forces` for the laws).

    name, type, point : as in the model (``type``: ``point_force``, ``viscous``, ``coulomb``,
        ``ground_contact``, ``spring_damper``; ``point``: the marker or mass point it acts at, a spring-damper's
        first point).
    position : (d, 1) the point's position r(q); d = 2 in a planar model, 3 in a spatial one.
    jacobian : (d, n) dr/dq.
    force : (d, 1) the force on the point in the ground frame, in q, qd, u and the parameters.
    generalized : (n, 1) its generalized force, jacobianᵀ force (a spring-damper's: (J_a - J_b)ᵀ force).
    input : True for a point force given by two inputs (its columns are in ``Equations.B``, not ``F``).
    """

    name: str
    type: str
    point: str
    position: sp.Matrix
    jacobian: sp.Matrix
    force: sp.Matrix
    generalized: sp.Matrix
    input: bool = False


@dataclass
class ForwardDynamics:
    """Accelerations ``qdd = f(q, qd, u, p)`` as straight-line code (the articulated-body algorithm).

    ``qdd`` (n, 1) refers to the symbols of ``assignments`` (in evaluation
    order) and to ``q``, ``qd``, ``u`` and ``params``, in the order of the
    model's coordinates; it solves ``M qdd + h + G + K + D = B u``.
    """

    model: ValidModel
    q: list[sp.Symbol]
    qd: list[sp.Symbol]
    u: list[sp.Symbol]
    params: list[sp.Symbol]
    param_values: dict[sp.Symbol, float]
    assignments: list[tuple[sp.Symbol, sp.Expr]]
    qdd: sp.Matrix
    #: 1/D_i, the inverse articulated inertias along the joint axes (one per joint); the algorithm is
    #: valid where every D_i is positive and finite (they are the pivots of an L^T D L factorisation of M)
    inverse_pivots: list[sp.Expr] = field(default_factory=list)


#: ``Equations.articulated_reason`` of equations for which no articulated-body recursion was derived.
NOT_DERIVED = "no articulated-body recursion was derived for these equations"


@dataclass
class Equations:
    """Equations of motion of a model, as SymPy matrices.

    Attributes
    ----------
    model : the :class:`~rodgen.model.valid.ValidModel` they were derived from (immutable: a
        later change to the user's Model does not reach it).
    method : ``"lagrange"``, ``"matrix"`` or ``"recursive"``.
    q, qd, qdd : lists of Symbols: coordinates, their rates and accelerations, in
        the order of ``model.coordinates()``.
    u : list of Symbols, the inputs in the order of ``model.inputs()``.
    params : list of Symbols, the parameters in declaration order.
    param_values : dict Symbol -> default value.
    M : (n, n) symmetric mass matrix. h, G, K, D : (n, 1) columns. B : (n, m) input map.
    F : (n, 1) generalized forces of the force elements (friction laws, compliant contacts, point
        forces given as expressions), on the right-hand side: ``M qdd + h + G + K + D = B u + F``;
        zero for a model without force elements. Point forces given as inputs are columns of ``B``.
    forces : the model's force elements, one :class:`ForceEquations` each, in declaration order.
    T, V : kinetic and potential (gravity + springs) energy.
    points : dict name -> (2, 1) position of every named marker point (joints,
        segment ends, masses, user markers), in declaration order.
    couplings : for a model with coupled coordinates, dependent coordinate
        Symbol -> its expression of the independent coordinates ``q`` and the
        parameters (``q`` then lists only the independent ones; see
        :mod:`rodgen.symbolic.coupling`). Empty otherwise.
    constraints : the model's contacts, loop closures and coordinate limits, one
        :class:`ConstraintEquations` per block, in the order contacts, loops, limits
        (empty for a model without any).
    articulated : the forward dynamics by the articulated-body algorithm (O(n) straight-line
        code, its own ``assignments``) in the symbols above, or None where it does not apply;
        ``rodgen.derive`` fills it (see :func:`rodgen.symbolic.recursive.articulated_body`).
    articulated_reason : why ``articulated`` is None (coupled coordinates, masses at
        intermediate fractions of variable segments, a non-positive articulated inertia);
        empty when it is given.
    inverse : M qdd + h + G as an (n, 1) column when the method has an O(n) recursion for it (the
        recursive method: Newton-Euler with the accelerations and gravity), in the symbols of
        ``assignments`` and ``inverse_assignments`` (which follow ``assignments``, may refer to
        them, and are the only ones that refer to ``qdd``); None otherwise. The inverse dynamics
        M qdd + bias is :meth:`inverse_dynamics`.
    t : the Symbol of time (:data:`TIME`); only the force elements' expressions (``F``, ``forces``,
        ``B`` never) may hold it, so M, h, G, K, D and B do not depend on time.
    assignments : intermediate definitions ``(symbol, expression)`` in order of
        evaluation; the matrices above may refer to these symbols (the
        recursive method emits them; empty for the others). ``expanded()``
        substitutes them.
    """

    model: ValidModel
    method: str
    q: list[sp.Symbol]
    qd: list[sp.Symbol]
    qdd: list[sp.Symbol]
    u: list[sp.Symbol]
    params: list[sp.Symbol]
    param_values: dict[sp.Symbol, float]
    M: sp.Matrix
    h: sp.Matrix
    G: sp.Matrix
    K: sp.Matrix
    D: sp.Matrix
    B: sp.Matrix
    T: sp.Expr
    V: sp.Expr
    points: dict[str, sp.Matrix]
    assignments: list[tuple[sp.Symbol, sp.Expr]] = field(default_factory=list)
    coordinates: list[Coordinate] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    couplings: dict[sp.Symbol, sp.Expr] = field(default_factory=dict)
    constraints: list[ConstraintEquations] = field(default_factory=list)
    articulated: Optional[ForwardDynamics] = None
    articulated_reason: str = NOT_DERIVED
    F: Optional[sp.Matrix] = None
    forces: list[ForceEquations] = field(default_factory=list)
    inverse: Optional[sp.Matrix] = None
    inverse_assignments: list[tuple[sp.Symbol, sp.Expr]] = field(default_factory=list)
    #: spatial models: name -> ((3, 1) position, (3, 3) rotation) of every named frame (link frames
    #: ``<link>.joint``, segment ends, named masses and bodies, markers) in the ground frame; empty for
    #: planar models (whose ``points`` are (2, 1))
    frames: dict[str, tuple[sp.Matrix, sp.Matrix]] = field(default_factory=dict)
    #: spatial models: name -> (6, n) Jacobian of each frame of ``frames`` (rows 0-2: velocity of its
    #: origin, rows 3-5: its angular velocity, both in the ground frame; times qd)
    frame_jacobians: dict[str, sp.Matrix] = field(default_factory=dict)
    #: spatial models by the recursive method: name -> (6, 1) J̇ qd of each frame of ``frames`` (its origin's
    #: acceleration and its angular acceleration at qdd = 0, ground frame, from the recursion's own
    #: velocity-product accelerations); empty otherwise (the constraint rows then differentiate J qd)
    frame_biases: dict[str, sp.Matrix] = field(default_factory=dict)
    #: spatial models by the recursive method: name -> (6, 1) J qd of each frame of ``frames`` (its origin's
    #: velocity and its angular velocity, ground frame, from the recursion's own velocities); empty otherwise
    frame_velocities: dict[str, sp.Matrix] = field(default_factory=dict)
    #: dq/dt (nq, 1) in q and qd where the velocities are not the coordinates' rates (a free joint: the
    #: position's rate R v, the quaternion's 1/2 q (0, w); a spherical or planar joint); None where dq/dt = qd
    configuration_rate: Optional[sp.Matrix] = None
    #: per free (code 0), spherical (1) or planar (2) joint: (code, index of its first coordinate in q, of its
    #: first velocity in qd)
    lie_joints: tuple[tuple[int, int, int], ...] = ()
    t: sp.Symbol = TIME
    #: ``derive(spatial_model, method="matrix")``: why the equations are not in closed form (the size guard of
    #: :mod:`rodgen.symbolic.closed_form`; ``method`` is then ``"recursive"``); empty otherwise
    closed_form_reason: str = ""
    #: The identification regressor (:class:`rodgen.symbolic.regressor.Regressor`) when one was attached
    #: (:func:`rodgen.symbolic.regressor.attach_regressor`, ``CodegenOptions(regressor=True)``); else None.
    regressor: Optional[Any] = None
    _jacobian: Optional[tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]] = field(
        default=None, init=False, repr=False, compare=False)
    _tangent: Optional[TangentChain] = field(default=None, init=False, repr=False, compare=False)
    _derivatives: Optional[tuple[Optional[InverseDynamicsDerivatives]]] = field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.F is None:
            self.F = sp.zeros(len(self.qd), 1)

    @property
    def n(self) -> int:
        """Number of generalized coordinates (nq)."""
        return len(self.q)

    @property
    def nv(self) -> int:
        """Number of velocities (the size of qd, qdd, M, h, ...); nq except with a free joint (nq = nv + 1)."""
        return len(self.qd)

    @property
    def bias(self) -> sp.Matrix:
        """h + G + K + D - F: everything but the inertia and input terms."""
        assert self.F is not None
        return self.h + self.G + self.K + self.D - self.F

    def inverse_dynamics(self) -> tuple[sp.Matrix, list[tuple[sp.Symbol, sp.Expr]]]:
        """(M qdd + bias, the assignments it may refer to beyond ``assignments``): the Newton-Euler
        ``inverse`` plus the rest of the bias where the method gives it, else M qdd + bias."""
        if self.inverse is None:
            qdd = sp.Matrix(self.qdd)
            return self.M * qdd + self.bias, []
        return self.inverse + (self.bias - self.h - self.G), self.inverse_assignments

    def expanded(self) -> "Equations":
        """A copy with the intermediate ``assignments`` substituted (may be large)."""
        if not self.assignments:
            return self
        subs: dict[sp.Symbol, sp.Expr] = {}
        for sym, ex in self.assignments:
            subs[sym] = ex.xreplace(subs)

        def x(m: sp.Matrix) -> sp.Matrix:
            return m.xreplace(subs)

        out = Equations(self.model, self.method, self.q, self.qd, self.qdd, self.u, self.params,
                         self.param_values, x(self.M), x(self.h), x(self.G), x(self.K), x(self.D), x(self.B),
                         self.T.xreplace(subs), self.V.xreplace(subs),
                         {k: x(v) for k, v in self.points.items()}, [], self.coordinates, self.inputs,
                         {k: v.xreplace(subs) for k, v in self.couplings.items()},
                         [ConstraintEquations(c.name, c.kind, x(c.position), x(c.jacobian), x(c.bias),
                                              None if c.friction is None else c.friction.xreplace(subs),
                                              None if c.kinetic is None else c.kinetic.xreplace(subs), c.sole,
                                              None if c.velocity is None else x(c.velocity))
                          for c in self.constraints],
                         self.articulated, self.articulated_reason, x(self.F),  # type: ignore[arg-type]
                         [ForceEquations(f.name, f.type, f.point, x(f.position), x(f.jacobian), x(f.force),
                                         x(f.generalized), f.input) for f in self.forces])
        out.frames = {nm: (x(pos), x(rot)) for nm, (pos, rot) in self.frames.items()}
        out.frame_jacobians = {nm: x(jac) for nm, jac in self.frame_jacobians.items()}
        out.frame_biases = {nm: x(b) for nm, b in self.frame_biases.items()}
        out.frame_velocities = {nm: x(b) for nm, b in self.frame_velocities.items()}
        out.closed_form_reason = self.closed_form_reason
        return out

    def inverse_dynamics_jacobian(self) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]:
        """d(M a + bias - B u)/d[q, qd] with a (the ``qdd`` symbols) and u held fixed, as straight-line code.

        Returns ``(assignments, rows)``: intermediate ``(symbol, expression)`` pairs in evaluation
        order (the equations' own assignments and their derivatives) and the n x 2n derivative in
        them (see :mod:`rodgen.symbolic.derivative`). At ``a = qdd`` the Jacobian of the
        accelerations is ``-M^-1`` times it. Derived on the first call and kept; its size grows
        like nq times the inverse dynamics (nq^2 for a chain), so the code stage prints
        :meth:`inverse_dynamics_tangent` instead; this full form is the reference it is tested against.
        """
        if self._jacobian is None:
            from .derivative import forward_derivatives
            n = len(self.qd)
            bu = self.B * sp.Matrix(self.u) if self.u else sp.zeros(n, 1)
            # the O(n) Newton-Euler form where the method gives one: its derivatives are O(n) per variable
            inverse, extra = self.inverse_dynamics()
            self._jacobian = forward_derivatives(self.assignments + extra, list(inverse - bu),
                                                 list(self.q) + list(self.qd))
        return self._jacobian

    def inverse_dynamics_tangent(self) -> "TangentChain":
        """The tangent of g = M a + bias - B u along a direction (dq, dqd), a and u held fixed.

        A :class:`~rodgen.symbolic.derivative.TangentChain` over the inverse dynamics (the O(n)
        Newton-Euler form where the method gives one, with the springs, dampers, force elements
        and input map): ``primal`` evaluates the local partials once at (q, qd, a, u),
        ``tangent``/``outputs`` give dg for the seeds ``seeds`` = [dq, dqd] (2n symbols),
        linear in them. Both grow like the inverse dynamics (O(n) for a chain), independently of
        the number of directions: the code stage prints them as two routines and the C of
        ``rhs_jacobian`` runs the tangent once per unit direction, d qdd/dx_k = -M^-1 dg(e_k)
        at a = qdd. Derived on the first call and kept.
        """
        if self._tangent is None:
            from .derivative import tangent_chain
            n = len(self.qd)
            bu = self.B * sp.Matrix(self.u) if self.u else sp.zeros(n, 1)
            inverse, extra = self.inverse_dynamics()
            self._tangent = tangent_chain(self.assignments + extra, list(inverse - bu),
                                          list(self.q) + list(self.qd))
        return self._tangent

    def constraint_partials(self) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Symbol],
                                           list[list[sp.Expr]], list[list[sp.Expr]]]:
        """(assignments, λ symbols, dg, dk): the partials of the constrained dynamics' KKT system
        g = M a + bias - B u - Jᵀ λ and k = J a + J̇ qd by [q, qd] at fixed a (the ``qdd`` symbols),
        u and λ (see :func:`rodgen.symbolic.constrained_derivative.constraint_partials`). Built on
        each call; needs ``constraints``, and for nq != nv the derivative of the recursive Newton-Euler
        algorithm (the columns by q then on the tangent space)."""
        from .constrained_derivative import constraint_partials
        return constraint_partials(self)

    def parameter_partials(self) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]:
        """(assignments, dg): dg[i][k] = ∂g_i/∂p_k of g = M a + bias - B u by the parameters (in the
        order of ``params``), at fixed q, qd, a (the ``qdd`` symbols) and u (see
        :func:`rodgen.symbolic.parameter_derivative.parameter_partials`). Built on each call."""
        from .parameter_derivative import parameter_partials
        return parameter_partials(self)

    def inverse_dynamics_derivatives(self) -> Optional["InverseDynamicsDerivatives"]:
        """d g/d q and d g/d qd of g = M a + bias - B u (a, u fixed) by differentiating the recursive
        Newton-Euler algorithm over the expanded tree, O(n * depth) straight-line code
        (:mod:`rodgen.symbolic.rnea_derivatives`), for spatial and planar models without coupled coordinates
        (a planar model's tree lowered onto the spatial one; not for ``method="planar"``); None for the others
        (the code stage then prints :meth:`inverse_dynamics_tangent`). Derived on the first call and kept."""
        if self._derivatives is None:
            from .rnea_derivatives import inverse_dynamics_derivatives
            self._derivatives = (inverse_dynamics_derivatives(self),)
        return self._derivatives[0]

    def constrained_terms(self) -> ConstrainedTerms:
        """What the constrained dynamics needs at one state, as straight-line code: a sparse L D L^T
        factorisation of M, the free accelerations and, for every constraint row, J, c, J qd,
        J qdd0 + Jdot qd, M^-1 J^T and J M^-1 J^T (see
        :func:`rodgen.symbolic.constraints.constrained_terms`). Built on each call; needs
        ``constraints``."""
        from .constraints import constrained_terms
        return constrained_terms(self)

    def constrained_solve(self) -> ConstrainedSolve:
        """The constrained dynamics with every constraint row held, qdd and lambda in straight-line code
        (range space on the same factorisation; see :func:`rodgen.symbolic.constraints.constrained_solve`).
        Built on each call; needs ``constraints``."""
        from .constraints import constrained_solve
        return constrained_solve(self)

    def constrained_solve_modes(self) -> tuple[ConstrainedSolve, list[tuple[tuple[int, ...], ConstrainedSolve]]]:
        """The masked :meth:`constrained_solve` and its specialisations per contact mode (held blocks,
        solve; see :func:`rodgen.symbolic.constraints.solve_modes`). Built on each call."""
        from .constraints import constrained_solve, solve_modes
        cs = constrained_solve(self)
        return cs, solve_modes(self, cs)

    def residual(self) -> sp.Matrix:
        """M qdd + h + G + K + D - F - B u (zero along solutions)."""
        return self.M * sp.Matrix(self.qdd) + self.bias - self.B * sp.Matrix(self.u)

    def latex(self, *, blocks: bool = False, simplify: Optional[bool] = None) -> str:
        """The equations in LaTeX; see :func:`rodgen.symbolic.latex.equations_latex`."""
        from .latex import equations_latex
        return equations_latex(self, blocks=blocks, simplify=simplify)
