"""Straight-line code for a list of output expressions: pruning, common subexpressions, aliases.

1. *prune* the given intermediate ``assignments`` (the recursive method emits
   many) to those the outputs need, keeping their order and never expanding
   them;
2. *common subexpressions* (:func:`common_subexpressions`) over the kept
   assignments and the outputs; the given assignments stay temporaries of
   their own, and the new ones are placed right before their first use;
3. *aliases*: temporaries that are only another symbol or a number are
   substituted.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterator, Optional, Sequence

import sympy as sp
from sympy.simplify.cse_main import Unevaluated

#: A rewrite of the kept assignments and the outputs before common subexpressions (see :func:`straight_line`).
Rewrite = Callable[[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]],
                   tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]]


def straight_line(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr], *,
                  cse: bool = True, rewrite: Optional[Rewrite] = None
                  ) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Temporaries (in evaluation order) and reduced outputs for a list of output expressions.

    ``assignments`` are given intermediates ``(symbol, expression)`` that the
    outputs may use; only those needed are kept, in their order, unexpanded.
    ``rewrite`` takes the kept assignments and the outputs before the common subexpressions are sought
    and returns them changed (the batched sines and cosines of :mod:`rodgen.codegen.routine`).
    """
    outputs = [sp.sympify(o) for o in outputs]
    # The same walk as rodgen.symbolic.derivative.needed_assignments, kept here on purpose: the code stage takes
    # only result types from the symbolic stage (tests/test_stage_imports.py).
    index = {sym: k for k, (sym, _) in enumerate(assignments)}
    kept: list[tuple[sp.Symbol, sp.Expr]] = []
    if index:
        need = {s for o in outputs for s in o.free_symbols if s in index}
        for k in range(len(assignments) - 1, -1, -1):
            sym, ex = assignments[k]
            if sym in need:
                need.update(s for s in sp.sympify(ex).free_symbols if s in index)
        kept = [(s, sp.sympify(e)) for s, e in assignments if s in need]
    if rewrite is not None:
        kept, outputs = rewrite(kept, outputs)
    if not cse:
        return kept, outputs

    exprs = [e for _, e in kept] + outputs
    taken = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    taken.update(s for s, _ in kept)
    symbols = sp.numbered_symbols("_cse", exclude=taken)
    replacements, reduced = common_subexpressions(exprs, symbols)

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


def common_subexpressions(exprs: Sequence[sp.Expr], symbols: Iterator[sp.Symbol]
                          ) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Common subexpressions of ``exprs``: ``(replacements, reduced expressions)`` as ``sympy.cse`` returns them.

    The same three steps as ``sympy.cse`` (negated products and negative powers seen through, common
    argument subsets of sums and products by :func:`match_common_args`, repeated subtrees), made
    cheaper for long straight-line code: a sum is negated only when most of its terms are negative
    (no sort keys), arguments are taken in SymPy's stored order (already canonical, so the result is
    deterministic), and the reduced expressions are rebuilt without re-evaluation (a named subtree
    is put in place of the subtree, nothing else changes).
    """
    opt_subs: dict[Any, Any] = {}
    adds: dict[sp.Expr, None] = {}   # insertion-ordered sets
    muls: dict[sp.Expr, None] = {}
    seen: set[Any] = set()

    def find_opts(expr: Any) -> None:
        if expr.is_Atom or expr in seen or _opaque(expr):
            return
        seen.add(expr)
        for a in expr.args:
            find_opts(a)
        if expr.is_Mul or expr.is_Add:
            neg = _negated(expr)
            if neg is not None:
                opt_subs[expr] = Unevaluated(sp.Mul, (sp.S.NegativeOne, neg))
                seen.add(neg)
                expr = neg
            if expr.is_Mul and len(expr.args) > 1 and expr.is_commutative:
                muls[expr] = None
            elif expr.is_Add and len(expr.args) > 1:
                adds[expr] = None
        elif expr.is_Pow:
            e = expr.exp
            if e.is_Number and e.is_negative:
                opt_subs[expr] = Unevaluated(sp.Pow, (sp.Pow(expr.base, -e), sp.S.NegativeOne))

    for e in exprs:
        find_opts(e)
    match_common_args(sp.Add, list(adds), opt_subs)
    match_common_args(sp.Mul, list(muls), opt_subs)

    to_eliminate: set[Any] = set()
    seen_subexp: set[Any] = set()

    def find_repeated(expr: Any) -> None:
        if isinstance(expr, sp.Basic) and expr.is_Atom:
            return
        if expr in seen_subexp:
            to_eliminate.add(expr)
            return
        seen_subexp.add(expr)
        if _opaque(expr):
            return
        for a in opt_subs.get(expr, expr).args:
            find_repeated(a)

    for e in exprs:
        find_repeated(e)

    replacements: list[tuple[sp.Symbol, sp.Expr]] = []
    subs: dict[Any, sp.Expr] = {}

    def rebuild(expr: Any) -> Any:
        if not expr.args or (_opaque(expr) and expr not in to_eliminate):
            return expr
        if expr in subs:
            return subs[expr]
        orig = expr
        expr = opt_subs.get(expr, expr)
        args = expr.args
        new_args = list(args) if _opaque(expr) else [rebuild(a) for a in args]
        if isinstance(expr, Unevaluated) or any(n is not o for n, o in zip(new_args, args)):
            new = _unevaluated(expr.func, new_args)
        else:
            new = expr
        if orig in to_eliminate:
            sym = next(symbols)
            subs[orig] = sym
            replacements.append((sym, new))
            return sym
        subs[orig] = new
        return new

    return replacements, [rebuild(e) for e in exprs]


def match_common_args(func_class: Any, funcs: list[Any], opt_subs: dict[Any, Any]) -> None:
    """SymPy's ``sympy.simplify.cse_main.match_common_args`` (common argument subsets of sums or products, put
    into ``opt_subs`` as Unevaluated sums or products over them), step for step in the same order, with its
    ordered sets as plain insertion-ordered dicts: the same substitutions in about half the time (SymPy's
    ``OrderedSet`` goes through the generic set operations of ``collections.abc``)."""
    funcs = sorted(funcs, key=lambda f: len(f.args))
    value_numbers: dict[Any, int] = {}
    values: list[Any] = []
    arg_funcs: list[dict[int, None]] = []      # argument number -> the functions holding it
    func_args: list[dict[int, None]] = []      # function number -> its argument numbers

    def number(value: Any) -> int:
        k = value_numbers.setdefault(value, len(values))
        if k == len(values):
            values.append(value)
            arg_funcs.append({})
        return k

    for fi, f in enumerate(funcs):
        own: dict[int, None] = {}
        for a in f.args:
            k = number(a)
            own[k] = None
            arg_funcs[k][fi] = None
        func_args.append(own)

    def candidates(argset: dict[int, None], least: int) -> dict[int, int]:
        count: defaultdict[int, int] = defaultdict(int)
        if not argset:
            return count
        sets = [arg_funcs[a] for a in argset]
        largest = max(sets, key=len)
        for fs in sets:
            if fs is largest:
                continue
            for fi in fs:
                if fi >= least:
                    count[fi] += 1
        smaller: dict[int, Any]
        larger: dict[int, Any]
        smaller, larger = (count, largest) if len(count) < len(largest) else (largest, count)
        for fi in list(smaller):
            if count[fi] < 1:
                continue
            if fi in larger:
                count[fi] += 1
        return {k: v for k, v in count.items() if v >= 2}

    def update(fi: int, new: dict[int, None]) -> None:
        old = func_args[fi]
        for a in old:
            if a not in new:
                del arg_funcs[a][fi]
        for a in new:
            if a not in old:
                arg_funcs[a][fi] = None
        func_args[fi] = dict(new)

    def without(a: dict[int, None], b: dict[int, None], extra: int) -> dict[int, None]:
        out = {v: None for v in a if v not in b}
        out[extra] = None
        return out

    changed: set[int] = set()
    for i in range(len(funcs)):
        counts = candidates(func_args[i], i + 1)
        queue = {k: None for k in sorted(counts, key=lambda k: (counts[k], k))}
        while queue:
            j = next(iter(queue))
            del queue[j]
            common = {v: None for v in func_args[i] if v in func_args[j]}
            if len(common) <= 1:
                continue
            if any(v not in common for v in func_args[i]):
                com = number(Unevaluated(func_class, [values[a] for a in sorted(common)]))
                update(i, without(func_args[i], common, com))
                changed.add(i)
            else:
                com = number(funcs[i])
            update(j, without(func_args[j], common, com))
            changed.add(j)
            it = iter(common)
            subset = {k: None for k in arg_funcs[next(it)] if k in queue}
            for a in it:
                subset = {k: None for k in subset if k in arg_funcs[a]}
            for k in subset:
                update(k, without(func_args[k], common, com))
                changed.add(k)
        if i in changed:
            opt_subs[funcs[i]] = Unevaluated(func_class, [values[a] for a in sorted(func_args[i])])
        for a in func_args[i]:
            del arg_funcs[a][i]


def _opaque(expr: Any) -> bool:
    """Expressions whose arguments are not searched (a Piecewise: conditions and pairs are no sums or
    products); the whole may still be a common subexpression."""
    return isinstance(expr, sp.Basic) and (isinstance(expr, sp.Piecewise) or not isinstance(expr, sp.Expr))


def _negated(expr: sp.Expr) -> "sp.Expr | None":
    """-expr when a product has a negative coefficient or most terms of a sum are negative, else None."""
    if expr.is_Mul:
        c = expr.args[0]
        if c.is_Number and c.is_negative:
            neg = -expr
            return None if neg.is_Atom else neg
        return None
    negative = sum(1 for a in expr.args if _negative_term(a))
    if 2 * negative > len(expr.args):
        return sp.Add(*(-a for a in expr.args))
    return None


def _negative_term(term: sp.Expr) -> bool:
    if term.is_Number:
        return bool(term.is_negative)
    if term.is_Mul:
        c = term.args[0]
        return bool(c.is_Number and c.is_negative)
    return False


def _unevaluated(func: Any, args: Sequence[Any]) -> Any:
    """func(*args) without re-evaluating: the arguments are in place already. A sum in a sum and a product
    in a product (left by the steps above where a part was not repeated after all) are flattened, and the
    numbers of a product multiplied into one leading coefficient, so they print as SymPy would print them."""
    if func is sp.Add or func is sp.Mul:
        flat: list[Any] = []
        for a in args:
            if type(a) is func:
                flat.extend(a.args)
            else:
                flat.append(a)
        if func is sp.Mul:
            flat = _one_coefficient(flat)
            if len(flat) == 2 and flat[0].is_Number and flat[1].is_Add:
                # a number times a sum that did not become a temporary: distributed, as SymPy does
                return sp.Add._from_args([_unevaluated(sp.Mul, [flat[0], t]) for t in flat[1].args])
        if len(flat) == 1:
            return flat[0]
        return func._from_args(flat)   # func(*flat, evaluate=False) without its cache and checks
    if func is sp.Pow:
        return func(*args, evaluate=False)
    return func(*args)


def _one_coefficient(factors: list[Any]) -> list[Any]:
    """The factors of a product with its numbers multiplied into one leading coefficient (none if 1)."""
    numbers = [a for a in factors if a.is_Number]
    if len(numbers) > 1 or (numbers and factors[0] is not numbers[0]) or (numbers and numbers[0] == 1):
        c = sp.Mul(*numbers)
        return ([] if c == 1 else [c]) + [a for a in factors if not a.is_Number]
    return factors


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
    outs = [o.xreplace(alias) for o in outs]
    # a temporary that is 0 takes the products with it away, and with them maybe the last use of another
    # temporary (Talos's legs: six such in the inverse-dynamics derivatives): keep only those still read
    live: set[sp.Basic] = set().union(*(o.free_symbols for o in outs)) if outs else set()
    needed: list[tuple[sp.Symbol, sp.Expr]] = []
    for sym, ex in reversed(kept):
        if sym in live:
            needed.append((sym, ex))
            live |= ex.free_symbols
    return needed[::-1], outs
