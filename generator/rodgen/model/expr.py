"""Arithmetic expressions in model files, parsed without ``eval``.

A numeric field of a model may be a number, the name of a parameter, or an
arithmetic expression of parameters: ``"m_thigh + 0.5*m_knee"``,
``"l0/2"``, ``"sqrt(I/m)"``, ``"pi/2"``. The text is parsed with :mod:`ast`
and only the following is accepted: numbers, names, ``+ - * / **``, unary
``+ -``, parentheses and calls of the functions in :data:`FUNCTIONS`.
Anything else (attribute access, subscripts, strings, lambdas, comparisons,
keyword arguments...) is refused with :class:`ExpressionError`.

Sizes are bounded so that no expression can make a later stage hang or
recurse out: at most :data:`MAX_LENGTH` characters and :data:`MAX_DEPTH`
levels of nesting; a constant exponent at most :data:`MAX_EXPONENT` in
magnitude; the exact (rational) values the symbolic stage computes from the
constants at most about :data:`MAX_BITS` bits (``2**2**2**2**99``,
``(1/3)**900**9`` are refused, not computed).

This module does not use SymPy (the model stage never does); the symbolic
stage turns the checked tree into a SymPy expression.
"""
from __future__ import annotations

import ast
import math
import operator
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Optional, Union

#: Functions allowed in expressions, with their number of arguments.
FUNCTIONS: dict[str, int] = {
    "sqrt": 1, "sin": 1, "cos": 1, "tan": 1, "exp": 1, "log": 1,
    "asin": 1, "acos": 1, "atan": 1, "atan2": 2, "abs": 1, "sign": 1, "max": 2, "min": 2, "tanh": 1,
}
#: Names with a fixed meaning that need no definition.
CONSTANTS: dict[str, float] = {"pi": math.pi}

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_UNARY = (ast.UAdd, ast.USub)
MAX_LENGTH = 500
MAX_DEPTH = 60
MAX_EXPONENT = 100
MAX_BITS = 4096


class ExpressionError(ValueError):
    """An expression is not arithmetic of known names."""


@dataclass(frozen=True)
class Expression:
    """A checked arithmetic expression.

    Attributes
    ----------
    text : str
        The source text, stripped.
    names : tuple of str
        The free names it uses (parameters), sorted, constants excluded.
    """

    text: str
    names: tuple[str, ...] = field(default=())
    tree: ast.expr | None = field(default=None, compare=False, repr=False)

    def evaluate(self, values: Mapping[str, float]) -> float:
        """Numeric value with the given parameter values.

        Raises ZeroDivisionError, ValueError (outside a function's domain) or
        OverflowError where the arithmetic does; the model's validation turns
        them into a ModelError naming the field.
        """
        assert self.tree is not None
        return float(_evaluate(self.tree, values))

    def __str__(self) -> str:
        return self.text


Value = Union[float, int, str, Expression]


def terminating_decimal(p: int, q: int) -> Optional[str]:
    """The exact decimal text of p/q (lowest terms) when q > 9 has no prime factors but 2 and 5 and the text
    has at most 17 significant digits (a number a file wrote as a decimal: 7/200 -> ``0.035``); else None.
    Halves, quarters and fifths stay fractions."""
    if q < 10:
        return None
    k, power = q, {2: 0, 5: 0}
    for f in power:
        while k % f == 0:
            k //= f
            power[f] += 1
    if k != 1:
        return None
    places = max(power.values())
    digits = str(abs(p) * 10 ** places // q).rjust(places + 1, "0")
    if len(digits.lstrip("0")) > 17:
        return None
    text = f"{digits[:-places]}.{digits[-places:]}".rstrip("0")
    return ("-" if p < 0 else "") + text


def parse(text: str, max_length: int = MAX_LENGTH) -> Expression:
    """Parse and check ``text``; raise :class:`ExpressionError` if it is not plain arithmetic.

    ``max_length``: the longest text accepted (model files: :data:`MAX_LENGTH`; the statements of a
    trajectory optimisation take longer, generated equations such as an impact's momentum balances)."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected a number or an expression, got {type(text).__name__}")
    src = text.strip()
    if not src:
        raise ExpressionError("empty expression")
    if len(src) > max_length:
        raise ExpressionError(f"expression longer than {max_length} characters")
    try:
        with warnings.catch_warnings():  # "1jx", "'\\d'": Python's own warnings; the text is refused below
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(src, mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {src!r}: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. a NUL character
        raise ExpressionError(f"cannot parse {src!r}: {exc}") from None
    names: set[str] = set()
    if _check(tree, src, names, depth=0) > MAX_BITS:
        raise ExpressionError(f"the constants of {src!r} are too large (exact values above {MAX_BITS} bits)")
    return Expression(src, tuple(sorted(names)), tree)


def _literal_bits(value: Union[int, float]) -> int:
    """Bits of the exact value the symbolic stage makes of a literal (a float becomes the rational of its text)."""
    if isinstance(value, int):
        return max(1, value.bit_length())
    if not math.isfinite(value):
        return 1
    frac = Fraction(repr(value))
    return max(1, frac.numerator.bit_length()) + frac.denominator.bit_length()


def _check(node: ast.AST, src: str, names: set[str], depth: int) -> int:
    """Check ``node``; return a bound on the bits of the exact constants it produces."""
    if depth > MAX_DEPTH:
        raise ExpressionError(f"expression {src!r} is nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"{node.value!r} in {src!r} is not a number")
        return _literal_bits(node.value)
    if isinstance(node, ast.Name):
        if node.id not in CONSTANTS:
            names.add(node.id)
        return 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
        sub: set[str] = set()
        left = _check(node.left, src, names, depth + 1)
        right = _check(node.right, src, sub, depth + 1)
        names |= sub
        if isinstance(node.op, ast.Pow) and not sub:  # a constant exponent: x**n multiplies x's bits by n
            return left * _exponent(node.right, src) + right
        return left + right
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _UNARY):
        return _check(node.operand, src, names, depth + 1)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else ast.dump(node.func)[:40]
            raise ExpressionError(
                f"function {what!r} in {src!r} is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})")
        if node.keywords or len(node.args) != FUNCTIONS[node.func.id]:
            raise ExpressionError(
                f"{node.func.id}() in {src!r} takes {FUNCTIONS[node.func.id]} positional argument(s)")
        return sum(_check(arg, src, names, depth + 1) for arg in node.args)
    raise ExpressionError(f"{src!r} is not plain arithmetic (found {type(node).__name__})")


def _exponent(node: ast.expr, src: str) -> int:
    """The factor by which a constant exponent can grow exact values: ``ceil(|n|)``, at most MAX_EXPONENT."""
    text = ast.get_source_segment(src, node) or ast.dump(node)[:40]
    try:
        value = _evaluate(node, {})
    except (ZeroDivisionError, ValueError, OverflowError) as exc:
        raise ExpressionError(f"the exponent {text!r} in {src!r} cannot be evaluated ({exc})") from None
    if not abs(value) <= MAX_EXPONENT:
        raise ExpressionError(f"the exponent {text!r} in {src!r} is too large (at most {MAX_EXPONENT} in magnitude)")
    return max(1, math.ceil(abs(value)))


def fold(node: ast.AST, number: Callable[[Union[int, float]], Any], name: Callable[[str], Any],
         call: Callable[[str, list[Any]], Any], *, power: Callable[[Any, Any], Any] = operator.pow) -> Any:
    """Evaluate a checked expression tree with the given leaves and functions.

    The arithmetic uses Python's operators (``power`` for ``**``), so the same
    fold gives floats (numbers and math functions) or, in the symbolic stage,
    SymPy expressions.
    """
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, (int, float)), "unchecked constant"
        return number(node.value)
    if isinstance(node, ast.Name):
        return name(node.id)
    if isinstance(node, ast.BinOp):
        a = fold(node.left, number, name, call, power=power)
        b = fold(node.right, number, name, call, power=power)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        return power(a, b)
    if isinstance(node, ast.UnaryOp):
        v = fold(node.operand, number, name, call, power=power)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return call(node.func.id, [fold(a, number, name, call, power=power) for a in node.args])
    raise AssertionError(f"unchecked expression node {type(node).__name__}")


def _sign(x: float) -> float:
    """-1, 0 or 1 (sign(0) = 0, as SymPy and the generated C take it)."""
    return float((x > 0) - (x < 0))


_BUILTIN: dict[str, Callable[..., float]] = {"abs": abs, "sign": _sign, "max": max, "min": min}


def _math_call(fn: str, args: list[float]) -> float:
    impl: Callable[..., float] = _BUILTIN[fn] if fn in _BUILTIN else getattr(math, fn)
    return float(impl(*args))


def _real_pow(a: float, b: float) -> float:
    value = a ** b
    if isinstance(value, complex):  # Python gives a complex number, the model needs a real one
        raise ValueError(f"({a!r})**{b!r} is not a real number")
    return float(value)


def _evaluate(node: ast.AST, values: Mapping[str, float]) -> float:
    return float(fold(node, float, lambda n: CONSTANTS[n] if n in CONSTANTS else float(values[n]), _math_call,
                      power=_real_pow))


def as_expression(value: Value) -> Expression:
    """Turn a number or a text into an :class:`Expression` (numbers become constants)."""
    if isinstance(value, Expression):
        return value
    if isinstance(value, bool):
        raise ExpressionError("expected a number or an expression, got a boolean")
    if isinstance(value, (int, float)):
        try:
            finite = math.isfinite(value)
        except OverflowError:
            raise ExpressionError("an integer too large for a double") from None
        if not finite:
            raise ExpressionError(f"{value!r} is not a finite number")
        text = repr(float(value)) if isinstance(value, float) else str(value)
        return Expression(text, (), ast.Constant(value=value))
    return parse(value)
