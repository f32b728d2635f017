"""The statement of a trajectory optimisation problem and its checks (no SymPy).

A :class:`Problem` is what the user writes: the compiled model, the mesh, the duration, bounds, boundary and
periodicity conditions, path constraints and the objective, every expression as text in the model's names
(the ast-checked expression language of model files, :mod:`rodgen.model.expr`). :meth:`Problem.check`
returns a frozen :class:`ValidProblem` with every name resolved to its place in a point's variables
``z = [q, qd, u]``, or raises :class:`OptimizeError` naming the field.

Names in expressions: the coordinates (``phi``), their rates ``<coordinate>_dot`` (``phi_dot``), the inputs
and the model's parameters, and in the integrand and the path constraints the time ``t`` (with a fixed
duration: a tracking objective, a prescribed motion); the terminal term may also use ``duration``; the
boundary constraints use the values at the first and the last node, ``<name>_start`` and ``<name>_end``,
and ``duration``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

from ..errors import RodgenError
from ..model.expr import Expression, ExpressionError, parse

#: Collocation methods: name -> the C driver's code.
METHODS = {"trapezoidal": 0, "hermite-simpson": 1, "backward-euler": 2}
#: The Hessian of the Lagrangian: IPOPT's quasi-Newton approximation, derived (models of a few coordinates), or
#: central or forward differences of the exact gradients per point (any model).
HESSIANS = ("limited-memory", "exact", "differences", "forward-differences")
#: The name of the phase's duration in a terminal expression.
DURATION = "duration"
#: The name of the time (from the phase's start) in the integrand and the path constraints.
TIME = "t"
#: The longest expression of a problem (model files allow 500 characters; an impact's momentum balances
#: written out for a five-link walker take a few thousand).
MAX_EXPRESSION_LENGTH = 20000


class OptimizeError(RodgenError, ValueError):
    """A trajectory optimisation problem is stated wrongly, or its solver is missing.

    The message names the field (``objective``, ``path[1]``, ``bounds['phi']``, ...).
    """

    def __init__(self, message: str, *, where: Optional[str] = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


def rate_name(coordinate: str) -> str:
    """The name of a coordinate's rate in expressions and in the bounds: ``<coordinate>_dot``."""
    return f"{coordinate}_dot"


@dataclass
class Problem:
    """A direct-collocation problem over a compiled model's dynamics ``y' = f(t, y, u, p)``, y = [q, qd].

    Parameters
    ----------
    model : a :class:`~rodgen.runtime.compiled.CompiledModel` (from ``rodgen.build``).
    nodes : number of mesh nodes (at least 2); the mesh is uniform in time.
    duration : the phase's duration: a number (fixed) or ``(lower, upper)`` (a variable of the problem).
    method : ``"trapezoidal"``, ``"hermite-simpson"`` (separated form: the interval midpoints are
        variables too, states and inputs) or ``"backward-euler"`` (``y_b - y_a - h f_b``, first order; the
        objective's quadrature weighs every node but the first by h: opty's default transcription).
    objective : the integrand, an expression of states, inputs and parameters (``"tau**2"``), integrated
        with the method's quadrature; None for none.
    terminal : a term added at the final point, an expression of the final states, parameters and
        ``duration``; None for none.
    bounds : name -> (lower, upper) for states (``phi``, ``phi_dot``) and inputs, at every point;
        ``duration`` is bounded by ``duration=(lower, upper)``. Use ``math.inf`` for no bound.
    initial, final : name -> value, the states or inputs fixed at the first and the last node.
    periodic : True (every state), or the names of the states whose final value equals the initial one
        plus ``shift[name]`` (0 unless given).
    shift : name -> the forward shift of a periodic state over the phase.
    path : ``(expression, lower, upper)`` constraints held at every point.
    boundary : ``(expression, lower, upper)`` constraints between the first and the last node, in the names
        ``<name>_start``, ``<name>_end`` (states and inputs), the parameters and ``duration``: an average speed
        ``("(x_end - x_start)/duration", 1.2, 1.2)``.
    parameters : overrides of the model's parameter values (fixed during the optimisation, unless free).
    free_parameters : name -> (lower, upper): model parameters that are variables of the problem (a mass, a
        length, a spring's stiffness chosen with the motion), bounded; each starts from its value (the
        model's or ``parameters``'), moved into its bounds. The model must be built with
        ``CodegenOptions(parameter_derivatives=True)`` (their exact derivatives); no contacts held. With a
        Hessian, its rows of the parameters are central differences of the Lagrangian's exact gradient.
    hessian : ``"limited-memory"`` (IPOPT's L-BFGS approximation of the Lagrangian's Hessian), ``"exact"``
        (its second derivatives generated as C, those of the dynamics from the model's accelerations derived
        in closed form: for models of a few coordinates, no contacts) or ``"differences"`` (each point's block
        by central differences of the point's exact Lagrangian gradient, from the model's compiled Jacobian:
        any model, contacts included; the terminal and boundary terms exact) or ``"forward-differences"`` (the
        same by forward differences: one gradient per column and point instead of two, about half the cost
        of a Hessian, to about 1e-8 instead of 1e-10 relative).
    contacts : the names of the model's contacts held (sticking, bilateral) during the phase: the dynamics
        collocated are then the constrained dynamics with them held, their forces (``ft_<contact>``,
        ``fn_<contact>``; spatial: ``ft1_``, ``ft2_``, ``fn_``) are names of the integrand and the path
        constraints, and the phase adds per point fn >= 0 and the friction cone abs(ft) <= mu fn (mu the
        contact's friction), and at the first node the contacts' gap = 0 and velocity J qd = 0.
    """

    model: Any
    nodes: int = 31
    duration: Union[float, tuple[float, float]] = 1.0
    method: str = "hermite-simpson"
    objective: Optional[str] = None
    terminal: Optional[str] = None
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    initial: Mapping[str, float] = field(default_factory=dict)
    final: Mapping[str, float] = field(default_factory=dict)
    periodic: Union[bool, Sequence[str]] = False
    shift: Mapping[str, float] = field(default_factory=dict)
    path: Sequence[tuple[str, float, float]] = ()
    boundary: Sequence[tuple[str, float, float]] = ()
    parameters: Mapping[str, float] = field(default_factory=dict)
    hessian: str = "limited-memory"
    contacts: Sequence[str] = ()
    free_parameters: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def check(self) -> "ValidProblem":
        """The checked problem; OptimizeError naming the field that is wrong."""
        return check_problem(self)

    def solve(self, guess: Any = None, *, options: Optional[Mapping[str, Any]] = None,
              build_dir: Any = None) -> Any:
        """Build (or reuse) the problem's C and solve it with IPOPT; an :class:`OptimizationResult`.

        ``guess``: None (states interpolated between the initial and final values where given, inputs 0),
        a previous :class:`OptimizationResult` or a :class:`~rodgen.SimulationResult` (interpolated onto
        the mesh). ``options``: IPOPT options (``{"tol": 1e-10, "max_iter": 500}``).
        """
        from .solve import solve
        return solve(self, guess, options=options, build_dir=build_dir)


@dataclass(frozen=True)
class ValidProblem:
    """A checked :class:`Problem`: names resolved, expressions parsed, bounds as numbers.

    ``variables``: the names of a point's variables in order (coordinates, their rates, inputs);
    ``parameters``: the model's parameter names; ``p``: their values.
    """

    model: Any
    nodes: int
    method: str
    free_duration: bool
    duration: tuple[float, float]          # (T, T) when fixed
    variables: tuple[str, ...]
    parameters: tuple[str, ...]
    p: tuple[float, ...]
    objective: Optional[Expression]
    terminal: Optional[Expression]
    bounds: tuple[tuple[float, float], ...]          # per variable
    initial: tuple[tuple[int, float], ...]
    final: tuple[tuple[int, float], ...]
    periodic: tuple[tuple[int, float], ...]          # (state index, shift)
    path: tuple[tuple[Expression, float, float], ...]
    boundary: tuple[tuple[Expression, float, float], ...] = ()
    hessian: str = "limited-memory"
    #: the contacts held: their names, the C active mask (per constraint block), the names of the contact
    #: forces (one per constraint row of the model; "" for rows not held) and the constraint rows whose
    #: position (the gaps) and whose velocity are held at the first node
    contacts: tuple[str, ...] = ()
    active: tuple[int, ...] = ()
    forces: tuple[str, ...] = ()
    start_position_rows: tuple[int, ...] = ()
    start_velocity_rows: tuple[int, ...] = ()
    #: the constraint rows of the contacts held, whose position (as at the first node) and velocity (zero) are
    #: constrained at every later node, and per row the coordinate whose node-to-node collocation defects
    #: (position and rate) these rows replace, which keeps them independent (Posa et al.'s velocity slacks along
    #: that coordinate, eliminated; J's columns of them nonsingular)
    hold_rows: tuple[int, ...] = ()
    hold_columns: tuple[int, ...] = ()
    #: the parameters that are variables (after the points' variables and the duration): (index in p, lower,
    #: upper)
    free_parameters: tuple[tuple[int, float, float], ...] = ()

    @property
    def nlam(self) -> int:
        """The contact forces appended to a point's variables in the problem's expressions (every
        constraint row of a model with contacts held, else 0)."""
        return len(self.forces)

    @property
    def nq(self) -> int:
        return int(self.model.nq)

    @property
    def nu(self) -> int:
        return int(self.model.nu)

    @property
    def points(self) -> int:
        """Collocation points: the nodes, and with Hermite-Simpson the interval midpoints between them."""
        return (self.nodes - 1) * (2 if self.method == "hermite-simpson" else 1) + 1


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            import numpy as np
            if isinstance(value, np.generic) and np.isrealobj(value):
                return float(value)
        except ImportError:  # pragma: no cover
            pass
        raise OptimizeError(f"expected a number, got {value!r}", where=where)
    if math.isnan(value):
        raise OptimizeError("NaN is not a value", where=where)
    return float(value)


def _finite(value: Any, where: str) -> float:
    x = _number(value, where)
    if not math.isfinite(x):
        raise OptimizeError(f"expected a finite number, got {value!r}", where=where)
    return x


def _interval(value: Any, where: str) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise OptimizeError(f"expected (lower, upper), got {value!r}", where=where)
    lo, hi = _number(value[0], f"{where}[0]"), _number(value[1], f"{where}[1]")
    if lo > hi:
        raise OptimizeError(f"the lower bound {lo:g} is above the upper bound {hi:g}", where=where)
    return lo, hi


def _suggest(name: str, known: Sequence[str]) -> str:
    import difflib
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _expression(text: Any, where: str, allowed: Sequence[str], what: str) -> Expression:
    if not isinstance(text, str):
        raise OptimizeError(f"expected an expression as text, got {type(text).__name__}", where=where)
    try:
        expr = parse(text, MAX_EXPRESSION_LENGTH)
    except ExpressionError as exc:
        raise OptimizeError(str(exc), where=where) from None
    for name in expr.names:
        if name not in allowed:
            raise OptimizeError(f"unknown name {name!r} in {expr.text!r}{_suggest(name, allowed)}; {what}",
                                where=where)
    return expr


def check_problem(problem: Problem) -> ValidProblem:
    """Check a :class:`Problem` (see :meth:`Problem.check`)."""
    cm = problem.model
    for attr in ("nq", "nv", "nu", "coordinates", "inputs", "parameters", "parameter_vector", "lie_joints"):
        if not hasattr(cm, attr):
            raise OptimizeError(f"expected a compiled model (rodgen.build(model)), got {type(cm).__name__}",
                                where="model")
    if cm.nv != cm.nq or cm.lie_joints:
        raise OptimizeError(f"the model {cm.name!r} has free, spherical or planar joints (nv != nq or "
                            f"configuration rates); collocation of such models is not supported", where="model")
    contacts, active, forces, start_pos, start_vel = _contacts(problem, cm)
    if isinstance(problem.nodes, bool) or not isinstance(problem.nodes, int) or problem.nodes < 2:
        raise OptimizeError(f"expected an integer of at least 2, got {problem.nodes!r}", where="nodes")
    if problem.method not in METHODS:
        raise OptimizeError(f"unknown method {problem.method!r}; choose one of {', '.join(METHODS)}",
                            where="method")
    if problem.hessian not in HESSIANS:
        raise OptimizeError(f"unknown Hessian {problem.hessian!r}; choose one of {', '.join(HESSIANS)}",
                            where="hessian")
    if isinstance(problem.duration, (int, float)) and not isinstance(problem.duration, bool):
        T = _finite(problem.duration, "duration")
        if T <= 0:
            raise OptimizeError(f"the duration must be positive, got {T:g}", where="duration")
        free, dur = False, (T, T)
    else:
        dur = _interval(problem.duration, "duration")
        if not dur[0] > 0 or not math.isfinite(dur[1]):
            raise OptimizeError(f"a free duration needs a positive lower and a finite upper bound, got "
                                f"({dur[0]:g}, {dur[1]:g})", where="duration")
        free = dur[0] < dur[1]
    coords = list(cm.coordinates)
    states = coords + [rate_name(c) for c in coords]
    inputs = list(cm.inputs)
    variables = states + inputs
    params = list(cm.parameters)
    clash = sorted(set(variables) & (set(params) | {DURATION, TIME})) or sorted(
        n for n in set(variables) if variables.count(n) > 1)
    if clash:
        raise OptimizeError(f"the name {clash[0]!r} is both a variable of the problem and a parameter, "
                            f"'duration', 't' or a coordinate's rate; rename it in the model", where="model")
    index = {n: i for i, n in enumerate(variables)}
    # the model's own velocity names ("phi'") are accepted in the mappings too
    index.update({f"{c}'": coords.index(c) + len(coords) for c in coords})
    for name in problem.parameters:
        if name not in params:
            raise OptimizeError(f"unknown parameter {name!r}{_suggest(name, params)}; the model's parameters: "
                                f"{', '.join(params) or 'none'}", where=f"parameters[{name!r}]")
    try:
        p = tuple(float(v) for v in cm.parameter_vector(
            {k: _finite(v, f"parameters[{k!r}]") for k, v in problem.parameters.items()}))
    except OptimizeError:
        raise
    except (ValueError, TypeError) as exc:
        raise OptimizeError(str(exc), where="parameters") from None

    free_params = _free_parameters(problem, cm, params, bool(contacts))

    def var(name: Any, where: str, allowed: Mapping[str, int] = index) -> int:
        if not isinstance(name, str) or name not in allowed:
            raise OptimizeError(f"unknown name {name!r}{_suggest(str(name), list(allowed))}; the problem's "
                                f"variables: {', '.join(variables)}", where=where)
        return allowed[name]

    bounds = [(-math.inf, math.inf)] * len(variables)
    for name, value in dict(problem.bounds).items():
        if name == DURATION:
            raise OptimizeError("bound the duration with duration=(lower, upper)", where=f"bounds[{name!r}]")
        i = var(name, f"bounds[{name!r}]")
        bounds[i] = _interval(value, f"bounds[{name!r}]")
    fixed: dict[str, list[tuple[int, float]]] = {}
    for what, mapping in (("initial", problem.initial), ("final", problem.final)):
        fixed[what] = []
        for name, given in dict(mapping).items():
            where = f"{what}[{name!r}]"
            i = var(name, where)
            x = _finite(given, where)
            lo, hi = bounds[i]
            if not lo <= x <= hi:
                raise OptimizeError(f"the value {x:g} is outside the bounds ({lo:g}, {hi:g}) of {variables[i]!r}",
                                    where=where)
            fixed[what].append((i, x))
    state_index = {k: v for k, v in index.items() if v < len(states)}
    if problem.periodic is True:
        periodic_names = states
    elif problem.periodic is False or problem.periodic is None:
        periodic_names = []
    elif isinstance(problem.periodic, str):
        raise OptimizeError(f"expected True or a list of state names, got the text {problem.periodic!r}",
                            where="periodic")
    else:
        periodic_names = list(problem.periodic)
    per_index = {}
    for k, name in enumerate(periodic_names):
        per_index[name] = var(name, f"periodic[{k}]", state_index)
    periodic = []
    for name, i in per_index.items():
        periodic.append((i, _finite(problem.shift.get(name, 0.0), f"shift[{name!r}]")))
    for name in problem.shift:
        if name not in per_index:
            raise OptimizeError(f"{name!r} is shifted but not periodic; add it to periodic", where=f"shift[{name!r}]")
    if periodic:
        both = {i for i, _ in fixed["initial"]} & {i for i, _ in fixed["final"]} & {i for i, _ in periodic}
        for i in sorted(both):
            x0 = dict(fixed["initial"])[i]
            x1 = dict(fixed["final"])[i]
            s = dict(periodic)[i]
            if abs(x1 - x0 - s) > 1e-12 * max(1.0, abs(x0), abs(x1)):
                raise OptimizeError(f"{variables[i]!r} is periodic with shift {s:g} but fixed to {x0:g} at the "
                                    f"start and {x1:g} at the end", where=f"periodic[{variables[i]!r}]")
    clash = sorted(set(f for f in forces if f) & set(variables + params + [DURATION, TIME]))
    if clash:
        raise OptimizeError(f"the contact force's name {clash[0]!r} is also a name of the model; rename the "
                            f"contact or the model's name", where="contacts")
    hold_rows = tuple(start_vel)
    hold_columns = _hold_columns(cm, fixed["initial"], p, hold_rows)
    start_pos, start_vel = _start_rows(cm, fixed["initial"], p, start_pos, start_vel)
    point_names = variables + params + ([TIME] if TIME not in params else []) + [f for f in forces if f]
    objective = terminal = None
    if problem.objective is not None:
        objective = _expression(problem.objective, "objective", point_names,
                                "the integrand may use the states, their rates (<name>_dot), inputs, parameters, t "
                                "and the forces of the contacts held")
    if problem.terminal is not None:
        terminal = _expression(problem.terminal, "terminal", states + params + [DURATION],
                               "the terminal term may use the final states, parameters and 'duration'")
    path = _constraints(problem.path, "path", point_names,
                        "path constraints may use the states, their rates (<name>_dot), inputs, parameters, t "
                        "and the forces of the contacts held")
    path += _friction_cones(cm, contacts, p)
    timed = [("objective", objective)] + [(f"path[{k}]", e) for k, (e, _, _) in enumerate(path)]
    for where, e in timed:
        if free and e is not None and TIME in e.names and TIME not in params:
            raise OptimizeError(f"{e.text!r} depends on the time t, which needs a fixed duration", where=where)
    ends = [f"{v}_{e}" for e in ("start", "end") for v in variables]
    clash = sorted(set(ends) & set(point_names))
    if clash and problem.boundary:
        raise OptimizeError(f"the model's name {clash[0]!r} is also the name of a boundary value; rename it "
                            f"in the model", where="boundary")
    boundary = _constraints(problem.boundary, "boundary", ends + params + [DURATION],
                            "boundary constraints may use <name>_start and <name>_end of the states and inputs, "
                            "the parameters and 'duration'")
    if contacts and problem.hessian == "exact":
        raise OptimizeError("the exact Hessian is not derived for phases with contacts held (the constrained "
                            "accelerations and forces solve a saddle-point system whose closed form is too large "
                            "to differentiate twice); use hessian='differences' (central differences of their "
                            "exact first derivatives) or 'limited-memory'", where="hessian")
    return ValidProblem(model=cm, nodes=problem.nodes, method=problem.method, free_duration=free, duration=dur,
                        variables=tuple(variables), parameters=tuple(params), p=p, objective=objective,
                        terminal=terminal, bounds=tuple(bounds), initial=tuple(fixed["initial"]),
                        final=tuple(fixed["final"]), periodic=tuple(periodic), path=tuple(path),
                        boundary=tuple(boundary), hessian=problem.hessian, contacts=contacts, active=active,
                        forces=forces, start_position_rows=start_pos, start_velocity_rows=start_vel,
                        hold_rows=hold_rows, hold_columns=hold_columns, free_parameters=free_params)


def _free_parameters(problem: Problem, cm: Any, params: list[str],
                     contacts: bool) -> tuple[tuple[int, float, float], ...]:
    """The checked ``free_parameters``: (index in p, lower, upper) in the order given."""
    if not isinstance(problem.free_parameters, Mapping):
        raise OptimizeError(f"expected a mapping of parameter names to (lower, upper), got "
                            f"{problem.free_parameters!r}", where="free_parameters")
    given = dict(problem.free_parameters)
    if not given:
        return ()
    out = []
    for name, value in given.items():
        where = f"free_parameters[{name!r}]"
        if name not in params:
            raise OptimizeError(f"unknown parameter {name!r}{_suggest(str(name), params)}; the model's parameters: "
                                f"{', '.join(params) or 'none'}", where=where)
        lo, hi = _interval(value, where)
        out.append((params.index(name), lo, hi))
    if contacts:
        raise OptimizeError("free parameters with contacts held are not supported (the contact forces' "
                            "derivatives by the parameters are not generated)", where="free_parameters")
    routines = cm.jacobian_model().table.info()["routines"]
    if not routines.get("parameter_partials"):
        raise OptimizeError(f"free parameters need the model's derivatives by its parameters: build the model "
                            f"{cm.name!r} with rodgen.build(model, codegen=CodegenOptions(parameter_derivatives="
                            f"True))", where="free_parameters")
    return tuple(out)


def force_names(contact: str, nrows: int) -> tuple[str, ...]:
    """The names of a contact's forces in the problem's expressions, in the order of its constraint rows:
    planar ``ft_<contact>`` (along the ground), ``fn_<contact>`` (normal); spatial ``ft1_``, ``ft2_``, ``fn_``."""
    if nrows == 2:
        return (f"ft_{contact}", f"fn_{contact}")
    return (f"ft1_{contact}", f"ft2_{contact}", f"fn_{contact}")


def _contacts(problem: Problem, cm: Any) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...],
                                                  tuple[int, ...], tuple[int, ...]]:
    """The contacts held: (names, active mask, force names per row, start position rows, start velocity rows)."""
    blocks = list(getattr(cm, "constraints", None) or ())
    given = problem.contacts
    if isinstance(given, str):
        given = [given]
    if given is None:
        given = []
    given = list(given)
    other = [b for b in blocks if b.kind != "contact"]
    if other:
        raise OptimizeError(f"the model {cm.name!r} has loops, limits or joint friction ({other[0].name!r}); "
                            f"collocation of such models is not supported: state the problem on a model "
                            f"without them", where="model")
    if given and not blocks:
        raise OptimizeError(f"the model {cm.name!r} has no contacts; contacts=[...] names contacts of the model",
                            where="contacts")
    known = [b.name for b in blocks]
    for k, name in enumerate(given):
        if not isinstance(name, str) or name not in known:
            raise OptimizeError(f"unknown contact {name!r}{_suggest(str(name), known)}; the model's contacts: "
                                f"{', '.join(known)}", where=f"contacts[{k}]")
        if given.index(name) != k:
            raise OptimizeError(f"the contact {name!r} is named twice", where=f"contacts[{k}]")
    if not blocks:
        return (), (), (), (), ()
    held = set(given)
    for b in blocks:
        if b.name in held and b.nrows not in (2, 3):
            raise OptimizeError(f"the contact {b.name!r} has {b.nrows} rows (a flat foot); only point contacts "
                                f"(2 rows planar, 3 spatial) are held in a phase", where="contacts")
    mask = tuple(int(v) for v in cm.active_mask(list(given)))
    forces: list[str] = [""] * int(cm.nrows)
    start_pos: list[int] = []
    start_vel: list[int] = []
    for b in blocks:
        if b.name in held:
            forces[b.row:b.row + b.nrows] = force_names(b.name, b.nrows)
            start_pos.append(b.row + b.nrows - 1)           # the gap
            start_vel.extend(range(b.row, b.row + b.nrows))
    return tuple(given), mask, tuple(forces), tuple(start_pos), tuple(start_vel)


def _hold_columns(cm: Any, initial: Sequence[tuple[int, float]], p: Sequence[float],
                  rows: tuple[int, ...]) -> tuple[int, ...]:
    """Per held row, the coordinate whose node-to-node defects the row's position and velocity replace: columns of
    J's held rows picked greedily by their norm after projecting out those picked (a pivoted QR of J's held rows at
    the initial coordinates given, the others 0), the columns that do not depend on the configuration first
    (J at a second configuration): the base's translations of a floating model, whose positions the held point
    then fixes while the joints follow the collocated dynamics alone. OptimizeError when J's held rows are
    dependent there."""
    if not rows:
        return ()
    import numpy as np
    n = int(cm.nq)
    q = np.zeros(n)
    for i, v in initial:
        if i < n:
            q[i] = v
    J, J2 = (np.asarray(cm.constraint_jacobian(qq, list(p)), dtype=float).reshape(-1, n)[list(rows)]
             for qq in (q, q + np.linspace(0.3, 0.7, n)))
    scale = max(1.0, float(np.max(np.abs(J))))
    constant = np.max(np.abs(J - J2), axis=0) <= 1e-12 * scale
    A = J.copy()
    picked: list[int] = []
    for _ in rows:
        nrm = np.linalg.norm(A, axis=0)
        nrm[picked] = -1.0
        best = np.where(constant & (nrm > 1e-6 * scale), nrm, -1.0)
        k = int(np.argmax(best)) if best.max() > 0 else int(np.argmax(nrm))
        if nrm[k] <= 1e-9 * scale:
            raise OptimizeError("the held contacts' constraint rows are dependent at the initial coordinates (two "
                                "contacts of one rigid body?); hold fewer contacts", where="contacts")
        v = A[:, k] / nrm[k]
        A -= np.outer(v, v @ A)
        picked.append(k)
    return tuple(picked)


def _start_rows(cm: Any, initial: Sequence[tuple[int, float]], p: Sequence[float], start_pos: tuple[int, ...],
                start_vel: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The contacts' gap and velocity rows at the first node, less those the initial values fix already (every
    coordinate, or every rate, given): the given values must satisfy them (else OptimizeError naming the
    contact), and a row of fixed variables only would make the NLP's Jacobian rank deficient."""
    import numpy as np
    n = int(cm.nq)
    given = dict(initial)
    pv = np.asarray(p, dtype=float)
    if start_pos and all(i in given for i in range(n)):
        q0 = np.array([given[i] for i in range(n)])
        c = cm.constraint_position(q0, pv)
        for r in start_pos:
            if abs(c[r]) > 1e-9:
                raise OptimizeError(f"the initial coordinates put the contact {_row_contact(cm, r)!r} {c[r]:.3g} "
                                    f"off the ground; it is held from the first node", where="initial")
        start_pos = ()
    if start_vel and all(i in given for i in range(2 * n)):
        q0 = np.array([given[i] for i in range(n)])
        v = cm.constraint_jacobian(q0, pv) @ np.array([given[n + i] for i in range(n)])
        for r in start_vel:
            if abs(v[r]) > 1e-9:
                raise OptimizeError(f"the initial rates move the contact {_row_contact(cm, r)!r} ({v[r]:.3g}); it is "
                                    f"held from the first node", where="initial")
        start_vel = ()
    return start_pos, start_vel


def _row_contact(cm: Any, row: int) -> str:
    return next(b.name for b in cm.constraints if b.row <= row < b.row + b.nrows)


def _friction_cones(cm: Any, contacts: Sequence[str], p: Sequence[float]) -> list[tuple[Expression, float, float]]:
    """Per contact held: its normal force >= 0 and (with a friction coefficient mu >= 0) the friction cone:
    planar mu fn -+ ft >= 0, spatial mu^2 fn^2 - ft1^2 - ft2^2 >= 0."""
    if not contacts:
        return []
    import numpy as np
    mu = cm.constraint_friction(np.asarray(p, dtype=float))
    out = []
    for i, b in enumerate(cm.constraints):
        if b.name not in contacts:
            continue
        names = force_names(b.name, b.nrows)
        fn = names[-1]
        out.append((parse(fn, MAX_EXPRESSION_LENGTH), 0.0, math.inf))
        if mu[i] < 0:
            continue
        m = repr(float(mu[i]))
        if b.nrows == 2:
            texts = [f"{m}*{fn} - {names[0]}", f"{m}*{fn} + {names[0]}"]
        else:
            texts = [f"{m}**2*{fn}**2 - {names[0]}**2 - {names[1]}**2"]
        out.extend((parse(t, MAX_EXPRESSION_LENGTH), 0.0, math.inf) for t in texts)
    return out


def _constraints(items: Sequence[Any], field_name: str, names: Sequence[str],
                 what: str) -> list[tuple[Expression, float, float]]:
    """``(expression, lower, upper)`` items, checked."""
    if isinstance(items, (str, bytes)):
        raise OptimizeError("expected a list of (expression, lower, upper)", where=field_name)
    out = []
    for k, item in enumerate(items):
        where = f"{field_name}[{k}]"
        if isinstance(item, str) or not hasattr(item, "__len__") or len(item) != 3:
            raise OptimizeError(f"expected (expression, lower, upper), got {item!r}", where=where)
        expr = _expression(item[0], where, names, what)
        lo, hi = _interval((item[1], item[2]), where)
        if lo == -math.inf and hi == math.inf:
            raise OptimizeError("the constraint has no bound", where=where)
        out.append((expr, lo, hi))
    return out


__all__ = ["Problem", "ValidProblem", "OptimizeError", "check_problem", "rate_name", "METHODS", "HESSIANS",
           "DURATION", "TIME"]
