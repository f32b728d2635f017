"""LaTeX of the equations of motion, whole or by blocks (angle rows, length rows, base rows)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import sympy as sp

if TYPE_CHECKING:
    from .equations import Equations

GROUPS = (("base", "base rows"), ("angle", "angle rows"), ("length", "length rows"))


def symbol_names(eqs: "Equations") -> dict[sp.Symbol, str]:
    """LaTeX names: q as is, rates with a dot, accelerations with two dots."""
    names: dict[sp.Symbol, str] = {}
    for q, qd, qdd in zip(eqs.q, eqs.qd, eqs.qdd):
        base = sp.latex(q)
        names[q] = base
        names[qd] = r"\dot{%s}" % base
        names[qdd] = r"\ddot{%s}" % base
    return names


def _tex_of(expr: sp.Basic, names: dict[sp.Symbol, str], decimals: bool = False) -> str:
    if decimals:    # a spatial model's numbers as decimals where they are (URDF values as the file wrote them)
        from .closed_form import decimal_numbers
        return sp.latex(expr.applyfunc(decimal_numbers) if isinstance(expr, sp.MatrixBase)
                        else decimal_numbers(expr), symbol_names=names, full_prec=False)
    return sp.latex(expr, symbol_names=names)


def _simp(m: sp.Matrix, on: bool) -> sp.Matrix:
    return m.applyfunc(lambda e: sp.trigsimp(sp.factor_terms(e))) if on else m


def equations_latex(eqs: "Equations", *, blocks: bool = False, simplify: Optional[bool] = None) -> str:
    """Return LaTeX (an ``align*`` environment body wrapped in ``\\begin{align*}...``).

    ``blocks=False``: the matrix form ``M \\ddot q + h + G + K + D = B u`` with
    every matrix written out. ``blocks=True``: the rows grouped as the thesis
    writes them: for each group of coordinates (base, angles, lengths) the
    inertia blocks times each group's accelerations, then the velocity,
    gravity, spring and damper columns and the generalized forces.
    ``simplify`` applies trigonometric simplification to every entry
    (default: only for planar models with at most 4 coordinates). A spatial model's numbers print as decimals
    where they are decimals (:func:`rodgen.symbolic.closed_form.decimal_numbers`: 0.035, not 7/200).
    """
    e = eqs.expanded()
    dec = bool(getattr(e.model, "spatial", False))
    # a spatial model's matrix method is simplified already (rodgen.symbolic.closed_form)
    on = (e.n <= 4 and not dec) if simplify is None else simplify
    names = symbol_names(e)

    def _tex(expr: sp.Basic, names: dict[sp.Symbol, str]) -> str:
        return _tex_of(expr, names, dec)
    qdd = sp.Matrix(e.qdd)
    u = sp.Matrix(e.u) if e.u else sp.zeros(0, 1)
    lines: list[str] = []
    if not blocks:
        lines.append(r"M(q)\,\ddot{q} + h(q,\dot{q}) + G(q) + K(q) + D(\dot{q}) = B(q)\,u"
                     + ((r" + F(q,\dot{q},t)" if e.t in e.F.free_symbols else r" + F(q,\dot{q})")
                        if e.forces and e.F is not None else ""))
        lines.append(r"q = " + _tex(sp.Matrix(e.q), names) + r",\quad u = " + (_tex(u, names) if e.u else "0"))
        assert e.F is not None
        mats = [("M", e.M), ("h", e.h), ("G", e.G), ("K", e.K), ("D", e.D), ("B", e.B)]
        for label, mat in mats + ([("F", e.F)] if e.forces else []):
            if label in ("K", "D") and all(x == 0 for x in mat):
                continue
            lines.append(f"{label} = " + _tex(_simp(mat, on), names))
        return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}\n"
    idx = {g: [i for i, c in enumerate(e.coordinates) if c.kind == g] for g, _ in GROUPS}
    for g, title in GROUPS:
        rows = idx[g]
        if not rows:
            continue
        lines.append(r"&\text{%s: } %s" % (title, ", ".join(names[e.q[i]] for i in rows)))
        terms: list[str] = []
        for g2, _ in GROUPS:
            cols = idx[g2]
            if not cols:
                continue
            blk = _simp(e.M.extract(rows, cols), on)
            if all(x == 0 for x in blk):
                continue
            terms.append(_tex(blk, names) + _tex(qdd.extract(cols, [0]), names))
        for mat in (e.h, e.G, e.K, e.D):
            col = _simp(mat.extract(rows, [0]), on)
            if any(x != 0 for x in col):
                terms.append(_tex(col, names))
        rhs = e.B.extract(rows, list(range(e.B.shape[1]))) * u if e.u else sp.zeros(len(rows), 1)
        assert e.F is not None
        rhs = rhs + e.F.extract(rows, [0])
        lines.append("&" + " + ".join(terms) + " = " + _tex(_simp(rhs, on), names))
    return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}\n"
