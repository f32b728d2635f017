"""Exact derivatives of straight-line code (forward mode, symbolic).

The equations of the recursive method are a chain of intermediate
assignments ``s_i = e_i(q, qd, s_0..s_i-1)`` followed by outputs written in
those symbols. Differentiating the expanded expressions would undo that
structure (and grow like the expanded equations do), so the derivative is
carried along the chain instead: for every assignment and every variable
``x_k``

    ds_i/dx_k = de_i/dx_k + sum_j de_i/ds_j * ds_j/dx_k

where the partials treat the earlier symbols as independent. Each nonzero
derivative becomes an assignment of its own, so the result is again
straight-line code that the code stage's CSE and printer take as they are.
"""
from __future__ import annotations

from typing import Sequence

import sympy as sp


def forward_derivatives(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr],
                        variables: Sequence[sp.Symbol], *,
                        prefix: str = "_d") -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]:
    """Derivatives of ``outputs`` with respect to ``variables`` through the chain of ``assignments``.

    Parameters
    ----------
    assignments : intermediate ``(symbol, expression)`` pairs in evaluation order.
    outputs : expressions in the variables, other symbols and the assignment symbols.
    variables : the symbols to differentiate by (e.g. q and qd).
    prefix : name stem of the new derivative symbols.

    Returns
    -------
    (assignments, jacobian) : the given assignments that the outputs need,
    each followed by the assignments of its derivatives, in evaluation
    order; and ``jacobian[r][k]`` = d outputs[r] / d variables[k], written in
    those symbols.
    """
    outputs = [sp.sympify(o) for o in outputs]
    var_index = {v: k for k, v in enumerate(variables)}
    index = {s: i for i, (s, _) in enumerate(assignments)}
    need = {s for o in outputs for s in o.free_symbols if s in index}
    for i in range(len(assignments) - 1, -1, -1):
        s, e = assignments[i]
        if s in need:
            need.update(f for f in sp.sympify(e).free_symbols if f in index)
    kept = [(s, sp.sympify(e)) for s, e in assignments if s in need]

    deriv: dict[sp.Symbol, dict[int, sp.Expr]] = {}   # symbol -> {k: d symbol / d x_k} (nonzero only)
    out_assign: list[tuple[sp.Symbol, sp.Expr]] = []
    counter = 0

    def grad(expr: sp.Expr) -> dict[int, sp.Expr]:
        acc: dict[int, sp.Expr] = {}
        for f in sorted(expr.free_symbols, key=str):
            if f in var_index:
                chain = {var_index[f]: sp.S.One}
            else:
                chain = deriv.get(f, {})
            if not chain:
                continue
            partial = sp.diff(expr, f)
            if partial == 0:
                continue
            for k, dfk in chain.items():
                term = partial * dfk
                acc[k] = acc[k] + term if k in acc else term
        return {k: v for k, v in acc.items() if v != 0}

    for s, e in kept:
        out_assign.append((s, e))
        g = grad(e)
        entries: dict[int, sp.Expr] = {}
        for k in sorted(g):
            ex = g[k]
            if ex.is_Symbol or ex.is_Number:
                entries[k] = ex
                continue
            sym = sp.Symbol(f"{prefix}{counter}")
            counter += 1
            out_assign.append((sym, ex))
            entries[k] = sym
        if entries:
            deriv[s] = entries

    jac: list[list[sp.Expr]] = []
    for o in outputs:
        g = grad(o)
        jac.append([g.get(k, sp.S.Zero) for k in range(len(variables))])
    return out_assign, jac


__all__ = ["forward_derivatives"]
