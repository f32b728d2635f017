"""The compiled integrators of a model, run from Python in one call.

``sys.simulate(y0, t_end, dt, method="rk4", u=..., controller=...)`` (see
:func:`simulate`) integrates ``y' = rhs(t, y)`` with the fixed-step RK4 or
the adaptive Dormand–Prince 5(4) of rodgen's C runtime
(``rodgen_simulate`` on the model's table); the inputs are evaluated in C at every stage (a
constant, an :class:`~rodgen.runtime.control.InputTable`, a PD or
computed-torque law toward a :class:`~rodgen.runtime.control.Reference`) or,
on the slow path, by a Python callable ``u(t, q, qd)``; with ``hold=True``
once a step and held over its stages (sample-and-hold, as a digital controller). Every
``store_every``-th step is written into arrays filled chunk by chunk, so
memory grows with what is stored only, a progress bar advances per chunk,
and Ctrl-C stops the run at the end of a chunk with what was computed.
"""
from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

import numpy as np

from ..contract import StatusCode, constant
from .callables import input_function, names_text
from .ccontroller import CController
from .control import PD, ComputedTorque, InputTable, Reference, _gains
from .progress import Progress
from .result import Deferred, SimulationResult, Status

if TYPE_CHECKING:  # pragma: no cover
    from .compiled import CompiledModel


class Integrator(str, enum.Enum):
    """The compiled integration methods."""

    RK4 = "rk4"          # classical Runge-Kutta, fixed step dt; global error O(dt^4)
    DOPRI5 = "dopri5"    # Dormand-Prince 5(4), adaptive step under rtol/atol, FSAL


#: Input kinds of the C runtime (``RODGEN_INPUT_...``).
_CONSTANT, _TABLE, _PD, _COMPUTED_TORQUE, _CALLBACK = (
    constant(k) for k in ("INPUT_CONSTANT", "INPUT_TABLE", "INPUT_PD", "INPUT_COMPUTED_TORQUE", "INPUT_CALLBACK"))
#: Integration methods of the C runtime (``RODGEN_RK4``, ``RODGEN_DOPRI5``).
_METHOD = {"rk4": constant("RK4"), "dopri5": constant("DOPRI5")}
#: Default most steps of DOPRI5 (accepted and rejected).
DOPRI5_MAX_STEPS = 10_000_000
#: Rows of one chunk of output (the progress bar and Ctrl-C act between chunks).
CHUNK_ROWS = 20_000

UInput = Union[None, np.ndarray, list, tuple, float, InputTable, CController,
               Callable[[float, np.ndarray, np.ndarray], Any]]


def rk4_steps(t0: float, t_end: float, dt: float) -> int:
    """The number of RK4 steps from t0 to t_end: the C's rule (rodgen_rk4_step: step k ends at t0 + k dt,
    the last one, at t_end, is the first whose grid time exceeds t_end - 1e-9 dt), in the same doubles."""
    k = max(1, math.ceil((t_end - t0) / dt * (1 - 1e-12)))

    def last(j: int) -> bool:
        return t0 + float(j) * dt > t_end - 1e-9 * dt

    while k > 1 and last(k - 1):
        k -= 1
    while not last(k):
        k += 1
    return k


def rk4_rows(t0: float, t_end: float, dt: float, store_every: int) -> int:
    """The rows an RK4 run stores: the start, every ``store_every``-th step and the last step."""
    return 1 + -(-rk4_steps(t0, t_end, dt) // store_every)


def check_span(method: Integrator, t0: float, t_end: float, dt: Optional[float], rtol: float, atol: float,
               where: str = "") -> tuple[float, float]:
    """(t0, t_end) as floats, after checking the time span, the step and the tolerances of a run;
    ``where`` prefixes the messages (e.g. ``"simulate_batch: "``)."""
    t0, t_end = float(t0), float(t_end)
    if not (math.isfinite(t0) and math.isfinite(t_end) and t_end > t0):
        raise ValueError(f"{where}t_end must be finite and greater than t0 = {t0!r}; got {t_end!r}")
    if method is Integrator.RK4:
        if dt is None or not (float(dt) > 0 and math.isfinite(float(dt))):
            raise ValueError(f"{where}RK4 needs a positive step dt; got {dt!r}")
    elif dt is not None and not (float(dt) > 0 and math.isfinite(float(dt))):
        raise ValueError(f"{where}dt (the first step of DOPRI5) must be positive; got {dt!r}")
    if method is Integrator.DOPRI5 and not (rtol >= 0 and atol >= 0 and rtol + atol > 0):
        raise ValueError(f"{where}rtol and atol must be non-negative and not both zero; got rtol={rtol!r}, "
                         f"atol={atol!r}")
    return t0, t_end


def simulate(sys: "CompiledModel", y0: Any, t_end: float, dt: Optional[float] = None, *,
             method: Union[Integrator, str] = Integrator.RK4, rtol: float = 1e-6, atol: float = 1e-9,
             u: UInput = None, p: Any = None, controller: Union[PD, ComputedTorque, CController, None] = None,
             store_every: int = 1, max_steps: Optional[int] = None, t0: float = 0.0,
             h_max: Optional[float] = None, h_min: float = 0.0,
             progress: Optional[bool] = None, hold: bool = False) -> SimulationResult:
    """Integrate a compiled model in C from ``t0`` to ``t_end``.

    Parameters
    ----------
    sys : the compiled model.
    y0 : (2 nq,) initial state [q, qd].
    t_end : end time (> t0).
    dt : RK4: the step (required). DOPRI5: the first step tried (default:
        chosen from the right-hand side).
    method : ``"rk4"`` or ``"dopri5"`` (:class:`Integrator`).
    rtol, atol : DOPRI5 error tolerances; a step is accepted when the RMS of
        err_i / (atol + rtol max(|y_i|, |y_new_i|)) is at most 1.
    u : the inputs: None (zero), a constant (nu,) vector, an
        :class:`InputTable`, a :class:`~rodgen.runtime.ccontroller.CController`
        (a controller written in C, called from C), or a callable
        ``u(t, q, qd) -> (nu,)`` (slow: Python is called at every stage;
        ``u(t, y)`` is accepted too, see :mod:`rodgen.runtime.callables`; it is
        called once at (t0, y0) to check it). With a PD controller a constant
        ``u`` is its feedforward.
    p : parameters (vector or dict of overrides); defaults of the model if None.
    controller : a :class:`PD` or :class:`ComputedTorque` law toward a
        :class:`Reference`, evaluated in C, or a
        :class:`~rodgen.runtime.ccontroller.CController`.
    store_every : store every k-th step (the first and the last state always).
    max_steps : most steps, accepted and rejected (default: none for RK4,
        :data:`DOPRI5_MAX_STEPS` for DOPRI5).
    h_max, h_min : DOPRI5 step limits (default: t_end - t0, and 16 eps |t|).
    progress : show a progress bar (default: when stderr is a terminal).
    hold : sample-and-hold (zero-order hold), RK4 only: the input law (``u``, ``controller``) is evaluated
        once at the start of each step, at (t_k, y_k), and its inputs are held constant over the four
        stages, as a digital controller with sampling period ``dt`` runs. Default False: evaluated at
        every stage (a continuous-time law). The stored ``u`` is the held value of the step that starts
        at the stored state.

    Returns
    -------
    SimulationResult : t (N,), q and qd (N, nq), u (N, nu) the inputs at the
    stored states, the energy, and ``status``. A failure (non-finite state or
    inputs, singular mass matrix, step-size underflow, max_steps, an input
    function that raised) stops the run: ``status`` and ``message`` say when
    and why, and the arrays end at the last good state.
    """
    method = _method(method)
    nq, nu, ny = sys.nq, sys.nu, getattr(sys, "ny", 2 * sys.nq)
    y = np.ascontiguousarray(np.asarray(y0, dtype=float).reshape(-1))
    if y.shape != (ny,):
        raise ValueError(f"Input 'y0' has length {y.size}; the model {sys.name!r} expects {ny} state entries "
                         f"[q, qd], q in the order of its coordinates ({names_text(sys.coordinates)})")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"y0 holds inf or NaN: {y.tolist()}")
    if getattr(sys, "lie_joints", None):
        sys.check_quaternions(y[:nq], "y0")
    t0, t_end = check_span(method, t0, t_end, dt, rtol, atol)
    if not isinstance(store_every, (int, np.integer)) or store_every < 1:
        raise ValueError(f"store_every must be a positive integer; got {store_every!r}")
    if max_steps is None:
        max_steps = 0 if method is Integrator.RK4 else DOPRI5_MAX_STEPS
    if max_steps < 0:
        raise ValueError(f"max_steps must be positive; got {max_steps!r}")
    hold = _hold(hold, method)
    if h_max is not None and not h_max > 0:
        raise ValueError(f"h_max must be positive; got {h_max!r}")
    if not h_min >= 0:
        raise ValueError(f"h_min must be non-negative; got {h_min!r}")
    pv = _parameters(sys, p)
    kind, uc, times, values, kp, kd, fn = _input_law(sys, u, controller, pv, t0, y)

    sim = sys._runtime.Simulation(sys._m, _METHOD[method.value], t0, t_end, float(dt or 0.0), float(rtol),
                                  float(atol), float(h_min), float(h_max or 0.0), int(max_steps), int(store_every),
                                  kind, uc, times, values, kp, kd, fn, pv, y, int(hold))
    if method is Integrator.RK4:
        assert dt is not None  # checked above
        rows = min(CHUNK_ROWS, rk4_rows(t0, t_end, float(dt), store_every))
    else:
        rows = CHUNK_ROWS
    ts, ys, us = [], [], []
    status, message = Status.SUCCESS, f"reached t_end = {t_end:g}"
    with Progress(total=t_end - t0, desc=f"simulating {sys.name}", enable=progress) as bar:
        done = t0
        while True:
            tb, yb, ub = np.empty(rows), np.empty(rows * ny), np.empty(rows * nu)
            try:
                code, n = sim.run(tb, yb, ub)
            except KeyboardInterrupt:
                status, message = Status.INTERRUPTED, f"interrupted at t = {sim.t:.6g}"
                break
            ts.append(tb[:n])
            ys.append(yb[: n * ny].reshape(n, ny))
            us.append(ub[: n * nu].reshape(n, nu))
            bar.update(sim.t - done)
            done = sim.t
            if code == StatusCode.SIM_FULL:
                continue
            if code == StatusCode.OK:
                break
            if code == StatusCode.ERR_OPTIONS:
                raise ValueError(f"the compiled integrator of {sys.name!r} rejected its options")
            status, why = _failure(code, sim.error, u if controller is None else controller)
            if code == StatusCode.ERR_STEP_UNDERFLOW:
                why += f" (h_min = {max(h_min, 16 * np.finfo(float).eps * abs(sim.t)):.3g})"
            elif code == StatusCode.ERR_MAX_STEPS:
                why += f" = {max_steps}"
            message = f"stopped at t = {sim.t:.9g}: {why}"
            break
    t, Y, U = (_joined(parts, empty) for parts, empty in ((ts, np.empty(0)), (ys, np.empty((0, ny))),
                                                          (us, np.empty((0, nu)))))
    q, qd = Y[:, :nq], Y[:, nq:]
    energy = _energy(sys, q, qd, pv)
    accepted, rejected, evaluations = sim.counts
    res = SimulationResult(t=t, q=q, qd=qd, u=U, kinetic=energy, potential=energy, coordinates=list(sys.coordinates),
                           inputs=list(sys.inputs), status=status, message=message, model=sys.name,
                           velocities=list(sys.velocities) if getattr(sys, "lie_joints", None) else None)
    if getattr(sys, "force_names", None) and len(t) and _has(sys, "element_forces"):
        res.element_forces = sys.contact_forces(q, qd, U if nu else None, pv, t=t)
    res.extra.update(steps=np.array(accepted), rejected=np.array(rejected), evaluations=np.array(evaluations))
    if isinstance(fn, tuple):
        res.extra["controller_state"] = fn[2].state.copy()
    return res


def _hold(hold: Any, method: Integrator) -> bool:
    if not isinstance(hold, (bool, np.bool_)):
        raise TypeError(f"hold must be True or False; got {hold!r}")
    if hold and method is not Integrator.RK4:
        raise ValueError("hold=True (sample-and-hold inputs, sampled once a step) needs the fixed-step RK4: "
                         "the adaptive steps of DOPRI5 are no sampling period; use method='rk4' with dt the "
                         "controller's period")
    return bool(hold)


def _outcome(code: int) -> tuple[Status, str]:
    """(how the run ended, why) for a status code of the C."""
    c = StatusCode.find(code)
    if c is None:
        return Status.FAILED, StatusCode.describe(code)
    try:
        return Status(c.outcome), c.message
    except ValueError:
        return Status.FAILED, c.message


def _failure(code: int, error: Optional[BaseException], controller: Any) -> tuple[Status, str]:
    """(how the run ended, why) for a failing status code, naming what the input law did wrong."""
    status, why = _outcome(code)
    if code == StatusCode.ERR_INPUT_FAILED and error is not None:
        if isinstance(error, KeyboardInterrupt):
            return Status.INTERRUPTED, "interrupted in the input function"
        return status, f"the input function raised {type(error).__name__}: {error}"
    if code == StatusCode.ERR_INPUT_FAILED and isinstance(controller, CController):
        return status, (f"the C controller {controller.symbol!r} ({controller.where}) returned a non-zero "
                        f"status")
    if code == StatusCode.ERR_INPUT_FAILED and isinstance(controller, ComputedTorque):
        return status, "B^T B is singular: computed torque needs inputs whose directions B(q) are independent"
    return status, why


def _method(method: Union[Integrator, str]) -> Integrator:
    try:
        return Integrator(getattr(method, "value", method))
    except ValueError:
        choices = ", ".join(repr(m.value) for m in Integrator)
        raise ValueError(f"unknown method {method!r}; the compiled integrators are {choices}") from None


def _has(sys: "CompiledModel", routine: str) -> bool:
    """Whether the model's library holds ``routine`` (a build with CodegenOptions(routines=...) may not)."""
    return routine in getattr(sys, "routines", (routine,))


def _energy(sys: "CompiledModel", q: np.ndarray, qd: np.ndarray, pv: np.ndarray) -> Any:
    """(T, V) along a result as a :class:`~rodgen.runtime.result.Deferred` that the result computes when it first
    reads them (typed Any: a SimulationResult takes it for its kinetic and potential fields); NaN where the model
    was built without its energy routine."""
    def compute() -> tuple[np.ndarray, np.ndarray]:
        if not len(q):
            return np.empty(0), np.empty(0)
        if not _has(sys, "energy"):
            return np.full(len(q), np.nan), np.full(len(q), np.nan)
        T, V = sys.energy(q, qd, pv)
        return T, V
    return Deferred(compute)


def _joined(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
    """The chunks of a run's output in one array: the only chunk itself (most runs fit one), no copy."""
    if not parts:
        return empty
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _phases(t: np.ndarray, active: np.ndarray, names: Sequence[str]) -> list[tuple[float, list[str]]]:
    """The phases of a hybrid run: (start time, the names of the blocks active) at its first stored row and
    wherever the set of active blocks changes (a block's code going from sticking to sliding is no new phase)."""
    if not len(t):
        return []
    held = active != 0
    starts = np.concatenate(([0], np.flatnonzero(np.any(held[1:] != held[:-1], axis=1)) + 1))
    return [(float(t[i]), [names[j] for j in np.flatnonzero(held[i]).tolist()]) for i in starts.tolist()]


def _parameters(sys: "CompiledModel", p: Any) -> np.ndarray:
    p2, rows = sys._params(p)
    if rows > 1:
        raise ValueError(f"simulate() takes one parameter vector; got {rows} rows")
    pv = np.ascontiguousarray(p2.reshape(-1), dtype=float).copy()
    if not np.all(np.isfinite(pv)):
        raise ValueError(f"the parameters hold inf or NaN: {pv.tolist()}")
    model = getattr(sys, "model", None)
    if p is not None and model is not None and hasattr(model, "links"):
        # masses, lengths, inertias of the run's parameters: the sign rules of validation (a ModelError)
        from ..model.values import check_parameter_values
        check_parameter_values(model, dict(zip(sys.parameters, pv.tolist())))
    return pv


def _input_law(sys: "CompiledModel", u: UInput, controller: Any, pv: np.ndarray, t0: float,
               y0: np.ndarray) -> tuple:
    """(kind, u, times, values, kp, kd, function) for the C input struct; a callable ``u`` is read by the one
    rule of :mod:`rodgen.runtime.callables` and checked once at (t0, y0)."""
    nq, nu = sys.nq, sys.nu
    none = np.empty(0)
    c_law = controller if isinstance(controller, CController) else u if isinstance(u, CController) else None
    if c_law is not None:
        if controller is not None and u is not None:
            raise ValueError("a CController sets all inputs; pass it as controller= or u=, not both")
        if nu == 0:
            raise ValueError(f"the model {sys.name!r} has no inputs; a controller has nothing to drive")
        return _CALLBACK, none, none, none, none, none, c_law.bind(sys._m.address(), pv).input_function()
    if controller is not None:
        if not isinstance(controller, (PD, ComputedTorque)):
            raise TypeError(f"controller must be a rodgen PD, ComputedTorque or CController; got "
                            f"{type(controller).__name__}")
        if nu == 0:
            raise ValueError(f"the model {sys.name!r} has no inputs; a controller has nothing to drive")
        ref = controller.reference
        if not isinstance(ref, Reference):
            raise TypeError(f"the controller's reference must be a rodgen Reference; got {type(ref).__name__}")
        if ref.q.shape[1] != nq:
            raise ValueError(f"the reference has {ref.q.shape[1]} coordinates; the model {sys.name!r} has {nq}")
        values = ref.rows(sys.nv).reshape(-1)
        if isinstance(controller, PD):
            ff = none
            if u is not None:
                if callable(u) or isinstance(u, InputTable):
                    raise ValueError("with a PD controller, u is a constant feedforward (nu,) or None")
                ff = _constant(sys, u)
            return (_PD, ff, ref.t, values, _gains(controller.kp, nu, "PD kp"), _gains(controller.kd, nu, "PD kd"),
                    None)
        if u is not None:
            raise ValueError("a ComputedTorque controller sets all inputs; u must be None")
        return (_COMPUTED_TORQUE, none, ref.t, values, _gains(controller.kp, sys.nv, "ComputedTorque kp"),
                _gains(controller.kd, sys.nv, "ComputedTorque kd"), None)
    if u is None:
        return _CONSTANT, none, none, none, none, none, None
    if isinstance(u, InputTable):
        if u.u.shape[1] != nu:
            raise ValueError(f"the InputTable has {u.u.shape[1]} inputs per row; the model {sys.name!r} has {nu}")
        return _TABLE, none, u.t, np.ascontiguousarray(u.u.reshape(-1)), none, none, None
    if callable(u):
        fn = input_function(u, nq=nq, inputs=sys.inputs, model=sys.name, t0=t0, y0=y0)
        return _CALLBACK, none, none, none, none, none, fn
    return _CONSTANT, _constant(sys, u), none, none, none, none, None


def _constant(sys: "CompiledModel", u: Any) -> np.ndarray:
    a = np.asarray(u, dtype=float).reshape(-1)
    if a.size == 1 and sys.nu != 1:
        raise ValueError(f"Input 'u' has length 1; the model {sys.name!r} expects {sys.nu} inputs")
    if a.shape != (sys.nu,):
        raise ValueError(f"Input 'u' has length {a.size}; the model {sys.name!r} expects {sys.nu} inputs "
                         f"({names_text(sys.inputs)})")
    return np.ascontiguousarray(a)


def simulate_hybrid(sys: "CompiledModel", y0: Any, t_end: float, dt: float, *, contacts: Any = (),
                    u: UInput = None, p: Any = None, controller: Union[PD, ComputedTorque, None] = None,
                    store_every: int = 1, t0: float = 0.0, alpha: Optional[float] = None,
                    beta: Optional[float] = None, event_tol: Optional[float] = None, arm_gap: Optional[float] = None,
                    check_tol: Optional[float] = None, disarmed: Any = (), on_slip: str = "stop",
                    max_events: int = 0, chunk_rows: int = CHUNK_ROWS, hold: bool = False) -> SimulationResult:
    """Hybrid simulation in C: RK4 of the constrained dynamics with located events (rodgen_contact.h).

    ``contacts``: the initial active set, block names (loops are always active) or name -> "stick" /
    "slide_plus" / "slide_minus" (2-row contacts) / "slide" (3-row contacts); a flat foot (6 rows) sticks.
    ``disarmed``: inactive blocks allowed below the ground at the start.
    ``u``, ``controller``, ``p``, ``store_every``: as in :func:`simulate` (a compiled input law stays in C).
    ``alpha``, ``beta``: Baumgarte gains (default 10 1/s), ``event_tol`` (s, default 1e-10), ``arm_gap``
    (m, default 1e-6: an inactive contact can touch down once its gap exceeded it), ``check_tol`` (initial
    state, default 1e-8), ``on_slip``: "stop", "continue" or "slide"; ``max_events`` (0: no limit).
    ``hold``: sample-and-hold inputs, evaluated at the start of each step and again right after each event
    (the phase changed), held in between; when a new sample changes them the phase is checked again (a
    contact the new inputs would pull lifts off at the sample time).

    Returns a SimulationResult with, besides t, q, qd, u and the energy: ``lam`` (N, nrows) every
    constraint row's force (0 when inactive), ``active`` dict block -> (N,) int codes (0 inactive, 1
    sticking, 2/3 sliding, 4 a 3-row contact sliding), ``events`` list of dicts (t, kind, block, impulse: a
    contact's tangential (3 or 6 rows: its norm) and normal; of a "tip" the flat foot's centre of pressure
    (x, y) as it left the sole, energy_loss), ``phases``
    list of (start time, active block names). An event stores the state before and after its jump at the
    same time. A failure ends the run with ``status`` and a ``message`` naming the block.
    """
    rt = sys._runtime
    # the state [q (nq), qd (nv)]: with free, spherical or planar joints qd are the velocities and the C steps
    # q by the configuration rate, each quaternion renormalised after every step
    nq, nu, ny, nr, nc = sys.nq, sys.nu, sys.nq + sys.nv, sys.nrows, len(sys.constraints)
    y = np.ascontiguousarray(np.asarray(y0, dtype=float).reshape(-1))
    if y.shape != (ny,):
        raise ValueError(f"Input 'y0' has length {y.size}; the model {sys.name!r} expects {ny} state entries "
                         f"[q, qd], q in the order of its coordinates ({names_text(sys.coordinates)})")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"y0 holds inf or NaN: {y.tolist()}")
    sys.check_quaternions(y[:nq], "y0")
    if not sys.constraints:
        raise ValueError(f"the model {sys.name!r} has no constraint blocks; use simulate() without contacts")
    t0, t_end = float(t0), float(t_end)
    if not (math.isfinite(t0) and math.isfinite(t_end) and t_end > t0):
        raise ValueError(f"t_end must be finite and greater than t0 = {t0!r}; got {t_end!r}")
    if dt is None or not (float(dt) > 0 and math.isfinite(float(dt))):
        raise ValueError(f"the hybrid simulation (RK4) needs a positive step dt; got {dt!r}")
    if not isinstance(store_every, (int, np.integer)) or store_every < 1:
        raise ValueError(f"store_every must be a positive integer; got {store_every!r}")
    if on_slip not in rt.SLIP_MODES:
        raise ValueError(f"on_slip must be one of {', '.join(map(repr, rt.SLIP_MODES))}; got {on_slip!r}")
    if max_events < 0:
        raise ValueError(f"max_events must be >= 0; got {max_events!r}")
    hold = _hold(hold, Integrator.RK4)
    for nm, v in (("alpha", alpha), ("beta", beta)):
        if v is not None and not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"{nm} (Baumgarte gain) must be finite and >= 0; got {v!r}")
    for nm, v in (("event_tol", event_tol), ("arm_gap", arm_gap), ("check_tol", check_tol)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{nm} must be positive; got {v!r}")
    active0 = sys.active_mask(contacts)      # refuses a flat foot that would slide
    disarmed0 = (sys.active_mask(disarmed) != 0).astype(np.intc)
    pv = _parameters(sys, p)
    kind, uc, times, values, kp, kd, fn = _input_law(sys, u, controller, pv, t0, y)
    law = rt.Simulation(sys._m, _METHOD["rk4"], t0, t_end, float(dt), 0.0, 0.0, 0.0, 0.0, 0, 1,
                        kind, uc, times, values, kp, kd, fn, pv, y)
    run = rt.Hybrid(law, pv, t0, t_end, float(dt), int(store_every), float(event_tol or 0.0),
                    float(arm_gap or 0.0), float(check_tol or 0.0), int(max_events), rt.SLIP_MODES[on_slip],
                    -1.0 if alpha is None else float(alpha), -1.0 if beta is None else float(beta), 0.0, y,
                    active0, disarmed0, int(hold))
    names = [b.name for b in sys.constraints]

    def block_name(i: int) -> str:
        return names[i] if 0 <= i < nc else "none"

    status, message = Status.SUCCESS, f"reached t_end = {t_end:g}"
    ts, ys, ls, acts, us, events = [], [], [], [], [], []
    if run.status != StatusCode.OK:
        why = StatusCode.describe(run.status)
        if run.status == StatusCode.ERR_INITIAL_STATE:
            why += f" (block {block_name(run.block)!r})"
        raise ValueError(f"the hybrid simulation of {sys.name!r} cannot start: {why}")
    steps = math.ceil((t_end - t0) / float(dt) * (1 - 1e-12))
    rows = max(3, min(int(chunk_rows), steps // store_every + 8))
    ecap = 3 * nc + 2 + 64
    while True:
        tb, yb, lb = np.empty(rows), np.empty(rows * ny), np.empty(rows * nr)
        ab, ub = np.empty(rows * nc, dtype=np.intc), np.empty(rows * nu)
        try:
            code, n, ev = run.run(tb, yb, lb, ab, ub, ecap)
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, f"interrupted at t = {run.t:.6g}"
            break
        ts.append(tb[:n])
        ys.append(yb[: n * ny].reshape(n, ny))
        ls.append(lb[: n * nr].reshape(n, nr))
        acts.append(ab[: n * nc].reshape(n, nc))
        us.append(ub[: n * nu].reshape(n, nu))
        for (te, k, blk, i0, i1, loss) in ev:
            events.append({"t": te, "kind": rt.EVENT_KINDS.get(k, str(k)), "block": block_name(blk),
                           "impulse": np.array([i0, i1]), "energy_loss": loss})
        if code == StatusCode.SIM_FULL:
            continue
        if code == StatusCode.OK:
            break
        if code == StatusCode.ERR_OPTIONS:
            raise ValueError(f"the hybrid simulation of {sys.name!r} rejected its options")
        status, why = _failure(code, law.error, u if controller is None else controller)
        if run.block >= 0 and code in (StatusCode.ERR_FRICTION_CONE, StatusCode.ERR_EVENT_NOT_LOCATED,
                                       StatusCode.ERR_INITIAL_STATE, StatusCode.ERR_TIPPED,
                                       StatusCode.ERR_TOO_MANY_EVENTS):
            why += f" (block {block_name(run.block)!r})"
        message = f"stopped at t = {run.t:.9g}: {why}"
        break
    t, Y, L, A, U = (_joined(parts, empty) for parts, empty in (
        (ts, np.empty(0)), (ys, np.empty((0, ny))), (ls, np.empty((0, nr))),
        (acts, np.empty((0, nc), dtype=np.intc)), (us, np.empty((0, nu)))))
    q, qd = Y[:, :nq], Y[:, nq:]
    energy = _energy(sys, q, qd, pv)
    res = SimulationResult(t=t, q=q, qd=qd, u=U, kinetic=energy, potential=energy, coordinates=list(sys.coordinates),
                           inputs=list(sys.inputs), status=status, message=message, model=sys.name,
                           velocities=list(sys.velocities) if getattr(sys, "lie_joints", None) else None)
    if getattr(sys, "force_names", None) and len(t) and _has(sys, "element_forces"):
        res.element_forces = sys.contact_forces(q, qd, U if nu else None, pv, t=t)
    phases = _phases(t, A, names)
    res.lam = L
    res.active = {nm: A[:, j].copy() for j, nm in enumerate(names)}
    if any(b.kind == "friction" for b in sys.constraints):
        res.friction = {b.name: L[:, b.row].copy() for b in sys.constraints if b.kind == "friction"}
    res.events = events
    res.phases = phases
    steps_done, nev, evaluations, responses = run.counts
    res.extra.update(lam=L, steps=np.array(steps_done), events=np.array(nev), evaluations=np.array(evaluations),
                     responses=np.array(responses))
    if isinstance(fn, tuple):
        res.extra["controller_state"] = fn[2].state.copy()
    return res


__all__ = ["simulate", "simulate_hybrid", "Integrator", "DOPRI5_MAX_STEPS"]
