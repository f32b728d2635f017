"""Checked model expressions -> SymPy (no ``eval``, no ``sympify`` of text)."""
from __future__ import annotations

from typing import Mapping, Union

import sympy as sp

from ..model.expr import Expression, fold


def _atan2(y: sp.Expr, x: sp.Expr) -> sp.Expr:
    """atan2 as the model stage (Python's math) and C evaluate it: atan2(0, 0) = 0, where SymPy gives nan
    (and a raw TypeError once that nan is an argument of another atan2)."""
    if y == 0 and x == 0:
        return sp.Integer(0)
    return sp.atan2(y, x)


_FUNCS = {"sqrt": sp.sqrt, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log,
          "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "atan2": _atan2, "abs": sp.Abs,
          "sign": sp.sign, "max": sp.Max, "min": sp.Min, "tanh": sp.tanh}


def to_sympy(expr: Expression, symbols: Mapping[str, sp.Symbol]) -> sp.Expr:
    """Convert a checked :class:`Expression` with the given name -> Symbol map."""
    assert expr.tree is not None, "expression was not parsed"
    return sp.sympify(fold(expr.tree, _number, lambda n: sp.pi if n == "pi" else symbols[n],
                           lambda fn, args: _FUNCS[fn](*args)))


def _number(v: Union[int, float]) -> sp.Expr:
    if isinstance(v, int):
        return sp.Integer(v)
    # exact rational of the decimal text: 0.1 -> 1/10 (prints as in the file, evaluates identically)
    return sp.Rational(repr(float(v)))
