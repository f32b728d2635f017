"""The contract between the C of a model, rodgen's C runtime and Python, written once.

This table is the single source of:

* the routines of a model (``<prefix>_<name>``, reached through the fields of
  ``rodgen_model`` in ``csrc/rodgen_model.h``): their arguments with widths,
  which are outputs, whether they return a status;
* the status codes of the C (``RODGEN_<NAME>``), with their messages;
* the integration methods, the kinds of input law and the shared structs
  (``rodgen_input``, ``rodgen_sim_options``, ``rodgen_sim_state``) and the
  functions of the runtime;
* the table of a model (``rodgen_model``, ``rodgen_constraint``, the kinds of
  block and joint) and the hybrid simulation's codes (phases, event kinds, slip
  modes) with their names in Python.

From it the code stage renders the headers ``rodgen_runtime.h`` and
``rodgen_model.h`` (and the ``rodgen_model`` table of every generated model),
the Cython declarations of the runtime wrapper, its tables of named codes, batch
kernels and one-state methods; the runtime reads :class:`StatusCode` for its
messages. Nothing here imports SymPy or any stage: it is plain data.

Adding a routine of a model: append a :class:`Routine` to :data:`ROUTINES`
(its field of ``rodgen_model`` follows; write the headers of ``csrc/`` again
with ``python -m rodgen.codegen.runtime``). The generated table points the field at
``<prefix>_<name>`` when the model's spec has a routine of that name, else
NULL; the wrapper gains a batch kernel ``Model.<name>`` without further code.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

# ---------------------------------------------------------------------------
# routines of a model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """One argument of a routine: an array of ``width`` doubles, or the scalar time ``t`` (width "")."""

    name: str
    width: str            # an expression in nq, nu, np, npoints, nconstraints, nrows; "" for a scalar double
    doc: str
    output: bool = False
    shape: str = ""       # shape of one result in Python, comma-separated (default: the width, 1-D)

    def width_expr(self, owner: str) -> str:
        """The width as an expression of the sizes held by ``owner`` (``"self."`` gives ``self.nq*self.nq``)."""
        return _expr(self.width, owner)

    def shape_expr(self, owner: str) -> str:
        """A Python tuple expression of the shape of one result."""
        parts = (self.shape or self.width).split(",")
        return "(" + ", ".join(_expr(x.strip(), owner) for x in parts) + ",)"

    @property
    def scalar(self) -> bool:
        return self.width == ""

    @property
    def c_decl(self) -> str:
        if self.scalar:
            return f"double {self.name}"
        return f"double *{self.name}" if self.output else f"const double *{self.name}"


@dataclass(frozen=True)
class Routine:
    """A routine of a model, a field of ``rodgen_model`` (``<prefix>_<name>`` in the generated C).

    status : returns an ``int`` status (a :class:`StatusCode`), else ``void``.
    optional : the field may be NULL (a model may not generate it).
    single : the wrapper gives it a one-state fast path (``Model.one_<name>``).
    """

    name: str
    args: tuple[Arg, ...]
    doc: str
    status: bool = False
    optional: bool = False
    single: bool = False

    @property
    def inputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if not a.output)

    @property
    def outputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.output)

    @property
    def c_return(self) -> str:
        return "int" if self.status else "void"

    @property
    def c_params(self) -> str:
        return ", ".join(a.c_decl for a in self.args)


def _expr(width: str, owner: str) -> str:
    return "*".join(f.strip() if f.strip().isdigit() else owner + f.strip() for f in width.split("*"))


_t = Arg("t", "", "time (of the force elements' expressions; unused by a model without them)")
_q = Arg("q", "nq", "coordinates")
_qd = Arg("qd", "nv", "coordinate rates")
_qdd = Arg("qdd", "nv", "coordinate accelerations")
_u = Arg("u", "nu", "inputs")
_p = Arg("p", "np", "parameters")


def _out(name: str, width: str, doc: str, shape: str = "") -> Arg:
    return Arg(name, width, doc, output=True, shape=shape)


#: The routines of a model, in the order of the fields of ``rodgen_model``.
ROUTINES: tuple[Routine, ...] = (
    Routine("mass_matrix", (_q, _p, _out("M", "nv*nv", "mass matrix, row-major", "nv,nv")),
            "Mass matrix M(q), symmetric positive definite.", single=True),
    Routine("bias", (_t, _q, _qd, _p, _out("h", "nv", "bias forces")),
            "Bias forces h + G + K + D, as in M(q) qdd + bias = B(q) u.", optional=True, single=True),
    Routine("gravity", (_q, _p, _out("g", "nv", "gravity forces")), "Gravity forces G(q) (part of the bias).",
            optional=True),
    Routine("input_map", (_q, _p, _out("B", "nv*nu", "input map, row-major", "nv,nu")),
            "Input map B(q): generalized forces = B u."),
    Routine("forward_dynamics", (_t, _q, _qd, _u, _p, _out("qdd", "nv", "coordinate accelerations")),
            "Forward dynamics qdd = M^-1 (B u - bias).", status=True, single=True),
    Routine("inverse_dynamics", (_t, _q, _qd, _qdd, _p, _out("Q", "nv", "generalized forces")),
            "Inverse dynamics Q = M(q) qdd + bias(q, qd).", optional=True, single=True),
    Routine("rhs", (_t, Arg("y", "ny", "state [q, qd]"), _u,
                    _p, _out("dy", "ny", "state derivative [dq/dt, qdd]")),
            "Right-hand side of y' = f(t, y), y = [q, qd] (nq + nv numbers; dq/dt = qd where nq = nv, else "
            "the configuration derivative of each joint: a free joint's quaternion turns by 1/2 q (0, w)).",
            status=True, single=True),
    Routine("energy", (_q, _qd, _p, _out("e", "2", "kinetic, potential energy")),
            "Kinetic and potential energy: e[0] = T, e[1] = V.", optional=True),
    Routine("points", (_q, _p, _out("r", "2*npoints", "point positions x, y")),
            "Positions of the marker points: r[2*i] = x, r[2*i+1] = y.", optional=True),
    Routine("rhs_jacobian", (_t, _q, _qd, _u, _p,
                             _out("J", "4*nv*nv", "d[qd, qdd]/d[q, qd], row-major", "2*nv,2*nv")),
            "Exact Jacobian of the right-hand side at constant u (with free, spherical or planar joints: on the "
            "tangent space, d[v, qdd]/d[dq, v] with q moved by q + dq along the joints' exponential map).",
            status=True, optional=True, single=True),
    Routine("constraint_position", (_q, _p, _out("c", "nrows", "constraint rows")),
            "Positions of the constraint rows c(q).", optional=True),
    Routine("constraint_jacobian", (_q, _p, _out("J", "nrows*nv", "dc/dq, row-major", "nrows,nv")),
            "Jacobian of the constraint rows dc/dq (with free, spherical or planar joints: of the velocities, "
            "J qd = dc/dt).", optional=True),
    Routine("constraint_bias", (_q, _qd, _p, _out("b", "nrows", "Jdot qd")),
            "Velocity product of the constraint rows Jdot qd.", optional=True),
    Routine("constraint_friction", (_p, _out("mu", "nconstraints", "friction coefficients")),
            "Friction coefficient of each constraint block.", optional=True),
    Routine("constrained_terms", (_t, _q, _qd, _u, _p, _out("d", "nv", "pivots of P M P^T = L D L^T"),
                                  _out("qdd0", "nv", "M^-1 (B u - bias)"),
                                  _out("J", "nrows*nv", "dc/dq, row-major", "nrows,nv"),
                                  _out("c", "nrows", "constraint rows"), _out("v", "nrows", "J qd"),
                                  _out("a0", "nrows", "J qdd0 + Jdot qd"),
                                  _out("A", "nrows*nv", "row i: M^-1 J_i^T", "nrows,nv"),
                                  _out("S", "nrows*nrows", "J M^-1 J^T, row-major", "nrows,nrows")),
            "Everything the constrained dynamics needs at one state, with shared subexpressions: the pivots "
            "of a sparse L D L^T factorisation of M (valid when all are > 0), the free accelerations qdd0, and "
            "of every constraint row J, c, J qd, the free row acceleration J qdd0 + Jdot qd, M^-1 J^T and "
            "J M^-1 J^T.", optional=True),
    Routine("constrained_solve", (_t, _q, _qd, _u, _p,
                                  Arg("k", "4*nrows", "per row: held (1 or 0), 1 - held, 2 alpha, beta^2"),
                                  Arg("target", "nrows", "c_target of each row"),
                                  _out("d", "nv", "pivots of P M P^T = L D L^T"),
                                  _out("qdd", "nv", "coordinate accelerations"),
                                  _out("lam", "nrows", "constraint forces lambda"),
                                  _out("s", "2*nrows", "pivots of J M^-1 J^T = L D L^T (rows held), then its "
                                       "diagonal (rows held, 0 otherwise)"),
                                  _out("f", "ny*ny", "the factors constrained_response reads (NULL: not stored; "
                                       "unused without constrained_response)")),
            "The constrained dynamics for the rows held (k[4i] = 1, k[4i+1] = 0; not held: 0, 1, lambda_i = 0), "
            "range space on the factorisation of constrained_terms with one backward substitution: "
            "J qdd = -Jdot qd - k[4i+2] J qd - k[4i+3] (c - target) row by row; qdd and lambda are valid when "
            "every d[i] > 0 and the pivots s[i] of the rows held pass the caller's test (s[nrows ..]: the "
            "diagonal of J M^-1 J^T in the rows held, 0 in the others).",
            optional=True),
    Routine("element_forces", (_t, _q, _qd, _u, _p,
                               _out("f", "fdim*nforces", "force of each element x, y (, z)", "nforces,fdim")),
            "Force of each force element on its point, ground frame: f[d*i + c], d = RODGEN_FDIM(m) (2 in a "
            "planar model: x, y; 3 in a spatial one: x, y, z).", optional=True),
    Routine("kinetic_friction", (_p, _out("mu_k", "nconstraints", "kinetic friction limits")),
            "Kinetic friction limit of each dry-friction block (RODGEN_FRICTION; 0 for the other blocks); its "
            "static limit is the block's constraint_friction.", optional=True),
    Routine("constraint_partials", (_t, _q, _qd, _qdd, _u, Arg("lam", "nrows", "constraint forces lambda"), _p,
                                    _out("dg", "2*nv*nv", "d g/d[q, qd], row-major", "nv,2*nv"),
                                    _out("dk", "2*nrows*nv", "d k/d[q, qd], row-major", "nrows,2*nv")),
            "Partials of the constrained dynamics' KKT system g = M qdd + bias - B u - J^T lam and "
            "k = J qdd + Jdot qd by [q, qd] at fixed qdd, u and lam (every constraint row; by q on the tangent space "
            "where nq != nv; generated with the RHS Jacobian), from which rodgen_constrained_derivatives and "
            "rodgen_impact_derivatives solve the derivatives of qdd, lambda and the impact map.", optional=True),
    Routine("parameter_partials", (_t, _q, _qd, _qdd, _u, _p,
                                   _out("dg", "nv*np", "d g/dp, row-major", "nv,np")),
            "Partial derivative of g = M qdd + bias - B u by the parameters p at fixed q, qd, qdd and u; at the "
            "forward dynamics' qdd, d qdd/dp = -M^-1 dg (generated on request: "
            "CodegenOptions(parameter_derivatives=True)).", optional=True),
    Routine("constrained_response", (_p, Arg("k", "4*nrows", "the gains of the constrained_solve call"),
                                     Arg("du", "nu", "input change"),
                                     Arg("f", "ny*ny", "the factors that constrained_solve call stored"),
                                     _out("qdd", "nv", "change of the coordinate accelerations"),
                                     _out("lam", "nrows", "change of the constraint forces")),
            "How the constrained_solve call that stored f changes with its inputs u -> u + du (the same state, "
            "rows held, gains and targets: qdd and lambda are affine in u), from that call's factorisations; "
            "generated where the input map B holds parameters only.", optional=True),
)


#: The routines a build may leave out (``CodegenOptions(routines=...)``): none of the runtime's other routines calls
#: them (``bias`` is kept in a model with constraint blocks, whose constrained dynamics calls it), or only where the
#: model has them (``constrained_response``: the hybrid simulation's held inputs evaluate the dynamics again
#: without it).
ELECTIVE_ROUTINES = ("bias", "gravity", "inverse_dynamics", "energy", "points", "element_forces",
                     "constrained_response")


def routine(name: str) -> Routine:
    """The entry of :data:`ROUTINES` called ``name``."""
    for r in ROUTINES:
        if r.name == name:
            return r
    raise KeyError(name)


#: Sizes a width may name; the fields of ``rodgen_model`` holding them (``nv``: see :data:`NV`).
SIZES = ("nq", "nv", "ny", "nu", "np", "npoints", "nconstraints", "nrows", "nforces", "fdim")


@dataclass(frozen=True)
class DerivedSize:
    """A size that is not a field of ``rodgen_model`` but a C macro of the table, ``RODGEN_<NAME>(m)``."""

    name: str
    expression: str      # C, of ``m`` (a ``const rodgen_model *``)
    doc: str


#: The number of velocities ``nv``: the length of qd, qdd and of the generalized forces (M is nv x nv), next
#: to the number of coordinates ``nq`` (the length of q). They differ for joints whose configuration has more
#: numbers than degrees of freedom: a free joint (floating base) has 7 coordinates [x y z qx qy qz qw] and 6
#: velocities. The table holds both (``rodgen_model.nv``); the state y = [q, qd] holds ``ny`` = nq + nv
#: numbers. Code that means a velocity size writes nv (C: ``RODGEN_NV(m)``, Python: ``CompiledModel.nv``).
NV = DerivedSize("nv", "((m)->nv)",
                 "number of velocities (qd, qdd, generalized forces); nq except with free, spherical joints")
#: The size of the state y = [q, qd]: nq + nv.
NY = DerivedSize("ny", "((m)->nq + (m)->nv)", "size of the state y = [q, qd], nq + nv")

#: The number of components of a force element's force (the model's dimension): 2 in a planar model, 3 in a
#: spatial one. The table tells them apart by its 2D points: a planar model's force elements act at its points
#: (npoints > 0), a spatial model has none (its points are 3D frames, ``<prefix>_frames``).
FDIM = DerivedSize("fdim", "((m)->npoints > 0 ? 2 : 3)",
                   "components of a force element's force: 2 (planar model), 3 (spatial model)")


def width_value(width: str, sizes: dict[str, int]) -> int:
    """The number of doubles of a width (``"2*nq"``) for a model's sizes."""
    out = 1
    for factor in width.split("*"):
        factor = factor.strip()
        out *= int(factor) if factor.isdigit() else int(sizes[factor])
    return out


# ---------------------------------------------------------------------------
# status codes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusEntry:
    """A status code: ``RODGEN_<name>`` in C, ``StatusCode.<name>`` in Python.

    outcome : the :class:`rodgen.runtime.result.Status` value a simulation that stops with it reports.
    """

    name: str
    value: int
    message: str
    outcome: str = "failed"


class StatusCode(enum.IntEnum):
    """The status codes of the C, ``RODGEN_<NAME>`` (model routines and runtime), in order of value.

    Each member carries ``message`` (what it means, for a user) and ``outcome`` (the value of
    :class:`rodgen.runtime.result.Status` a simulation reports when it stops with it).
    """

    message: str
    outcome: str

    def __new__(cls, value: int, message: str, outcome: str = "failed") -> "StatusCode":
        obj = int.__new__(cls, value)
        obj._value_ = value
        obj.message = message
        obj.outcome = outcome
        return obj

    OK = 0, "success", "success"
    ERR_NONFINITE_INPUT = 1, "the state, the inputs or the parameters hold inf or NaN", "nonfinite"
    ERR_NOT_POSITIVE_DEFINITE = 2, "the mass matrix is not positive definite", "singular_mass"
    ERR_NONFINITE_RESULT = 3, "the accelerations are not finite", "nonfinite"
    ERR_NONFINITE_STATE = 4, "the state became inf or NaN", "nonfinite"
    ERR_STEP_UNDERFLOW = 5, "the step size fell below its minimum", "step_underflow"
    ERR_MAX_STEPS = 6, "the number of steps reached max_steps", "max_steps"
    ERR_INPUT_NONFINITE = 7, "the inputs are inf or NaN", "nonfinite_input"
    ERR_INPUT_FAILED = 8, "the input law failed (callback error, B^T B singular)"
    ERR_OPTIONS = 9, "invalid options"
    SIM_FULL = 10, "not an error: the output arrays are full, call again"
    ERR_SINGULAR_CONSTRAINTS = 11, ("the active constraint set is singular (dependent constraint rows that no "
                                    "motion satisfies together, or a singular system of sliding contacts)")
    ERR_EVENT_NOT_LOCATED = 12, "an event could not be located to tolerance"
    ERR_FRICTION_CONE = 13, "a contact force left its friction cone"
    ERR_INITIAL_STATE = 14, ("the initial state violates a constraint (a contact point below the ground or a loop "
                             "not closed)")
    ERR_TOO_MANY_EVENTS = 15, "too many events in one step or run"
    ERR_TIPPED = 16, "a flat foot tipped: its centre of pressure left its sole"

    @classmethod
    def find(cls, code: int) -> "StatusCode | None":
        """The member of value ``code``, or None for a code unknown to this table."""
        member = cls._value2member_map_.get(int(code))
        return member if isinstance(member, StatusCode) else None

    @classmethod
    def describe(cls, code: int) -> str:
        """The message of a status code, also for a code unknown to this table."""
        member = cls.find(code)
        return member.message if member is not None else f"status {int(code)}"


#: The status codes as plain entries (what the templates render), from :class:`StatusCode`.
STATUSES: tuple[StatusEntry, ...] = tuple(StatusEntry(c.name, int(c), c.message, c.outcome) for c in StatusCode)


# ---------------------------------------------------------------------------
# constants, structs and functions of the runtime
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Constant:
    """A named integer constant ``RODGEN_<name>``; ``label``: its name in Python where Python names the code (an
    event's kind ``"touchdown"``, a block's kind ``"contact"``)."""

    name: str
    value: int
    doc: str
    label: str = ""


#: Integration methods (``rodgen_sim_options.method``).
METHODS: tuple[Constant, ...] = (
    Constant("RK4", 0, "classical Runge-Kutta, fixed step dt (the last step ends at t_end)"),
    Constant("DOPRI5", 1, "Dormand-Prince 5(4), local extrapolation, FSAL, step-size control"),
)

#: Kinds of input law (``rodgen_input.kind``).
INPUT_KINDS: tuple[Constant, ...] = (
    Constant("INPUT_CONSTANT", 0, "u (NULL: zero)"),
    Constant("INPUT_TABLE", 1, "values [n*nu] at times [n], linear interpolation"),
    Constant("INPUT_PD", 2, "times, values [n*(nq+2*nv)], kp, kd [nu], u: feedforward or NULL"),
    Constant("INPUT_COMPUTED_TORQUE", 3, "times, values [n*(nq+2*nv)], kp, kd [nv]"),
    Constant("INPUT_CALLBACK", 4, "fn(context, t, y, u) fills u[nu], returns 0 (else: failed)"),
)


#: Kinds of constraint block (``rodgen_constraint.kind``, ``rodgen_model.h``); the label is the block's kind in
#: Python (``ConstraintBlock.kind``, ``CompiledModel.constraints``). The rows of each block, as the generated
#: ``<prefix>_constraint_position`` returns them, are in each doc.
BLOCK_KINDS: tuple[Constant, ...] = (
    Constant("CONTACT", 0, "d rows (2 in a planar model, 3 in a spatial one): the tangential rows [0 .. d-2], the "
             "point's position along the ground (tangent t; in space t1, t2), then [d-1] its height above the ground "
             "along the normal n (the gap; > 0 above); a flat foot (6 rows, spatial) has a point's 3 rows, then the "
             "frame's orientation error against the ground's axes. Unilateral: when active, all rows are held (the "
             "point sticks at its touchdown position); the normal force must stay >= 0 and |tangential force| <= mu "
             "* normal force (mu from constraint_friction). Sliding (rodgen_contact.h) handles 2- and 3-row "
             "contacts, the hybrid simulation's events 2-, 3- and 6-row ones (a flat foot sticks or is free; its "
             "centre of pressure stays in its sole)", "contact"),
    Constant("LOOP", 1, "2 rows (plane): position of marker b minus position of marker a (x, y); 3 or 6 rows "
             "(space): frame b's origin minus frame a's (x, y, z), then the orientation error. Bilateral, always "
             "active: the loop is closed when all rows are zero", "loop"),
    Constant("LIMIT", 2, "1 row: distance of a coordinate from its limit, >= 0 inside the allowed range (q - lower, "
             "or upper - q). Unilateral, active only while at the limit", "limit"),
    Constant("FRICTION", 3, "1 row: a coordinate with dry friction and stiction. While it sticks the row is held "
             "(its force, the friction force or torque, must stay within the static limit, the block's "
             "constraint_friction); while it slips the row is free and the force is the kinetic limit "
             "(kinetic_friction) against the motion", "friction"),
)

#: Joints with a configuration of their own (``rodgen_model.lie_joints``); the label is the joint's kind in a
#: spatial model (``SpatialJoint.joint``).
JOINT_KINDS: tuple[Constant, ...] = (
    Constant("JOINT_FREE", 0, "q [x y z qx qy qz qw] (position in the parent frame, unit quaternion), qd [vx vy vz "
             "wx wy wz] (the link's linear and angular velocity in its own frame)", "free"),
    Constant("JOINT_SPHERICAL", 1, "q [qx qy qz qw], qd [wx wy wz] (angular velocity in the link's frame)",
             "spherical"),
    Constant("JOINT_PLANAR", 2, "q [x y theta] in the joint frame's xy plane, qd [vx vy wz] (in the link's frame)",
             "planar"),
)

#: The phase of a constraint block in an active mask (``rodgen_contact.h``; 0: inactive); the label is its name in
#: ``simulate(contacts={name: label})`` and ``CompiledModel.active_mask``.
PHASES: tuple[Constant, ...] = (
    Constant("STICK", 1, "active: a contact sticks (every row held), a dry-friction block sticks", "stick"),
    Constant("SLIDE_PLUS", 2, "a 2-row contact slides towards -t, its tangential force +mu normal; a dry-friction "
             "block slips towards -, its kinetic force +", "slide_plus"),
    Constant("SLIDE_MINUS", 3, "a 2-row contact slides towards +t, its tangential force -mu normal; a dry-friction "
             "block slips towards +, its kinetic force -", "slide_minus"),
    Constant("SLIDE", 4, "a 3-row contact slides in the ground plane, its tangential force on the cone's edge "
             "against its motion", "slide"),
)

#: Kinds of event of the hybrid simulation (``rodgen_event.kind``); the label is the event's ``"kind"`` in
#: ``simulate(...).events``.
EVENT_KINDS: tuple[Constant, ...] = (
    Constant("EVENT_TOUCHDOWN", 0, "an armed contact reached the ground: plastic impact, now active", "touchdown"),
    Constant("EVENT_LIFTOFF", 1, "an active contact released: normal force or impulse would pull", "liftoff"),
    Constant("EVENT_SLIP", 2, "|tangential| > mu * normal (force, or impulse at an impact)", "slip"),
    Constant("EVENT_LIMIT", 3, "a limit reached: plastic impact, now active", "limit"),
    Constant("EVENT_LIMIT_RELEASE", 4, "an active limit released: its force or impulse would pull", "limit_release"),
    Constant("EVENT_STICK", 5, "a sliding contact stopped (its tangential velocity turned): sticks", "stick"),
    Constant("EVENT_TIP", 6, "a flat foot's centre of pressure left its sole: the run stops", "tip"),
)

#: What a slip (a contact force leaving its friction cone) does (``rodgen_hybrid_options.on_slip``); the label is
#: ``simulate(on_slip=...)``.
SLIP_MODES: tuple[Constant, ...] = (
    Constant("SLIP_STOP", 0, "log the event, stop with RODGEN_ERR_FRICTION_CONE (default)", "stop"),
    Constant("SLIP_CONTINUE", 1, "log the event and keep the contact sticking", "continue"),
    Constant("SLIP_SLIDE", 2, "log the event and let it slide with Coulomb friction", "slide"),
)


def constant(name: str) -> int:
    """The value of a constant by name (``"RK4"``, ``"INPUT_PD"``, ``"EVENT_TIP"``, ``"CONTACT"``)."""
    for c in METHODS + INPUT_KINDS + BLOCK_KINDS + JOINT_KINDS + PHASES + EVENT_KINDS + SLIP_MODES:
        if c.name == name:
            return c.value
    raise KeyError(name)


def labels(constants: tuple[Constant, ...]) -> dict[int, str]:
    """The Python names of a table of constants by value (``labels(EVENT_KINDS)[6] == "tip"``)."""
    return {c.value: c.label for c in constants}


@dataclass(frozen=True)
class Field:
    """A field of a shared struct: C type, name, comment."""

    ctype: str
    name: str
    doc: str


@dataclass(frozen=True)
class Struct:
    name: str
    doc: str
    fields: tuple[Field, ...]


#: The callback of an input law: fills u [nu] at (t, y); returns 0, anything else is a failure.
INPUT_FN = ("rodgen_input_fn", "int", "void *context, double t, const double *y, double *u")

#: One constraint block of a model's table (``rodgen_model.constraints``).
CONSTRAINT: Struct = Struct("rodgen_constraint", "One constraint block of a model's table.", (
    Field("const char *", "name", "the contact's, loop's, limit's or friction's name in the model"),
    Field("int", "kind", "RODGEN_CONTACT, RODGEN_LOOP, RODGEN_LIMIT or RODGEN_FRICTION"),
    Field("int", "row", "its first row in the constraint arrays"),
    Field("int", "nrows", "CONTACT 2, 3 or 6; LOOP 2, 3 or 6; LIMIT 1; FRICTION 1"),
    Field("double", "sole[4]", "a flat foot's sole (6-row CONTACT): x_min, x_max, y_min, y_max of the rectangle "
          "in the frame's tangential axes its centre of pressure must stay in; all 0: none"),
))

#: The fields of the table ``rodgen_model`` before its routines (the function pointers of :data:`ROUTINES`, in
#: their order): sizes, the block table, defaults, the joints of a configuration of their own.
MODEL_HEAD: tuple[Field, ...] = (
    Field("const char *", "name", "the model's name"),
    Field("int", "nq", "coordinates, the length of q"),
    Field("int", "nv", "velocities (qd, qdd, generalized forces; M is nv x nv): nq but with free, spherical or "
          "planar joints (0 in a table written before the field: RODGEN_NV(m) reads it)"),
    Field("int", "nu", "inputs"),
    Field("int", "np", "parameters"),
    Field("int", "npoints", "marker points of a planar model (the points routine)"),
    Field("int", "nconstraints", "constraint blocks"),
    Field("int", "nrows", "constraint rows of all blocks"),
    Field("int", "nforces", "force elements (element_forces fills RODGEN_FDIM(m)*nforces)"),
    Field("const rodgen_constraint *", "constraints", "[nconstraints], NULL when there are none"),
    Field("const double *", "default_p", "[np] default parameter values"),
    Field("const double *", "initial_q", "[nq] initial coordinates"),
    Field("int", "nlie", "joints whose velocities are not their coordinates' rates"),
    Field("const int *", "lie_joints", "[3*nlie] per such joint: RODGEN_JOINT_FREE, _SPHERICAL or _PLANAR, the "
          "index of its first coordinate in q and of its first velocity in qd; NULL if none"),
)

#: The fields of ``rodgen_model`` after its routines: names and provenance, for bindings and tools.
MODEL_TAIL: tuple[Field, ...] = (
    Field("const char *const *", "coordinate_names", "[nq]"),
    Field("const char *const *", "input_names", "[nu]"),
    Field("const char *const *", "parameter_names", "[np]"),
    Field("const char *const *", "point_names", "[npoints]"),
    Field("const char *const *", "force_names", "[nforces]"),
    Field("const char *", "prefix", "prefix of the model's C functions and files"),
    Field("const char *", "version", "version of rodgen that generated the model"),
    Field("const char *", "method", "derivation method"),
    Field("const char *", "forward", "forward dynamics: \"aba\" or \"cholesky\""),
    Field("const char *", "content_hash", "hash of the generated code"),
)

STRUCTS: tuple[Struct, ...] = (
    Struct("rodgen_input", "An input law, evaluated at every stage of the integrators (or once a step: hold).", (
        Field("int", "kind", "RODGEN_INPUT_..."),
        Field("const double *", "u", "CONSTANT: [nu] inputs; PD: [nu] feedforward; NULL for none"),
        Field("long", "n", "number of samples (TABLE, PD, COMPUTED_TORQUE), at least 1"),
        Field("const double *", "times", "[n] sample times, strictly increasing"),
        Field("const double *", "values", "TABLE: [n*nu]; PD, COMPUTED_TORQUE: [n*(nq+2*nv)] rows q_ref [nq], "
              "qd_ref, qdd_ref [nv] (the position error q_ref (-) q of rodgen_difference)"),
        Field("const double *", "kp", "PD: [nu]; COMPUTED_TORQUE: [nv]"),
        Field("const double *", "kd", "PD: [nu]; COMPUTED_TORQUE: [nv]"),
        Field("rodgen_input_fn", "fn", "CALLBACK"),
        Field("void *", "context", "CALLBACK: passed to fn"),
    )),
    Struct("rodgen_sim_options", "Options of rodgen_simulate.", (
        Field("int", "method", "RODGEN_RK4 or RODGEN_DOPRI5"),
        Field("double", "t_end", "end time"),
        Field("double", "dt", "RK4: the step; DOPRI5: the first step (0: chosen from the RHS)"),
        Field("double", "rtol", "DOPRI5: relative tolerance, per component atol + rtol |y|"),
        Field("double", "atol", "DOPRI5: absolute tolerance"),
        Field("double", "h_min", "DOPRI5: smallest step (0: 16 eps |t|)"),
        Field("double", "h_max", "DOPRI5: largest step (0: t_end - t0)"),
        Field("long", "max_steps", "most steps, accepted and rejected (0: no limit)"),
        Field("long", "store_every", "store every k-th accepted step (1: all)"),
        Field("int", "hold", "RK4 only: 1 samples the input law once at the start of each step and holds it "
                             "over the stages (zero-order hold); 0 evaluates it at every stage"),
    )),
    Struct("rodgen_sim_state", "The state of a simulation; y and f point into the caller's storage "
                               "(rodgen_sim_start).", (
        Field("double", "t0", "start time"),
        Field("double", "t", "time of the state y"),
        Field("double *", "y", "[nq+nv] state [q, qd]"),
        Field("double *", "f", "[nq+nv] its derivative (valid when have_f)"),
        Field("double", "h", "DOPRI5: next step size"),
        Field("long", "steps", "accepted steps"),
        Field("long", "rejected", "rejected steps (DOPRI5)"),
        Field("long", "evaluations", "calls of the model's rhs"),
        Field("int", "have_f", "f holds the derivative at y"),
        Field("int", "stored", "y has been written to the outputs"),
    )),
    Struct("rodgen_controller", "The context of a controller written in C (rodgen.CController): a "
                                "rodgen_input_fn of a CALLBACK input gets a pointer to it as its context.", (
        Field("const rodgen_model *", "model", "the simulated model's table (sizes, routines, constraint blocks)"),
        Field("const double *", "p", "[model->np] the model's parameters of the run"),
        Field("const double *", "params", "[nparams] the controller's parameters"),
        Field("long", "nparams", "number of params"),
        Field("double *", "state", "[nstate] the controller's memory, kept between calls (set at the start)"),
        Field("long", "nstate", "number of state entries"),
    )),
    Struct("rodgen_mixed", "A mixed problem: the prescribed coordinates and their motion as samples (the other "
                           "coordinates are free); q_p, qd_p, qdd_p are interpolated linearly in time and held "
                           "constant outside the sample times.", (
        Field("int", "npres", "number of prescribed coordinates, 1 to nq - 1"),
        Field("const int *", "pres", "[npres] their indices in q, distinct"),
        Field("long", "n", "number of samples, at least 1"),
        Field("const double *", "times", "[n] sample times, strictly increasing"),
        Field("const double *", "values", "[n*3*npres] rows q_p, qd_p, qdd_p"),
    )),
    Struct("rodgen_batch", "A batch of trajectories for rodgen_simulate_batch: trajectory i starts from "
                           "y0 + i*y0_stride with the parameters p + i*p_stride (a stride of 0 shares one row).", (
        Field("long", "n", "number of trajectories"),
        Field("double", "t0", "start time of every trajectory"),
        Field("const double *", "y0", "initial states, rows of [nq+nv]"),
        Field("long", "y0_stride", "nq+nv, or 0: one state for all"),
        Field("const double *", "p", "parameters, rows of [np]"),
        Field("long", "p_stride", "np, or 0: one parameter vector for all"),
        Field("const rodgen_input *", "input", "the input law of every trajectory"),
        Field("const double *", "u", "rows of input->u per trajectory (CONSTANT: [nu] inputs, PD: [nu] "
                                     "feedforward), or NULL: input->u for all"),
        Field("long", "u_stride", "nu (or 0)"),
        Field("void **", "contexts", "CALLBACK: [n] context of each trajectory, or NULL: input->context for all"),
        Field("long", "capacity", "rows stored per trajectory (final_only: unused)"),
        Field("int", "final_only", "store only the final state (one row per trajectory)"),
        Field("double *", "t_out", "[n*capacity] times (final_only: [n])"),
        Field("double *", "y_out", "[n*capacity*(nq+nv)] states (final_only: [n*(nq+nv)])"),
        Field("double *", "u_out", "[n*capacity*nu] inputs at the stored states (final_only: [n*nu])"),
        Field("long *", "rows", "[n] rows written per trajectory"),
        Field("int *", "status", "[n] status of each trajectory (RODGEN_OK at t_end)"),
        Field("long *", "steps", "[n] accepted steps, or NULL"),
        Field("long *", "evaluations", "[n] rhs evaluations, or NULL"),
    )),
)


@dataclass(frozen=True)
class Function:
    """A function of the runtime (``csrc/*.c``)."""

    ret: str
    name: str
    params: str
    doc: str


#: Functions of the model-independent runtime, declared in rodgen_runtime.h.
FUNCTIONS: tuple[Function, ...] = (
    Function("int", "rodgen_cholesky", "double *A, int n",
             "Cholesky factorisation A = L L^T in place (A n x n, row-major, symmetric; L in its lower "
             "triangle). Returns RODGEN_OK, or RODGEN_ERR_NOT_POSITIVE_DEFINITE when a pivot falls below "
             "RODGEN_PIVOT_RTOL times its diagonal entry."),
    Function("void", "rodgen_cholesky_solve", "const double *L, double *b, int n",
             "Solve L L^T x = b in place (b is overwritten by x), L from rodgen_cholesky."),
    Function("int", "rodgen_cholesky_rel", "double *A, int n, double tol",
             "Cholesky factorisation A = L L^T in place as rodgen_cholesky, but a pivot must exceed tol times "
             "the largest diagonal entry of A (the test of the constraint systems J M^-1 J^T, whose rows may "
             "be dependent). Returns RODGEN_OK, or RODGEN_ERR_NOT_POSITIVE_DEFINITE when a pivot is not above "
             "it or the largest diagonal entry is not positive and finite (n = 0 is RODGEN_OK)."),
    Function("void", "rodgen_cholesky_solve_block", "const double *L, int n, double *X, int w",
             "Solve L L^T X = B in place for the w columns of X (n x w, row-major; B on entry), L from "
             "rodgen_cholesky or rodgen_cholesky_rel: row by row, four contiguous columns at a time held in "
             "registers."),
    Function("void", "rodgen_sim_start",
             "rodgen_sim_state *s, const rodgen_model *m, double t0, const double *y0, double *storage",
             "Start a simulation at time t0 from the state y0 [nq+nv]; storage [RODGEN_SIM_STORAGE(nq)] "
             "doubles, owned by the caller, holds s->y and s->f for the life of the simulation. The "
             "quaternions of y0 are normalised (rodgen_normalize)."),
    Function("void", "rodgen_normalize", "const rodgen_model *m, double *q",
             "Divide the quaternion of each free and spherical joint of q [nq] by its norm (a quaternion of norm "
             "0 is left as it is). The integrators call it on the state after every accepted step."),
    Function("int", "rodgen_simulate",
             "const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp, const double *p, "
             "rodgen_sim_state *s, long capacity, double *t_out, double *y_out, double *u_out, long *n_out",
             "Integrate from s->t towards o->t_end, writing at most capacity rows: t_out [capacity], "
             "y_out [capacity*(nq+nv)], u_out [capacity*nu] (the inputs at the stored states). *n_out receives "
             "the number of rows written. Returns RODGEN_OK at t_end, RODGEN_SIM_FULL when the arrays are "
             "full (call again with fresh arrays), or an error code; on an error the state holds the last "
             "good step (written as the last row)."),
    Function("void", "rodgen_integrate", "const rodgen_model *m, const double *q, const double *v, double dt, "
             "double *out",
             "out [nq] = q (+) v dt: a free joint moved by the exponential map of SE(3), a spherical joint by that "
             "of SO(3), a planar joint by that of SE(2) (Pinocchio's integrate), every other coordinate by q + v dt; "
             "q [nq], v [nv] (rodgen_lie.c)."),
    Function("void", "rodgen_difference", "const rodgen_model *m, const double *q0, const double *q1, double *v",
             "v [nv]: the velocity that takes q0 to q1 in unit time, rodgen_integrate(q0, v, 1) = q1 (Pinocchio's "
             "difference; a planar joint's angle difference in (-pi, pi])."),
    Function("int", "rodgen_input_eval",
             "const rodgen_model *m, const rodgen_input *inp, double t, const double *y, const double *p, "
             "double *u",
             "The inputs u [nu] of an input law at time t and state y. Returns RODGEN_OK or an error code."),
    Function("void", "rodgen_interpolate",
             "const double *times, const double *values, long n, int width, double t, double *out",
             "Rows of width values at n sample times (strictly increasing), interpolated linearly at t and "
             "held constant outside: out [width]. The reference of the tracking input laws and the motion of "
             "a mixed problem."),
    Function("int", "rodgen_mixed_accelerations",
             "const rodgen_model *m, double t, int npres, const int *pres, const double *q, const double *qd, "
             "const double *qdd_p, const double *u, const double *p, double *qdd, double *tau",
             "A mixed problem at time t and one state: the coordinates pres [npres] (1 to nq - 1 distinct "
             "indices) move with the accelerations qdd_p [npres], the others are free. With M q'' + bias = B u "
             "split into free (f) and prescribed (p) blocks, solves M_ff qdd_f = B_f u - bias_f - M_fp qdd_p "
             "(Cholesky of M_ff) and fills qdd [nq] (free and prescribed) and tau [npres] = M_pf qdd_f + M_pp "
             "qdd_p + bias_p - B_p u, the generalized forces the prescribed coordinates need. q, qd [nq]; u [nu]"
             " or NULL (zero). Returns RODGEN_OK, RODGEN_ERR_OPTIONS (a bad pres), RODGEN_ERR_NONFINITE_INPUT, "
             "RODGEN_ERR_NOT_POSITIVE_DEFINITE (M_ff) or RODGEN_ERR_NONFINITE_RESULT."),
    Function("long", "rodgen_mixed_grid", "double t0, double t_end, double dt, double *times",
             "The RK4 grid of rodgen_mixed_simulate: returns the number of steps K (steps end at t0 + k dt, "
             "the last one at t_end), or -1 for bad arguments; times [2K+1] (or NULL) receives every time the "
             "integrator evaluates the motion at: t0, then the midpoint and the end of each step. Sampling "
             "the prescribed motion at these times makes its interpolation exact at every stage."),
    Function("int", "rodgen_mixed_simulate",
             "const rodgen_model *m, const rodgen_mixed *mx, const rodgen_input *inp, const double *p, "
             "double t0, double t_end, double dt, const double *y0, long capacity, double *t_out, "
             "double *y_out, double *qdd_out, double *tau_out, double *u_out, long *n_out",
             "Integrate the free coordinates of a mixed problem with RK4 (fixed step dt, grid of "
             "rodgen_mixed_grid) from the free state y0 [2*nfree] = [q_f, qd_f] (free coordinates in model "
             "order) at t0 to t_end, the prescribed coordinates following mx, the inputs from the input law "
             "inp at the full state (NULL: zero). Writes every step: t_out [capacity], y_out [capacity*2*nq] "
             "(full state), qdd_out [capacity*nq], tau_out [capacity*npres] (forces at the prescribed "
             "coordinates, as rodgen_mixed_accelerations), u_out [capacity*nu] or NULL (the inputs at the "
             "stored states; the input law may be any rodgen_input: constant, table, callback such as a C "
             "controller); capacity must hold K + 1 rows. *n_out receives the "
             "rows written. Returns RODGEN_OK, RODGEN_ERR_OPTIONS (bad split, grid, capacity or sample times), "
             "RODGEN_ERR_NONFINITE_INPUT (samples, y0 or p), or the error that stopped the run (the last row "
             "holds the last good state)."),
    Function("void", "rodgen_simulate_batch",
             "const rodgen_model *m, const rodgen_sim_options *o, const rodgen_batch *b, long first, long stride, "
             "double *work",
             "Simulate trajectories first, first + stride, ... of the batch b from b->t0 to o->t_end, each as "
             "rodgen_simulate does (the same numbers), writing its rows (the rows it does not reach are set to NaN), "
             "status and counts; a trajectory whose "
             "start state, parameters or inputs are not finite gets RODGEN_ERR_NONFINITE_INPUT and no rows. "
             "work [RODGEN_SIM_STORAGE(nq)] doubles is the caller's; concurrent calls on disjoint trajectories "
             "(one work array each) are safe, so threads share a batch by first = k, stride = threads."),
)


__all__ = ["NV", "NY", "Arg", "Routine", "ROUTINES", "routine", "SIZES", "width_value", "StatusEntry", "STATUSES",
           "StatusCode", "Constant", "METHODS", "INPUT_KINDS", "BLOCK_KINDS", "JOINT_KINDS", "PHASES", "EVENT_KINDS",
           "SLIP_MODES", "constant", "labels", "Field", "Struct", "STRUCTS", "CONSTRAINT", "MODEL_HEAD", "MODEL_TAIL",
           "INPUT_FN", "Function", "FUNCTIONS", "ELECTIVE_ROUTINES"]
