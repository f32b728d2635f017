"""Exact derivatives of straight-line code (forward mode, symbolic).

Two forms are given. :func:`forward_derivatives` carries the derivatives by
every variable at once (a full Jacobian as straight-line code; its size is
the chain's times the number of variables). :func:`tangent_chain` gives the
*tangent* of the chain along one direction: the local partials of every
assignment (computed once at a point) and a linear chain in a seed direction
whose size is the chain's, however many variables there are; evaluating it
once per unit direction gives the Jacobian column by column.

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

Functions with kinks (``Abs``, ``sign``, ``Max``, ``Min``, ``Piecewise``) are differentiated where
they are differentiable, and at a kink a fixed value is taken (:func:`partial`): ``Abs'(x) = sign(x)``
with ``sign(0) = 0``; ``sign' = 0`` (its jump carries no derivative); ``Max(a, b)`` and ``Min(a, b)``
take ``(1 + sign(a - b)) / 2`` of ``a``'s derivative (1/2 of each where ``a = b``); a ``Piecewise``
takes the derivative of the branch whose condition holds. Every symbol this module introduces is
real, as the coordinates and the chain's own symbols are, so no complex parts (``re``, ``im``) appear.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp


def _step(x: sp.Expr) -> sp.Expr:
    """The Heaviside step as the derivative of Max/Min takes it: 1/2 at 0."""
    return (1 + sp.sign(x)) / 2


def partial(expr: sp.Expr, symbol: sp.Symbol) -> sp.Expr:
    """d expr / d symbol where it exists, and the documented value at the kinks of ``Abs``, ``sign``,
    ``Max``, ``Min`` (see the module's docstring): SymPy's ``DiracDelta`` (of ``sign``) is dropped and
    its ``Heaviside`` (of ``Max``/``Min``) written with ``sign``, which the printers know."""
    if expr.is_Add or expr.is_Mul:
        d = _atoms_partial(expr, symbol)
        if d is not None:
            return d
    d = sp.diff(expr, symbol)
    if d.has(sp.DiracDelta):
        d = d.replace(sp.DiracDelta, lambda *a: sp.S.Zero)
    if d.has(sp.Heaviside):
        d = d.replace(sp.Heaviside, lambda x, *a: _step(x))
    return d


def _atoms_partial(expr: sp.Expr, symbol: sp.Symbol) -> "sp.Expr | None":
    """d expr / d symbol of a sum or a product of symbols and numbers (one operation of a split chain), as
    ``sp.diff`` gives it (the same expression: 1 or 0 for a sum; for a product, the product of the other
    factors, each symbol being a factor at most once in SymPy's canonical product), without building
    SymPy's Derivative for every operand; None for any other expression."""
    args = expr.args
    if not all(a.is_Symbol or a.is_Number for a in args):
        return None
    if symbol not in args:
        return sp.S.Zero
    if expr.is_Add:
        return sp.S.One
    return sp.Mul(*[a for a in args if a != symbol])


def needed_assignments(assignments: Sequence[tuple[sp.Symbol, sp.Expr]],
                       outputs: Sequence[sp.Expr]) -> list[tuple[sp.Symbol, sp.Expr]]:
    """The assignments that ``outputs`` (sympified) read, directly or through other assignments,
    in their given order, each expression sympified."""
    index = {s: i for i, (s, _) in enumerate(assignments)}
    need = {s for o in outputs for s in o.free_symbols if s in index}
    for i in range(len(assignments) - 1, -1, -1):
        s, e = assignments[i]
        if s in need:
            need.update(f for f in sp.sympify(e).free_symbols if f in index)
    return [(s, sp.sympify(e)) for s, e in assignments if s in need]


#: With ``fold``, an assignment keeps its differential as a combination of ``c`` carriers' instead of its own
#: ``n`` derivatives when its ``r`` readers times ``c`` is below this times ``n``: each reader then multiplies
#: through ``c`` partials, against ``n`` derivative assignments (on gait2d's contact forces 2 gave the fewest
#: operations after the code stage's CSE: 4179 against 5125 unfolded, 4353 at 1 and 4501 at 3).
FOLD_RATIO = 2


def forward_derivatives(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr],
                        variables: Sequence[sp.Symbol], *, prefix: str = "_d",
                        fold: bool = False) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]:
    """Derivatives of ``outputs`` with respect to ``variables`` through the chain of ``assignments``.

    Parameters
    ----------
    assignments : intermediate ``(symbol, expression)`` pairs in evaluation order.
    outputs : expressions in the variables, other symbols and the assignment symbols.
    variables : the symbols to differentiate by (e.g. q and qd).
    prefix : name stem of the new derivative symbols.
    fold : preaccumulate: an assignment that depends on few carriers (earlier assignments carrying
        derivatives, or variables) against its number of nonzero derivatives and readers
        (:data:`FOLD_RATIO`) carries no derivatives of its own; its differential stays a combination of the
        carriers' (the local partials multiplied along the chain, one product per carrier), which the
        assignments reading it expand. A contact law of a point's height and velocity is then differentiated
        by those few and expanded once, not carried through every operation by every coordinate and rate the
        point moves with. The same derivatives, in other operations.

    Returns
    -------
    (assignments, jacobian) : the given assignments that the outputs need,
    each followed by the assignments of its derivatives, in evaluation
    order; and ``jacobian[r][k]`` = d outputs[r] / d variables[k], written in
    those symbols.
    """
    outputs = [sp.sympify(o) for o in outputs]
    var_index = {v: k for k, v in enumerate(variables)}
    kept = needed_assignments(assignments, outputs)

    deriv: dict[sp.Symbol, dict[int, sp.Expr]] = {}   # symbol -> {k: d symbol / d x_k} (nonzero only)
    folded: dict[sp.Symbol, dict[sp.Symbol, sp.Expr]] = {}  # symbol -> {carrier: d symbol / d carrier}
    out_assign: list[tuple[sp.Symbol, sp.Expr]] = []
    counter = 0
    reads: dict[sp.Symbol, int] = {}
    if fold:
        for ex in [e for _, e in kept] + outputs:
            for f in ex.free_symbols:
                reads[f] = reads.get(f, 0) + 1

    def new_symbol(ex: sp.Expr) -> sp.Expr:
        nonlocal counter
        if ex.is_Symbol or ex.is_Number:
            return ex
        sym = sp.Symbol(f"{prefix}{counter}", real=True)
        counter += 1
        out_assign.append((sym, ex))
        return sym

    def local(expr: sp.Expr) -> dict[sp.Symbol, sp.Expr]:
        """expr's differential as a combination of the carriers' (variables and symbols with derivatives)."""
        acc: dict[sp.Symbol, sp.Expr] = {}
        for f in sorted(expr.free_symbols, key=str):
            if f in folded:
                chain = folded[f]
            elif f in var_index or f in deriv:
                chain = {f: sp.S.One}
            else:
                continue
            pd = partial(expr, f)
            if pd == 0:
                continue
            for g, c in chain.items():
                term = pd * c
                acc[g] = acc[g] + term if g in acc else term
        return {g: v for g, v in acc.items() if v != 0}

    def grad(comb: dict[sp.Symbol, sp.Expr]) -> dict[int, sp.Expr]:
        """The derivatives by the variables of a combination of the carriers' differentials."""
        acc: dict[int, sp.Expr] = {}
        for g, pd in comb.items():
            chain = {var_index[g]: sp.S.One} if g in var_index else deriv[g]
            for k, dfk in chain.items():
                term = pd * dfk
                acc[k] = acc[k] + term if k in acc else term
        return {k: v for k, v in acc.items() if v != 0}

    def support(comb: dict[sp.Symbol, sp.Expr]) -> int:
        return len({k for g in comb for k in ((var_index[g],) if g in var_index else deriv[g])})

    for s, e in kept:
        out_assign.append((s, e))
        comb = local(e)
        if fold and comb and reads.get(s, 0) * len(comb) < FOLD_RATIO * support(comb):
            folded[s] = {g: new_symbol(c) for g, c in comb.items()}
            continue
        g = grad(comb)
        entries: dict[int, sp.Expr] = {}
        for k in sorted(g):
            entries[k] = new_symbol(g[k])
        if entries:
            deriv[s] = entries

    jac: list[list[sp.Expr]] = []
    for o in outputs:
        g = grad(local(o))
        jac.append([g.get(k, sp.S.Zero) for k in range(len(variables))])
    return out_assign, jac


@dataclass(frozen=True)
class TangentChain:
    """The tangent (directional derivative) of straight-line code, split into two routines.

    primal : the given assignments the outputs need, each followed by the definitions of its
        local partials ``d e_i / d s_j`` that are not a number or a symbol already (in order).
    partials : the symbols of ``primal`` whose values the tangent reads, in the order of their slots
        (a routine evaluates them once per point).
    tangent : ``(symbol, expression)`` in evaluation order: each a sum of a partial times the tangent
        of an earlier symbol or a seed; linear in the seeds.
    outputs : the directional derivative of each output, in the symbols of ``tangent``, the seeds,
        the partials and the inputs.
    seeds : one direction symbol per variable (``d x_k``).
    """

    primal: list[tuple[sp.Symbol, sp.Expr]]
    partials: list[sp.Symbol]
    tangent: list[tuple[sp.Symbol, sp.Expr]]
    outputs: list[sp.Expr]
    seeds: list[sp.Symbol]


def tangent_chain(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr],
                  variables: Sequence[sp.Symbol], *, prefix: str = "_t") -> TangentChain:
    """The derivative of ``outputs`` along a direction ``dx`` of ``variables``, through the chain.

    For every assignment ``s_i = e_i(x, s_0..s_i-1)``

        ds_i = sum_j (de_i/ds_j) ds_j + sum_k (de_i/dx_k) dx_k

    with the partials evaluated at the point (they become assignments of the primal chain,
    a common partial written once) and ``ds_j`` the tangents of earlier symbols. The tangent
    chain has one term per (assignment, dependency) pair, so its size is that of the chain
    whatever the number of variables; ``outputs[r]`` along the unit direction ``e_k`` is
    d outputs[r] / d x_k.

    Parameters
    ----------
    assignments : intermediate ``(symbol, expression)`` pairs in evaluation order.
    outputs : expressions in the variables, other symbols (inputs held fixed) and the assignment symbols.
    variables : the symbols to differentiate by.
    prefix : name stem of the new symbols (``<prefix>p<k>`` partials, ``<prefix>d<k>`` tangents,
        ``<prefix>s<k>`` seeds).
    """
    outputs = [sp.sympify(o) for o in outputs]
    seeds = [sp.Symbol(f"{prefix}s{k}", real=True) for k in range(len(variables))]
    seed_of = dict(zip(variables, seeds))
    kept = needed_assignments(assignments, outputs)
    kept, outputs = _split_large(kept, outputs, prefix)
    defined = {s for s, _ in kept}

    primal: list[tuple[sp.Symbol, sp.Expr]] = []
    partial_of: dict[sp.Expr, sp.Symbol] = {}      # a partial's expression -> its primal symbol
    partials = set()                               # those symbols
    read: dict[sp.Symbol, None] = {}               # primal symbols the tangent reads, in order
    tan: dict[sp.Symbol, sp.Expr] = {}             # assignment symbol -> its tangent (symbol or seed)
    tangent: list[tuple[sp.Symbol, sp.Expr]] = []
    counter = {"p": 0, "d": 0}

    def coefficient(partial: sp.Expr, after: list[tuple[sp.Symbol, sp.Expr]]) -> sp.Expr:
        """A partial as the tangent reads it: a number, an input symbol, or a primal symbol."""
        if partial.is_Number:
            return partial
        neg = partial.could_extract_minus_sign()
        key = -partial if neg else partial
        if key.is_Symbol:
            sym = key
        else:
            sym = partial_of.get(key)
            if sym is None:
                sym = sp.Symbol(f"{prefix}p{counter['p']}", real=True)
                counter["p"] += 1
                partial_of[key] = sym
                partials.add(sym)
                after.append((sym, key))
        if sym in defined or sym in partials:
            read[sym] = None
        return -sym if neg else sym

    def directional(expr: sp.Expr, after: list[tuple[sp.Symbol, sp.Expr]]) -> sp.Expr:
        terms = []
        for f in sorted(expr.free_symbols, key=str):
            d = seed_of.get(f)
            if d is None:
                d = tan.get(f)
            if d is None:
                continue
            pd = partial(expr, f)
            if pd == 0:
                continue
            terms.append(coefficient(pd, after) * d)
        return sp.Add(*terms)

    for s, e in kept:
        primal.append((s, e))
        after: list[tuple[sp.Symbol, sp.Expr]] = []
        d = directional(e, after)
        primal += after
        if d == 0:
            continue
        if d.is_Symbol:
            tan[s] = d
            continue
        sym = sp.Symbol(f"{prefix}d{counter['d']}", real=True)
        counter["d"] += 1
        tangent.append((sym, d))
        tan[s] = sym
    out: list[sp.Expr] = []
    for o in outputs:
        after = []
        out.append(directional(o, after))
        primal += after
    return TangentChain(primal, list(read), tangent, out, seeds)


def split_large_expressions(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr],
                            prefix: str) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """The assignments that ``outputs`` need and the outputs, every expression over
    :data:`LARGE_EXPRESSION` nodes split into one assignment per operation (new symbols ``<prefix>e<k>``),
    as :func:`tangent_chain` differentiates them; for :func:`forward_derivatives` of expanded laws."""
    outs = [sp.sympify(o) for o in outputs]
    return _split_large(needed_assignments(assignments, outs), outs, prefix)


#: Nodes of an expression above which :func:`tangent_chain` splits it into one assignment per operation
#: before differentiating (an expanded force law or a row of M qdd: its partials would each repeat it).
LARGE_EXPRESSION = 40


def _larger_than(expr: sp.Expr, size: int) -> bool:
    for k, _ in enumerate(sp.preorder_traversal(expr)):
        if k >= size:
            return True
    return False


#: Functions defined for every real argument: inside a Piecewise branch they may be evaluated
#: unconditionally (an operation that may be undefined there, a fractional power of a penetration or
#: a division, stays inside its branch).
TOTAL_FUNCTIONS = (sp.sin, sp.cos, sp.tanh, sp.atan, sp.Abs, sp.sign, sp.Max, sp.Min)


def _total(node: sp.Expr) -> bool:
    """Whether an operation (its operands being symbols) is defined and finite for every value of them."""
    if isinstance(node, (sp.Add, sp.Mul)):
        return True
    if isinstance(node, sp.Pow):
        return bool(node.exp.is_Integer and node.exp > 0)
    return isinstance(node, TOTAL_FUNCTIONS)


def _split_large(kept: list[tuple[sp.Symbol, sp.Expr]], outputs: list[sp.Expr],
                 prefix: str) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """Large expressions of the chain and the outputs as chains of single operations.

    Every operation (sum, product, power, function, the sides of a Piecewise's conditions) of a
    large expression gets a symbol of its own, a repeated subexpression one symbol (shared by all the
    large expressions), so that each partial is a small expression of symbols and the tangent has one
    term per operand: its size follows the expression's, not the expression's size times its number
    of free symbols. Inside a Piecewise branch only operations defined everywhere (:func:`_total`) of
    operands defined everywhere get a symbol (evaluated whatever the condition); the others stay in
    the branch, which the partials then differentiate under its condition. Small expressions are
    kept as they are.
    """
    memo: dict[tuple[sp.Expr, bool], tuple[sp.Expr, bool]] = {}
    node_of: dict[sp.Expr, sp.Symbol] = {}
    out: list[tuple[sp.Symbol, sp.Expr]] = []
    counter = [0]

    def rebuild(expr: sp.Expr, guarded: bool) -> tuple[sp.Expr, bool]:
        """(the operation with split operands, whether it is defined everywhere)."""
        if isinstance(expr, sp.Piecewise):
            pairs = []
            for e, c in expr.args:
                if isinstance(c, sp.core.relational.Relational):
                    c = c.func(split(c.lhs, guarded)[0], split(c.rhs, guarded)[0])
                pairs.append((split(e, True)[0], c))
            return sp.Piecewise(*pairs), False
        if isinstance(expr, (sp.Add, sp.Mul, sp.Pow, sp.Function, sp.Max, sp.Min)):
            parts = [split(a, guarded) for a in expr.args]
            node = expr.func(*[a for a, _ in parts])
            return node, all(ok for _, ok in parts) and _total(node)
        return expr, False

    def split(expr: sp.Expr, guarded: bool) -> tuple[sp.Expr, bool]:
        if expr.is_Atom:
            return expr, True
        hit = memo.get((expr, guarded))
        if hit is not None:
            return hit
        node, ok = rebuild(expr, guarded)
        if not node.is_Atom and (ok or not guarded):
            sym = node_of.get(node)
            if sym is None:
                sym = sp.Symbol(f"{prefix}e{counter[0]}", real=True)
                counter[0] += 1
                node_of[node] = sym
                out.append((sym, node))
            node, ok = sym, True
        memo[(expr, guarded)] = (node, ok)
        return node, ok

    chain: list[tuple[sp.Symbol, sp.Expr]] = []
    for s, e in kept:
        if _larger_than(e, LARGE_EXPRESSION):
            e = rebuild(e, False)[0]
            chain += out
            out.clear()
        chain.append((s, e))
    result = []
    for o in outputs:
        if _larger_than(o, LARGE_EXPRESSION):
            o = rebuild(o, False)[0]
        result.append(o)
    return chain + out, result


__all__ = ["forward_derivatives", "tangent_chain", "TangentChain", "partial", "split_large_expressions"]
