"""The C99 expression printer of the code stage.

Every symbol is printed through a lookup table (``q[2]``, ``p[5]``, ``t17``),
so no name from a model reaches an expression. Numbers are printed exactly
(``repr`` of the double, which round-trips), constants such as pi as numbers
(``M_PI`` is not C99), and small integer powers as products.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import sympy as sp
from sympy.printing.c import C99CodePrinter

from ..errors import CodegenError


def c_double(value: float) -> str:
    """A C double literal that round-trips exactly, e.g. ``0.1``, ``1e-05``, ``3.0``."""
    x = float(value)
    if not math.isfinite(x):
        raise CodegenError(f"cannot print the non-finite number {x!r} into C")
    text = repr(x)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


class SlotPrinter(C99CodePrinter):
    """C99 printer that maps symbols to array slots and prints numbers exactly.

    Parameters
    ----------
    slots : mapping Symbol -> C text (``"q[0]"``, ``"t3"``, ``"w[7]"``).
    routine : the name of the routine being printed, for error messages.
    groups : names of the argument groups the routine takes, for error messages.
    """

    printmethod = "_rodgen_ccode"

    def __init__(self, slots: Mapping[sp.Basic, str], *, routine: str = "", groups: str = "",
                 real: str = "double") -> None:
        # order "none": terms and factors in SymPy's canonical argument order (deterministic, by structure),
        # not re-sorted for display, which took a quarter of the code stage's time
        settings: dict[str, Any] = {"strict": True, "order": "none"}
        if real == "float":    # sinf, sqrtf, ...: SymPy's suffix of float32 math functions
            from sympy.codegen.ast import float32
            from sympy.codegen.ast import real as real_type
            settings["type_aliases"] = {real_type: float32}
        super().__init__(settings)
        self.slots = slots
        self.routine = routine
        self.groups = groups
        self._denominators: set[sp.Basic] = set()
        #: "f" for float code: the suffix of literals and of the functions printed here (sqrt, pow, cbrt)
        self.suffix = "f" if real == "float" else ""

    def number(self, value: float) -> str:
        """A literal of the routine's type: ``0.5`` in double code, ``0.5f`` in float code."""
        return c_double(value) + self.suffix

    def _print(self, expr: Any, **kwargs: Any) -> str:
        if isinstance(expr, sp.Basic):
            found = self.slots.get(expr)
            if found is not None:
                return found
        return super()._print(expr, **kwargs)

    # -- symbols -------------------------------------------------------------
    def _print_Symbol(self, expr: sp.Symbol) -> str:
        where = f" of routine '{self.routine}'" if self.routine else ""
        raise CodegenError(f"Symbol '{expr}' appears in the equations{where} but in none of the argument "
                           f"groups ({self.groups or 'q, qd, u, p'}).")

    _print_Dummy = _print_Symbol

    def _print_AppliedUndef(self, expr: sp.Basic) -> str:
        raise CodegenError(f"the function '{expr}' in the equations is not a coordinate, input or parameter")

    # -- numbers -------------------------------------------------------------
    def _print_Float(self, expr: sp.Float) -> str:
        return self.number(float(expr))

    def _print_Rational(self, expr: sp.Rational) -> str:
        return f"{self.number(int(expr.p))}/{self.number(int(expr.q))}"

    def _print_Integer(self, expr: sp.Integer) -> str:
        return str(int(expr))

    def _print_NumberSymbol(self, expr: sp.Basic) -> str:
        return self.number(float(expr))

    _print_Pi = _print_NumberSymbol
    _print_Exp1 = _print_NumberSymbol
    _print_EulerGamma = _print_NumberSymbol
    _print_GoldenRatio = _print_NumberSymbol
    _print_Catalan = _print_NumberSymbol

    def _print_Infinity(self, expr: sp.Basic) -> str:
        raise CodegenError("the equations contain an infinite value (division by zero in the model?)")

    _print_NegativeInfinity = _print_Infinity
    _print_ComplexInfinity = _print_Infinity

    def _print_NaN(self, expr: sp.Basic) -> str:
        raise CodegenError("the equations contain NaN (an undefined expression in the model?)")

    # -- powers --------------------------------------------------------------
    def _print_Mul(self, expr: sp.Mul, **kwargs: Any) -> str:
        # the factors SymPy will print as a denominator, for parenthesize below
        saved = self._denominators
        self._denominators = {sp.Pow(a.base, -a.exp) for a in expr.args
                              if a.is_Pow and a.exp.is_number and a.exp.is_negative}
        try:
            return str(super()._print_Mul(expr, **kwargs))
        finally:
            self._denominators = saved

    def parenthesize(self, item: Any, level: int, strict: bool = False) -> str:
        """As SymPy's, and a denominator printed as a product (``x*x``, ``x*sqrt(x)``) in parentheses: SymPy
        takes a power for an atom of a product, so ``y/x**2`` would print as ``y/x*x``."""
        text = str(super().parenthesize(item, level, strict))
        if item in self._denominators and "*" in text and not text.startswith("("):
            return f"({text})"
        return text

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:  # noqa: ARG002
        base, e = expr.base, expr.exp
        simple = base.is_Atom or base in self.slots
        b = self._print(base) if simple else f"({self._print(base)})"
        one, f = self.number(1.0), self.suffix
        if e.is_Integer:
            k = int(e)
            if simple and 2 <= abs(k) <= 4:
                prod = "*".join([b] * abs(k))
                return prod if k > 0 else f"{one}/({prod})"
            if k == -1:
                return f"{one}/{b}"
        if e == sp.S.Half:
            return f"sqrt{f}({self._print(base)})"
        if e == -sp.S.Half:
            return f"{one}/sqrt{f}({self._print(base)})"
        if e == sp.Rational(3, 2) and simple:
            return f"{b}*sqrt{f}({b})"
        if e == sp.Rational(1, 3):
            return f"cbrt{f}({self._print(base)})"
        exp_text = self._print(e) if e.is_Integer else self.number(float(e)) if e.is_Number else self._print(e)
        return f"pow{f}({self._print(base)}, {exp_text})"


def count_ops(expr: sp.Basic) -> int:
    """A cheap count of floating-point operations (adds, multiplies, calls) in an expression."""
    n = 0
    for node in sp.preorder_traversal(expr):
        if node.is_Add or node.is_Mul:
            n += len(node.args) - 1
        elif node.is_Pow:
            n += 1
        elif node.is_Function:
            n += 1
    return n
