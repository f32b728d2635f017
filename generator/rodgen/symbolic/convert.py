"""Checked model expressions -> SymPy (no ``eval``, no ``sympify`` of text)."""
from __future__ import annotations

import ast
from typing import Mapping

import sympy as sp

from ..model.expr import Expression

_FUNCS = {"sqrt": sp.sqrt, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log,
          "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2, "abs": sp.Abs}


def to_sympy(expr: Expression, symbols: Mapping[str, sp.Symbol]) -> sp.Expr:
    """Convert a checked :class:`Expression` with the given name -> Symbol map."""
    assert expr.tree is not None, "expression was not parsed"
    return _conv(expr.tree, symbols)


def _conv(node: ast.AST, symbols: Mapping[str, sp.Symbol]) -> sp.Expr:
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, int):
            return sp.Integer(v)
        # exact rational of the decimal text: 0.1 -> 1/10 (prints as in the file, evaluates identically)
        return sp.Rational(repr(float(v)))
    if isinstance(node, ast.Name):
        if node.id == "pi":
            return sp.pi
        return symbols[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _conv(node.left, symbols), _conv(node.right, symbols)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        return a ** b
    if isinstance(node, ast.UnaryOp):
        v = _conv(node.operand, symbols)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return _FUNCS[node.func.id](*[_conv(a, symbols) for a in node.args])
    raise AssertionError(f"unchecked node {type(node).__name__}")
