"""The compiled integrators of a model, run from Python in one call.

``sys.simulate(y0, t_end, dt, method="rk4", u=..., controller=...)`` (see
:func:`simulate`) integrates ``y' = rhs(t, y)`` with the fixed-step RK4 or
the adaptive Dormand–Prince 5(4) of rodgen's C runtime
(``rodgen_simulate`` on the model's table); the inputs are evaluated in C at every stage (a
constant, an :class:`~rodgen.runtime.control.InputTable`, a PD or
computed-torque law toward a :class:`~rodgen.runtime.control.Reference`) or,
on the slow path, by a Python callable ``u(t, q, qd)``. Every
``store_every``-th step is written into arrays filled chunk by chunk, so
memory grows with what is stored only, a progress bar advances per chunk,
and Ctrl-C stops the run at the end of a chunk with what was computed.
"""
from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np

from ..contract import StatusCode, constant
from .control import PD, ComputedTorque, InputTable, Reference, _gains
from .progress import Progress
from .result import SimulationResult, Status

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

UInput = Union[None, np.ndarray, list, tuple, float, InputTable, Callable[[float, np.ndarray, np.ndarray], Any]]


def simulate(sys: "CompiledModel", y0: Any, t_end: float, dt: Optional[float] = None, *,
             method: Union[Integrator, str] = Integrator.RK4, rtol: float = 1e-6, atol: float = 1e-9,
             u: UInput = None, p: Any = None, controller: Union[PD, ComputedTorque, None] = None,
             store_every: int = 1, max_steps: Optional[int] = None, t0: float = 0.0,
             h_max: Optional[float] = None, h_min: float = 0.0,
             progress: Optional[bool] = None) -> SimulationResult:
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
        :class:`InputTable`, or a callable ``u(t, q, qd) -> (nu,)`` (slow:
        Python is called at every stage). With a PD controller a constant
        ``u`` is its feedforward.
    p : parameters (vector or dict of overrides); defaults of the model if None.
    controller : a :class:`PD` or :class:`ComputedTorque` law toward a
        :class:`Reference`, evaluated in C.
    store_every : store every k-th step (the first and the last state always).
    max_steps : most steps, accepted and rejected (default: none for RK4,
        :data:`DOPRI5_MAX_STEPS` for DOPRI5).
    h_max, h_min : DOPRI5 step limits (default: t_end - t0, and 16 eps |t|).
    progress : show a progress bar (default: when stderr is a terminal).

    Returns
    -------
    SimulationResult : t (N,), q and qd (N, nq), u (N, nu) the inputs at the
    stored states, the energy, and ``status``. A failure (non-finite state or
    inputs, singular mass matrix, step-size underflow, max_steps, an input
    function that raised) stops the run: ``status`` and ``message`` say when
    and why, and the arrays end at the last good state.
    """
    method = _method(method)
    nq, nu, ny = sys.nq, sys.nu, 2 * sys.nq
    y = np.ascontiguousarray(np.asarray(y0, dtype=float).reshape(-1))
    if y.shape != (ny,):
        raise ValueError(f"Input 'y0' has length {y.size}; the model {sys.name!r} expects {ny} state entries "
                         f"[q, qd] (see {sys.prefix}.h for the order).")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"y0 holds inf or NaN: {y.tolist()}")
    t0, t_end = float(t0), float(t_end)
    if not (math.isfinite(t0) and math.isfinite(t_end) and t_end > t0):
        raise ValueError(f"t_end must be finite and greater than t0 = {t0!r}; got {t_end!r}")
    if method is Integrator.RK4:
        if dt is None or not (float(dt) > 0 and math.isfinite(float(dt))):
            raise ValueError(f"RK4 needs a positive step dt; got {dt!r}")
    elif dt is not None and not (float(dt) > 0 and math.isfinite(float(dt))):
        raise ValueError(f"dt (the first step of DOPRI5) must be positive; got {dt!r}")
    if method is Integrator.DOPRI5 and not (rtol >= 0 and atol >= 0 and rtol + atol > 0):
        raise ValueError(f"rtol and atol must be non-negative and not both zero; got rtol={rtol!r}, atol={atol!r}")
    if not isinstance(store_every, (int, np.integer)) or store_every < 1:
        raise ValueError(f"store_every must be a positive integer; got {store_every!r}")
    if max_steps is None:
        max_steps = 0 if method is Integrator.RK4 else DOPRI5_MAX_STEPS
    if max_steps < 0:
        raise ValueError(f"max_steps must be positive; got {max_steps!r}")
    if h_max is not None and not h_max > 0:
        raise ValueError(f"h_max must be positive; got {h_max!r}")
    if not h_min >= 0:
        raise ValueError(f"h_min must be non-negative; got {h_min!r}")
    pv = _parameters(sys, p)
    kind, uc, times, values, kp, kd, fn = _input_law(sys, u, controller)

    sim = sys._runtime.Simulation(sys._m, _METHOD[method.value], t0, t_end, float(dt or 0.0), float(rtol),
                                  float(atol), float(h_min), float(h_max or 0.0), int(max_steps), int(store_every),
                                  kind, uc, times, values, kp, kd, fn, pv, y)
    if method is Integrator.RK4:
        assert dt is not None  # checked above
        steps = math.ceil((t_end - t0) / float(dt) * (1 - 1e-12))
        rows = min(CHUNK_ROWS, steps // store_every + 2)
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
            status, why = _outcome(code)
            err = sim.error
            if code == StatusCode.ERR_INPUT_FAILED and err is not None:
                if isinstance(err, KeyboardInterrupt):
                    status, why = Status.INTERRUPTED, "interrupted in the input function"
                else:
                    why = f"the input function raised {type(err).__name__}: {err}"
            elif code == StatusCode.ERR_INPUT_FAILED and isinstance(controller, ComputedTorque):
                why = "B^T B is singular: computed torque needs inputs whose directions B(q) are independent"
            elif code == StatusCode.ERR_STEP_UNDERFLOW:
                why += f" (h_min = {max(h_min, 16 * np.finfo(float).eps * abs(sim.t)):.3g})"
            elif code == StatusCode.ERR_MAX_STEPS:
                why += f" = {max_steps}"
            message = f"stopped at t = {sim.t:.9g}: {why}"
            break
    t = np.concatenate(ts) if ts else np.empty(0)
    Y = np.concatenate(ys) if ys else np.empty((0, ny))
    U = np.concatenate(us) if us else np.empty((0, nu))
    q, qd = Y[:, :nq], Y[:, nq:]
    if len(t):
        T, V = sys.energy(q, qd, pv)
    else:
        T = V = np.empty(0)
    accepted, rejected, evaluations = sim.counts
    res = SimulationResult(t=t, q=q, qd=qd, u=U, kinetic=T, potential=V, coordinates=list(sys.coordinates),
                           inputs=list(sys.inputs), status=status, message=message, model=sys.name)
    res.extra.update(steps=np.array(accepted), rejected=np.array(rejected), evaluations=np.array(evaluations))
    return res


def _outcome(code: int) -> tuple[Status, str]:
    """(how the run ended, why) for a status code of the C."""
    c = StatusCode.find(code)
    if c is None:
        return Status.FAILED, StatusCode.describe(code)
    try:
        return Status(c.outcome), c.message
    except ValueError:
        return Status.FAILED, c.message


def _method(method: Union[Integrator, str]) -> Integrator:
    try:
        return Integrator(getattr(method, "value", method))
    except ValueError:
        choices = ", ".join(repr(m.value) for m in Integrator)
        raise ValueError(f"unknown method {method!r}; the compiled integrators are {choices}") from None


def _parameters(sys: "CompiledModel", p: Any) -> np.ndarray:
    p2, rows = sys._params(p)
    if rows > 1:
        raise ValueError(f"simulate() takes one parameter vector; got {rows} rows")
    pv = np.ascontiguousarray(p2.reshape(-1), dtype=float).copy()
    if not np.all(np.isfinite(pv)):
        raise ValueError(f"the parameters hold inf or NaN: {pv.tolist()}")
    return pv


def _input_law(sys: "CompiledModel", u: UInput, controller: Any) -> tuple:
    """(kind, u, times, values, kp, kd, function) for the C input struct."""
    nq, nu = sys.nq, sys.nu
    none = np.empty(0)
    if controller is not None:
        if not isinstance(controller, (PD, ComputedTorque)):
            raise TypeError(f"controller must be a rodgen PD or ComputedTorque; got {type(controller).__name__}")
        if nu == 0:
            raise ValueError(f"the model {sys.name!r} has no inputs; a controller has nothing to drive")
        ref = controller.reference
        if not isinstance(ref, Reference):
            raise TypeError(f"the controller's reference must be a rodgen Reference; got {type(ref).__name__}")
        if ref.q.shape[1] != nq:
            raise ValueError(f"the reference has {ref.q.shape[1]} coordinates; the model {sys.name!r} has {nq}")
        values = ref.rows().reshape(-1)
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
        return (_COMPUTED_TORQUE, none, ref.t, values, _gains(controller.kp, nq, "ComputedTorque kp"),
                _gains(controller.kd, nq, "ComputedTorque kd"), None)
    if u is None:
        return _CONSTANT, none, none, none, none, none, None
    if isinstance(u, InputTable):
        if u.u.shape[1] != nu:
            raise ValueError(f"the InputTable has {u.u.shape[1]} inputs per row; the model {sys.name!r} has {nu}")
        return _TABLE, none, u.t, np.ascontiguousarray(u.u.reshape(-1)), none, none, None
    if callable(u):
        ufun = u

        def through_state(t: float, y: np.ndarray) -> Any:
            return ufun(t, y[:nq], y[nq:])
        return _CALLBACK, none, none, none, none, none, through_state
    return _CONSTANT, _constant(sys, u), none, none, none, none, None


def _constant(sys: "CompiledModel", u: Any) -> np.ndarray:
    a = np.asarray(u, dtype=float).reshape(-1)
    if a.size == 1 and sys.nu != 1:
        raise ValueError(f"Input 'u' has length 1; the model {sys.name!r} expects {sys.nu} inputs")
    if a.shape != (sys.nu,):
        raise ValueError(f"Input 'u' has length {a.size}; the model {sys.name!r} expects {sys.nu} inputs "
                         f"(see {sys.prefix}.h for the order).")
    return np.ascontiguousarray(a)


__all__ = ["simulate", "Integrator", "DOPRI5_MAX_STEPS"]
