"""Straight-line code for a list of output expressions: pruning, common subexpressions, aliases.

1. *prune* the given intermediate ``assignments`` (the recursive method emits
   many) to those the outputs need, keeping their order and never expanding
   them;
2. *common subexpressions*: ``sympy.cse`` in canonical order over the kept
   assignments and the outputs; the given assignments stay temporaries of
   their own, and the new ones are placed right before their first use;
3. *aliases*: temporaries that are only another symbol or a number are
   substituted.
"""
from __future__ import annotations

from typing import Sequence

import sympy as sp


def straight_line(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr], *,
                  cse: bool = True) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Temporaries (in evaluation order) and reduced outputs for a list of output expressions.

    ``assignments`` are given intermediates ``(symbol, expression)`` that the
    outputs may use; only those needed are kept, in their order, unexpanded.
    """
    outputs = [sp.sympify(o) for o in outputs]
    index = {sym: k for k, (sym, _) in enumerate(assignments)}
    kept: list[tuple[sp.Symbol, sp.Expr]] = []
    if index:
        need = {s for o in outputs for s in o.free_symbols if s in index}
        for k in range(len(assignments) - 1, -1, -1):
            sym, ex = assignments[k]
            if sym in need:
                need.update(s for s in sp.sympify(ex).free_symbols if s in index)
        kept = [(s, sp.sympify(e)) for s, e in assignments if s in need]
    if not cse:
        return kept, outputs

    exprs = [e for _, e in kept] + outputs
    taken = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    taken.update(s for s, _ in kept)
    symbols = sp.numbered_symbols("_cse", exclude=taken)
    replacements, reduced = sp.cse(exprs, symbols=symbols, order="canonical", list=True)

    order = {sym: k for k, (sym, _) in enumerate(replacements)}
    rdeps = {sym: [s for s in ex.free_symbols if s in order] for sym, ex in replacements}
    emitted: set[sp.Symbol] = set()
    temps: list[tuple[sp.Symbol, sp.Expr]] = []

    def emit_needed(expr: sp.Expr) -> None:
        stack = [s for s in expr.free_symbols if s in order and s not in emitted]
        closure: set[sp.Symbol] = set()
        while stack:
            s = stack.pop()
            if s in closure or s in emitted:
                continue
            closure.add(s)
            stack.extend(d for d in rdeps[s] if d not in emitted)
        for s in sorted(closure, key=order.__getitem__):
            temps.append((s, replacements[order[s]][1]))
            emitted.add(s)

    nk = len(kept)
    for (sym, _), ex in zip(kept, reduced[:nk]):
        emit_needed(ex)
        temps.append((sym, ex))
    outs = list(reduced[nk:])
    for ex in outs:
        emit_needed(ex)
    return drop_aliases(temps, outs)


def drop_aliases(temps: list[tuple[sp.Symbol, sp.Expr]],
                  outs: list[sp.Expr]) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Substitute temporaries that are only another symbol or a number (``a = b``)."""
    alias: dict[sp.Symbol, sp.Expr] = {}
    kept: list[tuple[sp.Symbol, sp.Expr]] = []
    for sym, ex in temps:
        if alias:
            ex = ex.xreplace(alias)
        if ex.is_Symbol or ex.is_Number:
            alias[sym] = ex
        else:
            kept.append((sym, ex))
    if not alias:
        return kept, outs
    return kept, [o.xreplace(alias) for o in outs]
