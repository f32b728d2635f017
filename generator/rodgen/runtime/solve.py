"""Forward simulation with SciPy's integrators on a model's right-hand side.

:func:`solve` integrates ``y' = rhs(t, y)`` with an explicit or implicit
SciPy method (step by step, so that a long run reports progress and a run
that fails keeps what it computed) and returns a :class:`SimulationResult`
sampled every ``dt``. It works with a compiled model (through its C
``rhs``) and with a :class:`~rodgen.symbolic.numeric.NumericModel`. Each
step calls the model from Python; the compiled integrators of a compiled
model (``sys.simulate``) avoid that overhead for long runs.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

import numpy as np

from .progress import Progress
from .result import SimulationResult, Status

SCIPY_METHODS = ("RK45", "DOP853", "RK23", "Radau", "BDF", "LSODA")


def solve(sys: Any, y0: Any, t_end: float, *, dt: float, u: Union[None, np.ndarray, Callable[..., Any]] = None,
          p: Any = None, method: str = "DOP853", rtol: float = 1e-8, atol: float = 1e-10,
          progress: Optional[bool] = None) -> SimulationResult:
    """Integrate from t = 0 to ``t_end`` and sample every ``dt``.

    Parameters
    ----------
    sys : a compiled model or a NumericModel.
    y0 : (2 nq,) initial state [q, qd].
    u : inputs: None (zero), a constant (nu,) array, or a callable ``u(t, q, qd) -> (nu,)`` (or ``u(t, y)``;
        see :mod:`rodgen.runtime.callables`).
    method : one of :data:`SCIPY_METHODS`.
    progress : show a progress bar (default: when stderr is a terminal).

    Returns
    -------
    SimulationResult; on a failure (non-finite state, singular mass matrix,
    step size too small) ``status`` says why and the arrays stop at the last
    sample reached.
    """
    from scipy import integrate
    if method not in SCIPY_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(SCIPY_METHODS)}")
    if not dt > 0 or not t_end > 0:
        raise ValueError(f"t_end and dt must be positive, got t_end={t_end!r}, dt={dt!r}")
    if any(getattr(b, "kind", None) == "friction" for b in getattr(sys, "constraints", None) or []):
        raise ValueError(f"the model {getattr(sys, 'name', '')!r} has dry friction with stiction, which only the "
                         f"hybrid simulation of a compiled model runs (sys.simulate(y0, t_end, dt)); SciPy's "
                         f"integrators on the right-hand side would ignore it")
    nq, nu = int(sys.nq), len(sys.inputs)
    y0 = np.asarray(y0, dtype=float).reshape(-1)
    if y0.shape != (2 * nq,):
        raise ValueError(f"y0 has shape {y0.shape}; the model expects (2 nq,) = ({2 * nq},) = [q, qd]")
    t_eval = np.arange(0.0, t_end + 0.5 * dt, dt)
    uu: Any = u
    if callable(u):      # the one rule: u(t, q, qd) or u(t, y), checked once at the initial state
        from .callables import input_function
        uu = input_function(u, nq=nq, inputs=list(sys.inputs), model=str(getattr(sys, "name", "")), t0=0.0, y0=y0)
    elif u is not None:
        uu = np.asarray(u, dtype=float).reshape(nu)
    fun = sys.ode(u=uu, p=p)
    solver = getattr(integrate, method)(fun, 0.0, y0, float(t_eval[-1]), rtol=rtol, atol=atol)
    ys = [y0.copy()]
    k = 1
    status, message = Status.SUCCESS, "reached t_end"
    with Progress(total=float(t_eval[-1]), desc=f"simulating {getattr(sys, 'name', '')}", enable=progress) as bar:
        last = 0.0
        while solver.status == "running" and k < len(t_eval):
            try:
                msg = solver.step()
            except (ArithmeticError, np.linalg.LinAlgError) as exc:
                text = str(exc)
                status = Status.SINGULAR_MASS if ("positive definite" in text or "singular" in text.lower()) \
                    else Status.NONFINITE
                message = f"stopped at t = {solver.t:.6g}: {text}"
                break
            if solver.status == "failed":
                status, message = Status.STEP_UNDERFLOW, f"stopped at t = {solver.t:.6g}: {msg}"
                break
            if not np.all(np.isfinite(solver.y)):
                status, message = Status.NONFINITE, f"the state is not finite at t = {solver.t:.6g}"
                break
            if k < len(t_eval) and t_eval[k] <= solver.t:
                dense = solver.dense_output()
                while k < len(t_eval) and t_eval[k] <= solver.t:
                    ys.append(np.asarray(dense(t_eval[k]), dtype=float))
                    k += 1
            bar.update(solver.t - last)
            last = solver.t
    Y = np.array(ys)
    t = t_eval[: len(Y)]
    q, qd = Y[:, :nq], Y[:, nq:]
    if u is None:
        U = np.zeros((len(t), nu))
    elif callable(uu):
        U = np.array([uu(tk, yk) for tk, yk in zip(t, Y)]).reshape(len(t), nu)
    else:
        U = np.tile(uu, (len(t), 1))
    T, V = sys.energy(q, qd, p)
    return SimulationResult(t=t, q=q, qd=qd, u=U, kinetic=T, potential=V, coordinates=list(sys.coordinates),
                            inputs=list(sys.inputs), status=status, message=message,
                            model=str(getattr(sys, "name", "")))


__all__ = ["solve", "SCIPY_METHODS"]
