"""Closed-form equations of a spatial model: ``rodgen.derive(spatial_model, method="matrix")``.

The spatial derivation is recursive: its M, h, G refer to intermediate symbols (``r_0_CI22``, world frames,
velocities) defined in ``Equations.assignments``. For printing and for reading the equations of a small model
this module substitutes them back and simplifies, entry by entry:

- every number becomes exact (a Float of the derivation, such as the entry of a rotation by a fixed angle, as
  the rational of its decimal text, :func:`decimal_text`), so simplification does not spread floating
  point through the entry;
- M, G and V: expanded, then ``trigsimp``; h: expanded, grouped by its products of rates q̇_i q̇_j, each
  coefficient ``trigsimp``-ed, so ``h = sum c_ij(q) q̇_i q̇_j`` (Coriolis and centrifugal terms read off);
- an entry with more than :data:`TRIG_TERMS` terms after expansion is left expanded (``trigsimp`` on it
  would take long); the rest of the equations (T, frames, Jacobians, constraint rows, force elements) is
  substituted without simplification.

Size guard: a model with a free, spherical or planar joint, more than :data:`MAX_COORDINATES` velocities,
or whose substituted M, h, G would exceed :data:`MAX_TREE` nodes keeps the recursive equations (method
``"recursive"``) and says why in ``Equations.closed_form_reason``.
"""
from __future__ import annotations

from typing import Optional

import sympy as sp

from .equations import Equations

#: More velocities than this: the recursive equations are kept.
MAX_COORDINATES = 6
#: Substituted M, h, G larger than this many expression-tree nodes: the recursive equations are kept.
MAX_TREE = 400_000
#: An entry with more terms than this after expansion is not trigsimp-ed.
TRIG_TERMS = 300


def closed_form(eqs: Equations) -> Equations:
    """The equations in closed form (method ``"matrix"``), or ``eqs`` itself with
    ``closed_form_reason`` set when the size guard refuses (see the module docstring)."""
    reason = _refused(eqs)
    if reason:
        eqs.closed_form_reason = reason
        return eqs
    out = eqs.expanded()
    out.method = "matrix"
    out.articulated, out.articulated_reason = eqs.articulated, eqs.articulated_reason
    out.configuration_rate, out.lie_joints = eqs.configuration_rate, eqs.lie_joints
    out.couplings = {k: exact(v) for k, v in out.couplings.items()}
    rates = set(out.qd)
    out.M = _symmetric(out.M.applyfunc(lambda x: tidy(x)))
    out.h = out.h.applyfunc(lambda x: tidy(x, rates))
    out.G = out.G.applyfunc(lambda x: tidy(x))
    out.K = out.K.applyfunc(lambda x: tidy(x))
    out.D = out.D.applyfunc(lambda x: tidy(x, rates))
    out.B = out.B.applyfunc(lambda x: tidy(x))
    out.V = tidy(out.V)
    out.T = exact(out.T)
    return out


def _symmetric(M: sp.Matrix) -> sp.Matrix:
    """M with its lower triangle the upper one (one simplification, the same printed entry)."""
    n = M.rows
    return sp.Matrix(n, n, lambda i, j: M[min(i, j), max(i, j)])


def _refused(eqs: Equations) -> str:
    if eqs.lie_joints:
        return "the model has a free, spherical or planar joint (velocities that are not coordinate rates)"
    if eqs.nv > MAX_COORDINATES:
        return f"the model has {eqs.nv} velocities (the closed form is given for at most {MAX_COORDINATES})"
    if not eqs.assignments:
        return ""
    subs: dict[sp.Symbol, sp.Expr] = {}
    for sym, ex in eqs.assignments:
        subs[sym] = ex.xreplace(subs)
    memo: dict[sp.Basic, int] = {}
    size = sum(_tree_size(x.xreplace(subs), memo) for m in (eqs.M, eqs.h, eqs.G) for x in m)
    if size > MAX_TREE:
        return (f"M, h and G in closed form have {size} expression nodes (more than {MAX_TREE}); "
                f"print Equations.expanded() for the unsimplified closed form")
    return ""


def _tree_size(x: sp.Basic, memo: dict[sp.Basic, int]) -> int:
    """Nodes of the expression as a tree (shared subexpressions counted at every use), in time linear in
    the number of distinct subexpressions."""
    got = memo.get(x)
    if got is None:
        got = 1 + sum(_tree_size(a, memo) for a in x.args)
        memo[x] = got
    return got


def exact(x: sp.Expr) -> sp.Expr:
    """``x`` with every Float as an exact rational: that of its decimal text (:func:`decimal_text`)."""
    floats = x.atoms(sp.Float)
    if not floats:
        return x
    return x.xreplace({f: sp.Rational(decimal_text(float(f))) for f in floats})


def decimal_text(v: float) -> str:
    """The decimal a double stands for: its shortest text (``repr``), or, when that is a short decimal plus
    rounding noise in the last two digits (0.034999999999999996, an entry of a fixed rotation applied to an
    inertia of 0.035), the short decimal (within 1e-15 relative)."""
    r15 = f"{v:.15g}"
    digits = r15.lstrip("-").split("e")[0].replace(".", "").strip("0")
    return r15 if len(digits) <= 12 else repr(v)


def tidy(x: sp.Expr, rates: Optional[set[sp.Symbol]] = None) -> sp.Expr:
    """One entry: exact numbers, expanded, ``trigsimp``-ed (by products of ``rates`` when given)."""
    x = sp.expand(exact(x))
    terms = sp.Add.make_args(x)
    if len(terms) > TRIG_TERMS:
        return x
    if not rates:
        return sp.trigsimp(sp.factor_terms(x))
    groups: dict[sp.Expr, list[sp.Expr]] = {}
    for t in terms:
        coef: list[sp.Expr] = []
        mono: list[sp.Expr] = []
        for f in sp.Mul.make_args(t):
            (mono if f.free_symbols & rates else coef).append(f)
        groups.setdefault(sp.Mul(*mono), []).append(sp.Mul(*coef))
    return sp.Add(*[sp.trigsimp(sp.factor_terms(sp.Add(*cs))) * mono for mono, cs in groups.items()])


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


def decimal_numbers(x: sp.Expr) -> sp.Expr:
    """``x`` for printing with the numbers as decimals where they are decimals (:func:`terminating_decimal`,
    Floats by :func:`decimal_text`), as Floats of exactly that many digits: print with ``full_prec=False``.
    Function arguments and exponents are left as they are (a Float there would be evaluated)."""
    if x.is_Float:
        return _float(decimal_text(float(x)))
    if x.is_Rational and not x.is_Integer:
        text = terminating_decimal(int(x.p), int(x.q))
        return x if text is None else _float(text)
    if not x.args or isinstance(x, sp.Function):
        return x
    if x.is_Pow:
        return sp.Pow(decimal_numbers(x.base), x.exp)
    if x.is_Mul:
        # a decimal factored out of a sum of integers (-(4574 cos q + 8574)/10**16, as simplification leaves
        # it) goes back into the sum: the file's decimals, not their integer mantissas, print
        c, rest = x.as_coeff_Mul()
        sums = [f for f in sp.Mul.make_args(rest) if f.is_Add]
        if c.is_Rational and terminating_decimal(int(c.p), int(c.q)) is not None and sums:
            others = [f for f in sp.Mul.make_args(rest) if f is not sums[0]]
            inner = sp.Add(*[decimal_numbers(c * t) for t in sums[0].args], evaluate=False)
            return sp.Mul(*[decimal_numbers(f) for f in others], inner)
    return x.func(*[decimal_numbers(a) for a in x.args])


def _float(text: str) -> sp.Float:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return sp.Float(text, dps=max(len(mantissa), 1))


__all__ = ["closed_form", "exact", "decimal_text", "terminating_decimal", "decimal_numbers", "tidy",
           "MAX_COORDINATES", "MAX_TREE", "TRIG_TERMS"]
