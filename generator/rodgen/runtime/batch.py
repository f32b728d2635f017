"""Many trajectories of a compiled model in one call: ``sys.simulate_batch``.

    res = sys.simulate_batch(y0s, 1.0, 1e-3, p=ps, threads=2)      # (N, 2 nq) states, (N, np) parameters
    res.q[i], res.status[i]                                       # trajectory i

The N trajectories run in C (``rodgen_simulate_batch``) without the GIL, trajectory i on thread
i % threads, each exactly as ``sys.simulate`` would run it alone: the results are the same numbers for
any thread count. Initial states, parameter sets and constant inputs may be stacked (N rows) or shared
(one row); the input law is a constant, a PD law toward a Reference, or a controller written in C
(:class:`~rodgen.runtime.ccontroller.CController`, one context and memory per trajectory). Python
callables cannot run without the GIL and are rejected.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from ..contract import StatusCode
from .ccontroller import CController
from .control import PD, ComputedTorque, InputTable
from .integrate import (
    _CALLBACK,
    _METHOD,
    DOPRI5_MAX_STEPS,
    Integrator,
    _failure,
    _input_law,
    _method,
    check_span,
    rk4_rows,
)
from .result import Status

if TYPE_CHECKING:  # pragma: no cover
    from .compiled import CompiledModel

#: Rows stored per trajectory of an adaptive (DOPRI5) batch unless ``max_rows`` says otherwise.
DOPRI5_MAX_ROWS = 10_000


@dataclass
class BatchResult:
    """N trajectories of :meth:`CompiledModel.simulate_batch`.

    Attributes
    ----------
    t : (N, R) times, or (N,) with ``store="final"``.
    q, qd : (N, R, nq) coordinates and rates (N, nq with ``store="final"``).
    u : (N, R, nu) inputs at the stored states (N, nu with ``store="final"``).
        Rows past ``rows[i]`` (a trajectory that stopped early) are NaN.
    rows : (N,) rows written per trajectory.
    status : (N,) object array of :class:`Status`; ``messages`` says why each failed one stopped.
    codes : (N,) the C status codes (``rodgen.contract.StatusCode``).
    steps, evaluations : (N,) accepted steps and right-hand-side evaluations.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    rows: np.ndarray
    status: np.ndarray
    codes: np.ndarray
    messages: list[str]
    steps: np.ndarray
    evaluations: np.ndarray
    coordinates: list[str]
    inputs: list[str]
    model: str = ""
    final_only: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> np.ndarray:
        """(N,) True where the trajectory reached t_end."""
        return self.codes == int(StatusCode.OK)

    def __len__(self) -> int:
        return len(self.rows)


def _stack(sys: "CompiledModel", x: Any, name: str, width: int, what: str) -> tuple[np.ndarray, int]:
    """(C-contiguous rows, N or -1 for one shared row) of a per-trajectory argument."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"simulate_batch: {name!r} holds an entry that is not a number ({exc})") from None
    if a.ndim == 1 and a.shape[0] == width:
        return np.ascontiguousarray(a), -1
    if a.ndim == 2 and a.shape[1] == width and a.shape[0] >= 1:
        return np.ascontiguousarray(a).reshape(-1), a.shape[0]
    raise ValueError(f"simulate_batch: {name!r} has shape {a.shape}; the model {sys.name!r} expects ({width},) "
                     f"or (N, {width}) {what}")


def simulate_batch(sys: "CompiledModel", y0s: Any, t_end: float, dt: Optional[float] = None, *,
                   method: Union[Integrator, str] = Integrator.RK4, rtol: float = 1e-6, atol: float = 1e-9,
                   u: Any = None, p: Any = None, controller: Any = None, store_every: int = 1,
                   store: str = "all", max_steps: Optional[int] = None, max_rows: Optional[int] = None,
                   t0: float = 0.0, h_max: Optional[float] = None, h_min: float = 0.0,
                   threads: Optional[int] = None) -> BatchResult:
    """Run N trajectories in C on ``threads`` threads (default: every core); see the module's docstring.

    y0s : (N, 2 nq) initial states, or (2 nq,) shared by every trajectory.
    p : None (the model's defaults), a dict of overrides, (np,) shared, or (N, np) one set per trajectory.
    u : None, (nu,) constant inputs shared, or (N, nu) one constant per trajectory (with a PD controller:
        its feedforward); a CController (or pass it as ``controller``).
    controller : a :class:`PD` or :class:`ComputedTorque` toward a Reference, or a CController.
    store_every : store every k-th step (the first and the last state always), as in ``simulate``.
    store : ``"all"`` (every ``store_every``-th step) or ``"final"`` (only the final state of each
        trajectory, for summaries; t, q, qd and u lose their row axis).
    max_rows : rows stored per trajectory of a DOPRI5 batch (default 10 000); a trajectory that needs more
        stops there with status FAILED ("the output arrays are full").
    threads : number of threads (default ``os.cpu_count()``); the results do not depend on it.

    N is the number of stacked rows of y0s, p and u (those stacked must agree). A trajectory that fails
    (a non-finite start, parameter or input, a singular mass matrix, a state that blows up) stops with its
    own status; the others run to t_end. Other arguments as in :func:`rodgen.runtime.integrate.simulate`.
    """
    method = _method(method)
    nq, nu, npar, ny = sys.nq, sys.nu, sys.np, getattr(sys, "ny", 2 * sys.nq)
    t0, t_end = check_span(method, t0, t_end, dt, rtol, atol, "simulate_batch: ")
    if not isinstance(store_every, (int, np.integer)) or isinstance(store_every, bool) or store_every < 1:
        raise ValueError(f"simulate_batch: store_every must be a positive integer; got {store_every!r}")
    if store not in ("all", "final"):
        raise ValueError(f"simulate_batch: store must be 'all' or 'final'; got {store!r}")
    if threads is None:
        threads = os.cpu_count() or 1
    if not isinstance(threads, (int, np.integer)) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"simulate_batch: threads must be a positive integer; got {threads!r}")
    if max_steps is None:
        max_steps = 0 if method is Integrator.RK4 else DOPRI5_MAX_STEPS
    if max_steps < 0:
        raise ValueError(f"simulate_batch: max_steps must be positive; got {max_steps!r}")
    if h_max is not None and not h_max > 0:
        raise ValueError(f"simulate_batch: h_max must be positive; got {h_max!r}")
    if not h_min >= 0:
        raise ValueError(f"simulate_batch: h_min must be non-negative; got {h_min!r}")

    y, ny_rows = _stack(sys, y0s, "y0s", ny, "initial states [q, qd]")
    if getattr(sys, "lie_joints", None):
        sys.check_quaternions(y.reshape(-1, ny)[:, :nq], "y0s")
    if p is None:
        pv, np_rows = np.ascontiguousarray(sys._p0.reshape(-1), dtype=float), -1
    elif isinstance(p, dict):
        pv, np_rows = np.ascontiguousarray(sys.parameter_vector(p).reshape(-1), dtype=float), -1
    else:
        pv, np_rows = _stack(sys, p, "p", npar, "parameters")
    c_law = controller if isinstance(controller, CController) else u if isinstance(u, CController) else None
    u_rows: Optional[np.ndarray] = None
    nu_rows = -1
    if c_law is None and u is not None:
        if callable(u) and not isinstance(u, InputTable):
            raise TypeError("simulate_batch: u is a Python callable; a batch runs in C without the GIL and takes "
                            "constant inputs, a PD or ComputedTorque controller, or a rodgen.CController "
                            "(a controller written in C)")
        if isinstance(u, InputTable):
            raise TypeError("simulate_batch: an InputTable is shared by every trajectory: pass it to simulate(), "
                            "or give constant inputs (nu,) or (N, nu)")
        ua, nu_rows = _stack(sys, u, "u", nu, "inputs")
        if nu_rows >= 0:
            u_rows = ua
            u = None
        else:
            u = ua
    if controller is not None and not isinstance(controller, (PD, ComputedTorque, CController)):
        raise TypeError(f"simulate_batch: controller must be a rodgen PD, ComputedTorque or CController; got "
                        f"{type(controller).__name__} (Python callables cannot run in a batch)")
    stacked = {k: n for k, n in (("y0s", ny_rows), ("p", np_rows), ("u", nu_rows)) if n >= 0}
    if len(set(stacked.values())) > 1:
        desc = ", ".join(f"{k!r} has {n}" for k, n in stacked.items())
        raise ValueError(f"simulate_batch: stacked arguments must have the same number of rows: {desc}")
    n = next(iter(stacked.values())) if stacked else 1
    if u_rows is not None and isinstance(controller, ComputedTorque):
        raise ValueError("simulate_batch: a ComputedTorque controller sets all inputs; u must be None")
    if u_rows is not None and c_law is not None:
        raise ValueError("simulate_batch: a CController sets all inputs; u must be None")

    p_first = pv[:npar] if np_rows >= 0 else pv
    kind, uc, times, values, kp, kd, fn = _input_law(sys, u, controller, np.ascontiguousarray(p_first), t0,
                                                     y[:ny])
    contexts = None
    bindings: list[Any] = []
    fn_address = None
    if kind == _CALLBACK:
        if c_law is None:  # pragma: no cover - callables are rejected above
            raise TypeError("simulate_batch: Python callables cannot run in a batch")
        address = sys._m.address()
        for i in range(n):
            pi = pv[i * npar:(i + 1) * npar] if np_rows >= 0 else pv
            bindings.append(c_law.bind(address, pi))
        contexts = [b.input_function()[1] for b in bindings]
        fn_address = c_law.address

    final_only = store == "final"
    if method is Integrator.RK4:
        assert dt is not None
        capacity = rk4_rows(t0, t_end, float(dt), store_every)     # exactly the rows of simulate()
    else:
        capacity = DOPRI5_MAX_ROWS if max_rows is None else int(max_rows)
        if capacity < 2:
            raise ValueError(f"simulate_batch: max_rows must be at least 2; got {max_rows!r}")
    cap = 1 if final_only else capacity
    # filled by the threads, the rows a trajectory does not reach with NaN
    t_out, y_out, u_out = np.empty(n * cap), np.empty(n * cap * ny), np.empty(n * cap * nu)
    rows = np.zeros(n, dtype=np.dtype("l"))
    codes = np.zeros(n, dtype=np.intc)
    steps_out = np.zeros(n, dtype=np.dtype("l"))
    evals = np.zeros(n, dtype=np.dtype("l"))
    pv, y = np.array(pv, dtype=float), np.array(y, dtype=float)  # writable copies the runtime holds
    batch = sys._runtime.Batch(sys._m, _METHOD[method.value], t0, t_end, float(dt or 0.0), float(rtol),
                               float(atol), float(h_min), float(h_max or 0.0), int(max_steps), int(store_every),
                               kind, uc, times, values, kp, kd, fn_address, n, pv, y, u_rows, contexts,
                               int(capacity), final_only, t_out, y_out, u_out, rows, codes, steps_out, evals)
    batch.run(int(threads))
    del batch

    status = np.empty(n, dtype=object)
    messages = []
    law = controller if controller is not None else c_law
    for i, code in enumerate(codes.tolist()):
        if code == StatusCode.OK:
            status[i], msg = Status.SUCCESS, f"reached t_end = {t_end:g}"
        elif code == StatusCode.ERR_OPTIONS:
            raise ValueError(f"the compiled integrator of {sys.name!r} rejected its options")
        else:
            st, why = _failure(code, None, law)
            if code == StatusCode.SIM_FULL:
                st, why = Status.FAILED, f"the {capacity} rows of max_rows are full"
            elif code == StatusCode.ERR_MAX_STEPS:
                why += f" = {max_steps}"
            status[i] = st
            last = rows[i] - 1
            tt = t_out[i * cap + last] if rows[i] else t0
            msg = f"trajectory {i} stopped at t = {tt:.9g}: {why}"
        messages.append(msg)
    shape = (n,) if final_only else (n, cap)
    Y: np.ndarray = y_out.reshape(shape + (ny,))
    t: np.ndarray = t_out.reshape(shape)
    U: np.ndarray = u_out.reshape(shape + (nu,))
    q, qd = Y[..., :nq], Y[..., nq:]
    res = BatchResult(t=t, q=q, qd=qd, u=U, rows=rows, status=status, codes=codes, messages=messages,
                      steps=steps_out, evaluations=evals, coordinates=list(sys.coordinates),
                      inputs=list(sys.inputs), model=sys.name, final_only=final_only)
    if bindings:
        res.extra["controller_state"] = np.array([b.state.copy() for b in bindings])
    return res


__all__ = ["BatchResult", "simulate_batch", "DOPRI5_MAX_ROWS"]
