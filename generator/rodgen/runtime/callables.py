"""The one rule for input functions, and the messages for arguments that do not fit a model.

Every place that takes a Python function for the inputs (``simulate(u=...)``,
``ode(u=...)``, ``rodgen.runtime.solve.solve(u=...)``, the hybrid simulation)
reads it the same way:

* ``u(t, q, qd) -> (nu,)`` is the form: time, coordinates, rates;
* ``u(t, y) -> (nu,)`` with ``y = [q, qd]`` is accepted too, when the function takes exactly
  two positional arguments (the form SciPy's right-hand sides use);
* anything else (one argument, four required ones) is a TypeError at once.

The function is called once at the start, at the initial time and state, and its result
checked (nu numbers, finite), so a wrong function fails before the run with a message naming
the model's inputs, not as a failed status from the integrator. A function that raises is left
to the run, which ends with status ``failed`` and the exception's message (and the samples up to
then).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

import numpy as np

InputFunction = Callable[[float, np.ndarray], np.ndarray]

#: The result of a first call that raised (or was not made).
_RAISED = object()

#: How many names a message lists before it shortens the list.
NAMES_SHOWN = 12


def names_text(names: Sequence[str]) -> str:
    """``a, b, c`` (shortened after :data:`NAMES_SHOWN` names)."""
    names = list(names)
    if not names:
        return "none"
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f", ... ({len(names)} in all)" if len(names) > NAMES_SHOWN else "")


def arity(fn: Callable[..., Any]) -> int:
    """3 for a function read as ``u(t, q, qd)``, 2 for ``u(t, y)``; raises TypeError for anything else."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):      # a builtin without a signature: the documented form
        return 3
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    required_kw = [p for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    if not required_kw and len(required) <= 3 and (len(positional) >= 3 or varargs):
        return 3
    if not required_kw and len(required) <= 2 and len(positional) == 2:
        return 2
    name = getattr(fn, "__name__", type(fn).__name__)
    raise TypeError(f"the input function {name}{sig} must take (t, q, qd) (or (t, y) with y = [q, qd]) and return "
                    f"the inputs")


def input_function(u: Callable[..., Any], *, nq: int, inputs: Sequence[str], model: str, t0: float = 0.0,
                   y0: Optional[np.ndarray] = None, argument: str = "u") -> InputFunction:
    """``u`` as a function of (t, y) returning a (nu,) float array; its signature is checked here, and its
    result once at (t0, y0) when ``y0`` is given (else at every call, as always)."""
    nu = len(inputs)
    if arity(u) == 3:
        def through_state(t: float, y: np.ndarray) -> Any:
            return u(t, y[:nq], y[nq:])
        fn: Callable[[float, np.ndarray], Any] = through_state
    else:
        fn = u
    first: Any = _RAISED
    if y0 is not None:
        try:
            first = fn(float(t0), np.array(y0, dtype=float).reshape(-1))
        except Exception:   # noqa: BLE001 - the run calls it again and ends with its message, as documented
            first = _RAISED
    if first is not _RAISED:
        checked = input_values(first, nu=nu, inputs=inputs, model=model,
                               what=f"the input function {argument} at t = {t0:g}")
        if not np.all(np.isfinite(checked)):
            raise ValueError(f"the input function {argument} returned {checked.tolist()} at t = {t0:g}: "
                             f"not finite")

    def f(t: float, y: np.ndarray) -> np.ndarray:
        return input_values(fn(t, y), nu=nu, inputs=inputs, model=model, what=f"the input function {argument}")
    return f


def input_values(x: Any, *, nu: int, inputs: Sequence[str], model: str, what: str) -> np.ndarray:
    """``x`` as a (nu,) float64 array; a clear error naming ``what`` and the model's inputs otherwise."""
    try:
        a = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} returned {x!r}, not numbers ({exc})") from None
    if a.shape[0] != nu:
        raise ValueError(f"{what} returned {a.shape[0]} values; the model {model!r} has {nu} inputs "
                         f"({names_text(inputs)})")
    return a


__all__ = ["arity", "input_function", "input_values", "names_text", "InputFunction"]
