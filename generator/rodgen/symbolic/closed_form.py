"""Closed-form equations of a spatial model: ``rodgen.derive(spatial_model, method="matrix")``.

The spatial derivation is recursive: its M, h, G refer to intermediate symbols (``r_0_CI22``, world frames,
velocities) defined in ``Equations.assignments``. For printing and for reading the equations of a small model
this module substitutes them back and simplifies, entry by entry:

- every number becomes exact (a Float of the derivation, such as the entry of a rotation by a fixed angle, as
  the rational of its decimal text, :func:`decimal_text`), so simplification does not spread floating
  point through the entry;
- M, G and V: expanded into the canonical polynomial in the coordinates' sines and cosines with no sine
  squared (:func:`canonical`: sin² + cos² = 1 applied exactly, by polynomial arithmetic only; ``trigsimp``
  took seconds per entry of a two-link model), common factors taken out;
- h from the simplified M by its Christoffel symbols, ``h = sum c_ijk(q) q̇_j q̇_k`` (Coriolis and
  centrifugal terms read off), each coefficient in the same form (the recursion's own h, substituted, is
  larger than M by far: it is not expanded);
- the rest of the equations (T, frames, Jacobians, constraint rows, force elements) is substituted without
  simplification.

Size guard: a model with a free, spherical or planar joint, more than :data:`MAX_COORDINATES` velocities,
or whose substituted M and G would exceed :data:`MAX_TREE` nodes keeps the recursive equations (method
``"recursive"``) and says why in ``Equations.closed_form_reason``.
"""
from __future__ import annotations

from typing import Optional

import sympy as sp

from ..model.expr import terminating_decimal
from .equations import Equations

#: More velocities than this: the recursive equations are kept.
MAX_COORDINATES = 6
#: Substituted M and G larger than this many expression-tree nodes: the recursive equations are kept.
MAX_TREE = 5_000


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
    n = out.M.rows
    upper = {(i, j): tidy(out.M[i, j]) for i in range(n) for j in range(i, n)}
    out.M = sp.Matrix(n, n, lambda i, j: upper[min(i, j), max(i, j)])
    out.h = _christoffel(out.M, list(out.q), list(out.qd))
    out.G = out.G.applyfunc(lambda x: tidy(x))
    out.K = out.K.applyfunc(lambda x: tidy(x))
    out.D = out.D.applyfunc(lambda x: tidy(x, rates))
    out.B = out.B.applyfunc(lambda x: tidy(x))
    out.V = tidy(out.V)
    out.T = exact(out.T)
    return out


def _christoffel(M: sp.Matrix, q: list[sp.Symbol], qd: list[sp.Symbol]) -> sp.Matrix:
    """h from the closed-form M by the Christoffel symbols of the first kind (T = q̇ᵀ M q̇ / 2, the
    velocities the coordinates' rates): h_i = sum_j c_ijj q̇_j² + sum_{j<k} 2 c_ijk q̇_j q̇_k,
    c_ijk = (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) / 2, each coefficient simplified."""
    n = len(q)
    dM = [[[sp.diff(M[i, j], q[k]) for k in range(n)] for j in range(n)] for i in range(n)]
    rows = []
    for i in range(n):
        terms = []
        for j in range(n):
            for k in range(j, n):
                c = (dM[i][j][k] + dM[i][k][j] - dM[j][k][i]) / 2
                c = c * 2 if j != k else c
                if c != 0:
                    terms.append(tidy(c) * qd[j] * qd[k])
        rows.append(sp.Add(*terms))
    return sp.Matrix(rows)


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
    size = sum(_tree_size(x.xreplace(subs), memo) for m in (eqs.M, eqs.G) for x in m)
    if size > MAX_TREE:
        return (f"M and G in closed form have {size} expression nodes (more than {MAX_TREE}); "
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
    """One entry: exact numbers, in the canonical form of :func:`canonical`, common factors taken out (per
    product of ``rates`` when given)."""
    x = canonical(exact(x))
    terms = sp.Add.make_args(x)
    if not rates:
        return sp.factor_terms(x)
    groups: dict[sp.Expr, list[sp.Expr]] = {}
    for t in terms:
        coef: list[sp.Expr] = []
        mono: list[sp.Expr] = []
        for f in sp.Mul.make_args(t):
            (mono if f.free_symbols & rates else coef).append(f)
        groups.setdefault(sp.Mul(*mono), []).append(sp.Mul(*coef))
    return sp.Add(*[sp.factor_terms(sp.Add(*cs)) * mono for mono, cs in groups.items()])


def canonical(x: sp.Expr) -> sp.Expr:
    """``x`` expanded, every sin(a)^k (k >= 2) written (1 - cos(a)^2)^(k // 2) sin(a)^(k % 2) and expanded
    again: a polynomial in the sines and cosines (of the coordinates, as the recursion writes them) with no
    sine above the first power, which is unique, so sin² + cos² = 1 and everything that follows from it is
    applied (an entry that is 0 comes out 0), at the cost of polynomial arithmetic only."""
    x = sp.expand(x)

    def high_sine(e: sp.Basic) -> bool:
        return bool(e.is_Pow and isinstance(e.base, sp.sin) and e.exp.is_Integer and e.exp >= 2)

    def lower(e: sp.Pow) -> sp.Expr:
        a, k = e.base.args[0], int(e.exp)
        return sp.sin(a) ** (k % 2) * (1 - sp.cos(a) ** 2) ** (k // 2)
    if not x.has(sp.sin):
        return x
    return sp.expand(x.replace(high_sine, lower))


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
           "canonical", "MAX_COORDINATES", "MAX_TREE"]
