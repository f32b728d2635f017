"""The C99 expression printer of the code stage.

Every symbol is printed through a lookup table (``q[2]``, ``p[5]``, ``t17``),
so no name from a model reaches an expression. Numbers are printed exactly
(``repr`` of the double, which round-trips), constants such as pi as numbers
(``M_PI`` is not C99), and small integer powers as products. An integer is
printed as a C integer only below 2**53 (exact, and far inside ``long long``);
a larger one, and a rational whose numerator or denominator is that large,
as the double nearest to it (Python's correctly rounded int division: 1/10**400
is ``0.0``, 10**20 + 1 is ``1e+20``, as SymPy evaluates them in double); a
constant beyond the range of a double is a :class:`CodegenError`.

Sums, products, powers, numbers and the common functions are printed by a
direct walk (:meth:`SlotPrinter.doprint`), which is many times faster than
SymPy's generic printer on long straight-line code; anything else goes
through SymPy's C99 printer with the same slot lookup.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Union

import sympy as sp
from sympy.printing.c import C99CodePrinter

from ..errors import CodegenError
from ..model.expr import terminating_decimal

#: Integers below this magnitude are printed as C integers (exact in a double and in ``long long``).
EXACT_INT = 2 ** 53


def c_double(value: Union[float, int]) -> str:
    """A C double literal that round-trips exactly, e.g. ``0.1``, ``1e-05``, ``3.0``; an int is rounded to the
    nearest double."""
    try:
        x = float(value)
    except OverflowError:
        raise CodegenError(f"the constant {_short(value)} is beyond the range of a double (about 1.8e308): "
                           f"is a number of the model too large?") from None
    if not math.isfinite(x):
        raise CodegenError(f"cannot print the non-finite number {x!r} into C")
    text = repr(x)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _short(value: Union[float, int]) -> str:
    """A number for a message: a huge int as ``1.2e+616``, not its 617 digits."""
    if isinstance(value, int) and abs(value) >= EXACT_INT:
        digits = str(abs(value))
        return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:4]}e+{len(digits) - 1}"
    return repr(value)


def c_rational(p: int, q: int) -> float:
    """p/q rounded once to the nearest double (0.0 or a subnormal below the range); a CodegenError above it."""
    try:
        return p / q
    except OverflowError:
        raise CodegenError(f"the constant {_short(p // q)} is beyond the range of a double (about 1.8e308): "
                           f"is a number of the model too large?") from None


#: The exact decimal of p/q where a model file wrote a decimal (7/200 -> ``0.035``), else None: the symbolic
#: and code stages' rule for printed numbers (:func:`rodgen.model.expr.terminating_decimal`), used for C
#: literals too. A C compiler rounds the literal to the nearest double, as it rounds the division of the two
#: exact doubles, so the value is the same.
decimal_literal = terminating_decimal


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

    def number(self, value: Union[float, int]) -> str:
        """A literal of the routine's type: ``0.5`` in double code, ``0.5f`` in float code."""
        try:
            return c_double(value) + self.suffix
        except CodegenError as exc:
            raise CodegenError(f"{exc}{self._where()}") from None

    def _where(self) -> str:
        return f" (in routine '{self.routine}')" if self.routine else ""

    def _print(self, expr: Any, **kwargs: Any) -> str:
        if isinstance(expr, sp.Basic):
            found = self.slots.get(expr)
            if found is not None:
                return found
        return super()._print(expr, **kwargs)

    # -- the direct walk ----------------------------------------------------------
    def doprint(self, expr: Any, assign_to: Optional[Any] = None) -> str:  # type: ignore[override]
        if assign_to is not None or not isinstance(expr, sp.Basic):
            return str(super().doprint(expr, assign_to))
        return self._text(expr)[0]

    def _text(self, expr: sp.Basic) -> tuple[str, int]:
        """(C text, precedence) of an expression (see ``_ATOM`` .. ``_ADD``)."""
        found = self.slots.get(expr)
        if found is not None:
            return found, _ATOM
        if expr.is_Symbol:
            return self._print_Symbol(expr), _ATOM  # raises
        if expr.is_Add:
            return self._text_add(expr), _ADD
        if expr.is_Mul:
            return self._text_mul(expr)
        if expr.is_Pow:
            return self._text_pow(expr)
        if expr.is_Integer:
            text = self._print_Integer(expr)
            return text, (_NEG if text.startswith("-") else _ATOM)
        if expr.is_Float:
            text = self.number(float(expr))
            return text, (_NEG if text.startswith("-") else _ATOM)
        if expr.is_Rational:
            text = self._print_Rational(expr)
            return text, (_MUL if "/" in text else _NEG if text.startswith("-") else _ATOM)
        if expr.is_Function and not expr.is_Derivative:
            name = _FUNCTIONS.get(type(expr).__name__)
            if name is not None:
                return f"{name}{self.suffix}({', '.join(self._text(a)[0] for a in expr.args)})", _ATOM
        text = str(super().doprint(expr))
        return text, (_ATOM if expr.is_Atom or expr.is_Function else _ADD)

    def _text_add(self, expr: sp.Basic) -> str:
        out: list[str] = []
        for k, term in enumerate(expr.args):
            t, prec = self._text(term)
            if prec <= _ADD:
                t = f"({t})"
            if k == 0:
                out.append(t)
            elif t.startswith("-"):
                out.append(f" - {t[1:]}")
            else:
                out.append(f" + {t}")
        return "".join(out)

    def _text_mul(self, expr: sp.Basic) -> tuple[str, int]:
        args = list(expr.args)
        sign = ""
        if args and args[0].is_Number:
            c = args.pop(0)
            if c.is_negative:
                sign, c = "-", -c
            if c != 1:
                args.insert(0, c)
        num: list[str] = []
        den: list[tuple[str, int]] = []
        for f in args:
            if f.is_Pow and f.exp.is_Rational and f.exp.is_negative:
                den.append(self._text(f.base) if f.exp == -1 else self._text_pow(f, -f.exp))
                continue
            t, prec = self._text(f)
            if prec <= _MUL or t.startswith("-"):
                t = f"({t})"
            num.append(t)
        text = "*".join(num) if num else self.number(1.0)
        if len(den) == 1:
            t, prec = den[0]
            text += "/" + t if prec == _ATOM else f"/({t})"
        elif den:
            parts = [f"({t})" if prec <= _MUL or t.startswith("-") else t for t, prec in den]
            text += "/(" + "*".join(parts) + ")"
        return sign + text, (_NEG if sign else _MUL if den or len(num) > 1 else
                             _POWPROD if "*" in text else _ATOM)

    def _text_pow(self, expr: sp.Basic, exponent: Optional[sp.Basic] = None) -> tuple[str, int]:
        """base**exponent (default: the power's own exponent), by the rules of :meth:`_print_Pow`."""
        base, e = expr.base, expr.exp if exponent is None else exponent
        one, f = self.number(1.0), self.suffix
        simple = base.is_Atom or base in self.slots
        if simple:
            b, bprec = self._text(base)
            if bprec < _ATOM:
                b = f"({b})"
        if e.is_Integer:
            k = int(e)
            if simple and 2 <= abs(k) <= 4:
                prod = "*".join([b] * abs(k))
                return (prod, _POWPROD) if k > 0 else (f"{one}/({prod})", _MUL)
            if k == -1:
                return (f"{one}/{b}", _MUL) if simple else (f"{one}/({self._text(base)[0]})", _MUL)
        if e == sp.S.Half:
            return f"sqrt{f}({self._text(base)[0]})", _ATOM
        if e == -sp.S.Half:
            return f"{one}/sqrt{f}({self._text(base)[0]})", _MUL
        if e == sp.Rational(3, 2) and simple:
            return f"{b}*sqrt{f}({b})", _POWPROD
        if e == sp.Rational(1, 3):
            return f"cbrt{f}({self._text(base)[0]})", _ATOM
        exp_text = self._text(e)[0] if e.is_Integer else self.number(float(e)) if e.is_Number else self._text(e)[0]
        return f"pow{f}({self._text(base)[0]}, {exp_text})", _ATOM

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
        p, q = int(expr.p), int(expr.q)
        text = decimal_literal(p, q)
        if text is not None:
            return text + self.suffix      # the decimal the model wrote; C rounds it to the same double as p/q
        if abs(p) < EXACT_INT and q < EXACT_INT:
            return f"{self.number(p)}/{self.number(q)}"      # both exact: C's division rounds once
        try:
            return self.number(c_rational(p, q))
        except CodegenError as exc:
            raise CodegenError(f"{exc}{self._where()}") from None

    def _print_Integer(self, expr: sp.Integer) -> str:
        k = int(expr)
        return str(k) if abs(k) < EXACT_INT else self.number(k)

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


#: Precedence of printed C text: a name, number or call; a product of equal factors (``x*x``, safe as a
#: factor, not as a divisor); a product or quotient; a text with a leading minus; a sum.
_ATOM, _POWPROD, _MUL, _NEG, _ADD = 5, 4, 3, 2, 1

#: SymPy functions printed as the C99 <math.h> function of that name (with the suffix ``f`` in float code).
_FUNCTIONS = {name: name for name in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                                      "tanh", "asinh", "acosh", "atanh", "exp", "log", "floor", "erf", "erfc")}
_FUNCTIONS.update(Abs="fabs", ceiling="ceil")


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
