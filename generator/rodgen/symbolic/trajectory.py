"""Prescribed motions given as SymPy expressions of time, turned into numbers before a run.

A motion item (:mod:`rodgen.runtime.trajectory`) may be a SymPy expression of
one time symbol. :func:`numeric_motion` differentiates such an expression
exactly, twice, and replaces it with the triple ``(value, rate, acceleration)``
of NumPy callables ``f(t: ndarray) -> ndarray`` (a constant expression becomes
a float). The runtime consumes these and does no symbolic work.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Union

import numpy as np
import sympy as sp

TimeFunctions = tuple[Callable[[np.ndarray], np.ndarray], ...]


def is_symbolic(x: Any) -> bool:
    """Whether ``x`` is a SymPy object (an expression or a matrix)."""
    return isinstance(x, (sp.Basic, sp.MatrixBase))


def time_functions(expr: Any, what: str = "q", name: str = "") -> Union[float, TimeFunctions]:
    """A float (constant expression) or (value, rate, acceleration) callables of one SymPy expression of time.

    ``what`` and ``name`` (the coordinate) name the place in error messages.
    """
    expr = sp.sympify(expr)
    free = sorted(expr.free_symbols, key=str)
    place = f"{what} of {name!r}" if name else what
    if len(free) > 1:
        raise ValueError(f"{place}: expression {expr} has several free symbols "
                         f"({', '.join(map(str, free))}); it must depend on time only")
    if not free:
        try:
            return float(expr)
        except TypeError:
            raise ValueError(f"{place}: expression {expr} is not a real number") from None
    ts = free[0]
    return tuple(_broadcast(sp.lambdify(ts, sp.diff(expr, ts, k), "numpy")) for k in range(3))


def _broadcast(f: Callable[[Any], Any]) -> Callable[[np.ndarray], np.ndarray]:
    """f(t) as a float array of t's shape (a derivative that is a constant broadcasts)."""
    def g(t: np.ndarray) -> np.ndarray:
        tt = np.asarray(t, dtype=float)
        return np.broadcast_to(np.asarray(f(tt), dtype=float), tt.shape).copy()
    return g


def numeric_motion(spec: Any, what: str = "q", names: Any = None) -> Any:
    """``spec`` with every SymPy expression replaced by :func:`time_functions` (lists, tuples, mappings
    and SymPy matrices walked one level deep, as motion items are given); other items unchanged."""
    names = list(names) if names is not None else []

    def item(x: Any, k: int, key: Any = None) -> Any:
        name = str(key) if key is not None else (names[k] if k < len(names) else "")
        return time_functions(x, what, name) if isinstance(x, sp.Basic) else x

    if isinstance(spec, sp.MatrixBase):
        spec = list(spec)
    if isinstance(spec, Mapping):
        return {key: item(x, k, key) for k, (key, x) in enumerate(spec.items())}
    if isinstance(spec, (list, tuple)):
        return [item(x, k) for k, x in enumerate(spec)]
    if isinstance(spec, sp.Basic):
        return [item(spec, 0)]
    return spec


__all__ = ["numeric_motion", "time_functions", "is_symbolic"]
