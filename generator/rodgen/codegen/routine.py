"""One generated routine: straight-line code for its outputs, printed, split into parts if long.

:func:`build_routine` takes the output expressions of one C function and
returns its :class:`~rodgen.codegen.spec.Routine`:

1. :func:`~rodgen.codegen.straight.straight_line` gives the temporaries and
   the reduced outputs;
2. :func:`split_statements` cuts the statements into parts of at most
   ``CodegenOptions.max_statements`` (static helpers that pass the
   temporaries they share through a local work array ``w``);
3. every statement is printed with :class:`SlotPrinter`, which maps each
   coordinate, rate, input and parameter to its array slot and each
   temporary to ``t<k>`` (numbered in evaluation order) or ``w[j]``, so no
   name from the model reaches the C code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import sympy as sp

from .options import CodegenOptions
from .printer import SlotPrinter, count_ops
from .spec import TRIG_LANES, Argument, Part, Routine, Section, Statement, TrigBatch, compact
from .straight import straight_line

#: A statement before printing: ("temp", symbol, expression) | ("out", slot text, expression)
#: | ("copy", slot text, slot text) | ("fill", slot text, (loop, value text)) | ("mirror", slot text,
#: (loop, slot text)); the last two are one assignment in a C loop.
Stmt = tuple[str, object, object]

#: Zero entries of an output array from which the array is zeroed in one loop and only its other entries are
#: written (an input map is mostly zeros; hundreds of stores of 0 cost the C compiler more than they say).
ZERO_FILL_MIN = 16


@dataclass
class Group:
    """An argument of a routine and the symbols that live in it (in slot order)."""

    arg: Argument
    symbols: Sequence[sp.Basic]


def output(name: str, length: str, doc: str) -> Group:
    """An output argument (it holds no symbols)."""
    return Group(Argument(name, length, doc, output=True), [])


@dataclass(frozen=True)
class _Trig:
    """A routine's batch of sines and cosines before printing: their arguments (expressions of the routine's
    inputs only), the symbols standing for sin and cos of each, and how many calls of the C library they
    replace (the operation count keeps counting them)."""

    args: tuple[sp.Expr, ...]
    sines: tuple[sp.Symbol, ...]
    cosines: tuple[sp.Symbol, ...]
    calls: int


class _TrigBatcher:
    """The rewrite (:func:`~rodgen.codegen.straight.straight_line`'s ``rewrite``) that puts a symbol in place of
    every sine and cosine whose argument is an expression of the routine's inputs alone (``sin(q7)``,
    ``cos(q1 - q2)``), when there are at least ``minimum`` such arguments: the routine then computes them all
    in one call at its top (:class:`~rodgen.codegen.spec.TrigBatch`). ``batch`` holds what it found."""

    def __init__(self, inputs: set[sp.Basic], minimum: int) -> None:
        self.inputs = inputs
        self.minimum = minimum
        self.batch: Optional[_Trig] = None

    def __call__(self, kept: list[tuple[sp.Symbol, sp.Expr]], outputs: list[sp.Expr]
                 ) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
        if self.minimum <= 0:
            return kept, outputs
        atoms: set[sp.Expr] = set()
        for ex in [e for _, e in kept] + list(outputs):
            for a in ex.atoms(sp.sin, sp.cos):
                fs = a.args[0].free_symbols
                if fs and fs <= self.inputs:
                    atoms.add(a)
        args = sorted({a.args[0] for a in atoms}, key=sp.default_sort_key)
        if len(args) < self.minimum:
            return kept, outputs
        index = {x: k for k, x in enumerate(args)}
        sines = tuple(sp.Symbol(f"rodgen_sin{k}", real=True) for k in range(len(args)))
        cosines = tuple(sp.Symbol(f"rodgen_cos{k}", real=True) for k in range(len(args)))
        subs = {a: (sines if isinstance(a, sp.sin) else cosines)[index[a.args[0]]] for a in atoms}
        self.batch = _Trig(tuple(args), sines, cosines, len(atoms))
        return [(s, e.xreplace(subs)) for s, e in kept], [o.xreplace(subs) for o in outputs]


def build_routine(name: str, c_name: str, summary: str, doc: Sequence[str], groups: Sequence[Group],
                  outputs: Sequence[tuple[str, str, list[tuple[str, sp.Expr]]]],
                  copies: Sequence[tuple[str, str, list[tuple[str, ...]]]],
                  assignments: Sequence[tuple[sp.Symbol, sp.Expr]], options: CodegenOptions,
                  static: bool = False, optional: Sequence[str] = ()) -> Routine:
    """Build one routine.

    outputs : (argument name, section comment, [(slot text, expression)]) per output argument.
    copies : (argument name, section comment, [(slot text, slot text)]) plain copies done last
        (the mirrored upper triangle of a symmetric matrix); an item ``(slot, slot, loop)`` is one
        copy inside the C loop header ``loop`` (``for (int i = 1; ...)``).
    assignments : intermediate ``(symbol, expression)`` the outputs may refer to.
    optional : output arguments the caller may pass as NULL: their stores run under ``if (<name> != 0)``.
    """
    flat = [(slot, ex) for _, _, items in outputs for slot, ex in items]
    inputs = [g for g in groups if not g.arg.output]
    slot_of: dict[sp.Basic, str] = {}
    for g in inputs:
        for i, s in enumerate(g.symbols):
            slot_of[s] = g.arg.c_name if g.arg.scalar else f"{g.arg.c_name}[{i}]"
    group_names = ", ".join(g.arg.c_name for g in inputs) or "none"

    batcher = _TrigBatcher(set(slot_of), options.trig_batch_min if options.real == "double" else 0)
    temps, reduced = straight_line(assignments, [ex for _, ex in flat], cse=options.cse, rewrite=batcher)
    trig = batcher.batch

    stmts: list[Stmt] = ([("trig", None, trig)] if trig is not None else []) + [("temp", s, e) for s, e in temps]
    done = 0
    for arg, _, items in outputs:
        block = list(zip([slot for slot, _ in items], reduced[done:done + len(items)]))
        done += len(items)
        zero = [ex.is_Number and ex == 0 for _, ex in block]
        if sum(zero) >= ZERO_FILL_MIN and [slot for slot, _ in block] == [f"{arg}[{i}]" for i in range(len(block))]:
            stmts.append(("fill", f"{arg}[k]", (f"for (int k = 0; k < {len(block)}; ++k)", "0.0")))
            block = [b for b, z in zip(block, zero) if not z]
        stmts += [("out", slot, ex) for slot, ex in block]
    for _, _, citems in copies:
        for item in citems:
            if len(item) == 3:
                stmts.append(("mirror", item[0], (item[2], item[1])))
            else:
                stmts.append(("copy", item[0], item[1]))
    ops = sum(count_ops(b) for kind, _, b in stmts if kind in ("temp", "out"))  # type: ignore[misc]
    if trig is not None:   # the calls of the C library it replaces, and its arguments' operations
        ops += trig.calls + sum(count_ops(x) for x in trig.args)
    if options.schedule == "depth-first" or (options.schedule == "auto" and compact(name, ops)):
        stmts = depth_first(stmts)
    stmts, part_of_stmt, crossing, free = _split_with_optional(stmts, options.max_statements, set(optional))
    nparts = max(part_of_stmt, default=0) + 1

    # names of temporaries: t<k> locals, or w[j] when shared between parts
    names: dict[sp.Basic, str] = dict(slot_of)
    work = 0
    for k, s in enumerate(st[1] for st in stmts if st[0] == "temp"):   # numbered in the printed order
        if s in crossing:
            names[s] = f"w[{work}]"
            work += 1
        else:
            names[s] = f"t{k}"
    # the batch's sines and cosines: local arrays, or places of the work array when later parts read them
    trig_shared = False
    if trig is not None:
        length = -(-len(trig.args) // TRIG_LANES) * TRIG_LANES
        both = set(trig.sines + trig.cosines)
        trig_shared = any(part_of_stmt[k] != 0 and free[k] & both for k in range(len(stmts)))
        (sa, so), (ca, co) = ((("w", work), ("w", work + length)) if trig_shared
                              else (("rodgen_sin", 0), ("rodgen_cos", 0)))
        for k, (sn, cs) in enumerate(zip(trig.sines, trig.cosines)):
            names[sn], names[cs] = f"{sa}[{so + k}]", f"{ca}[{co + k}]"
        where = (f"w + {so}", f"w + {co}") if trig_shared else (sa, ca)
        work += 2 * length if trig_shared else 0
    printer = SlotPrinter(names, routine=name, groups=group_names, real=options.real)
    if trig is not None:
        stmts[0] = ("trig", None, TrigBatch(tuple(printer.doprint(x) for x in trig.args), length, where[0],
                                            where[1], not trig_shared))
    lines = _print(stmts, part_of_stmt, names, printer)
    comments = {"out:" + arg: comment for arg, comment, _ in outputs}
    comments.update({"copy:" + arg: comment for arg, comment, _ in copies})
    comments.update({"guard:out:" + arg: f"{arg} != 0" for arg in optional})

    def unused_in(fs: Iterable[sp.Basic]) -> tuple[str, ...]:
        fs = set(fs)
        return tuple(g.arg.c_name for g in inputs if not any(s in fs for s in g.symbols))

    args = tuple(g.arg for g in groups)
    if nparts == 1:
        used_all = set().union(*free) if free else set()
        written = {_array(a) for kind, a, _ in stmts if kind != "temp"}
        unused = unused_in(used_all) + tuple(g.arg.c_name for g in groups
                                             if g.arg.output and g.arg.c_name not in written)
        return Routine(name, c_name, summary, tuple(doc), args, static, unused,
                       _sections(lines, 0, comments), (), 0, len(temps), ops)
    parts = []
    out_names = [g.arg.c_name for g in groups if g.arg.output]
    for j in range(nparts):
        idx = [k for k in range(len(stmts)) if part_of_stmt[k] == j]
        fs = set().union(*(free[k] for k in idx))
        writes = {_array(stmts[k][1]) for k in idx if stmts[k][0] != "temp"}
        reads = {_array(stmts[k][2] if stmts[k][0] == "copy" else stmts[k][2][1])  # type: ignore[index]
                 for k in idx if stmts[k][0] in ("copy", "mirror")}
        defined = {stmts[k][1] for k in idx if stmts[k][0] == "temp"}
        uses_w = (j == 0 and trig_shared) or any(names.get(s, "").startswith("w[")  # type: ignore[arg-type]
                                                 for s in fs | defined)
        unused = unused_in(fs) + tuple(nm for nm in out_names if nm not in writes | reads)
        if not uses_w:
            unused += ("w",)
        parts.append(Part(f"{c_name}_part{j}", _sections(lines, j, comments), unused))
    # at least one slot: C99 has no zero-size arrays
    return Routine(name, c_name, summary, tuple(doc), args, static, (), (), tuple(parts), max(work, 1), len(temps),
                   ops)


def depth_first(stmts: Sequence[Stmt]) -> list[Stmt]:
    """The statements reordered depth first: the other statements (the batch of sines, the stores, fills and
    copies) in their order, each preceded by the temporaries it needs that are not computed yet, in depth-first
    post-order (a temporary's own temporaries first, in their given order). Like the given order it computes
    every temporary before its uses; a temporary is computed for the store that first needs it, not in a
    recursion's pass over every body (:attr:`CodegenOptions.schedule`)."""
    index = {st[1]: k for k, st in enumerate(stmts) if st[0] == "temp"}
    needs = [sorted(index[x] for x in st[2].free_symbols if x in index) if isinstance(st[2], sp.Basic) else []
             for st in stmts]
    done = [False] * len(stmts)
    out: list[Stmt] = []
    for top, st in enumerate(stmts):
        if st[0] == "temp":
            continue
        stack = [(top, 0)]          # (statement, its next needed temporary): an explicit stack, no recursion limit
        while stack:
            k, i = stack.pop()
            d = needs[k]
            while i < len(d) and done[d[i]]:
                i += 1
            if i < len(d):
                stack += [(k, i + 1), (d[i], 0)]
            elif not done[k]:
                done[k] = True
                out.append(stmts[k])
    out += [st for k, st in enumerate(stmts) if not done[k]]   # temporaries no statement reads (none, normally)
    return out


def _split_with_optional(stmts: list[Stmt], size: int, optional: set[str]
                         ) -> tuple[list[Stmt], list[int], set[sp.Basic], list[set[sp.Basic]]]:
    """:func:`split_statements` of the statements but the stores into the ``optional`` outputs, which then go
    to the end of the part that defines their last temporary (one guarded section a part, and no temporary
    kept in the work array only for them): (statements, part of each, crossing, free symbols)."""
    opt = [st for st in stmts if st[0] == "out" and _array(st[1]) in optional]
    if not opt:
        return (stmts, *split_statements(stmts, size))
    base = [st for st in stmts if not (st[0] == "out" and _array(st[1]) in optional)]
    part_of_base, _, _ = split_statements(base, size)
    temp_part = {st[1]: p for st, p in zip(base, part_of_base) if st[0] == "temp"}
    last = max(part_of_base, default=0)
    at: dict[int, list[Stmt]] = {}
    for st in opt:
        fs = st[2].free_symbols if isinstance(st[2], sp.Basic) else set()
        at.setdefault(max((temp_part[s] for s in fs if s in temp_part), default=last), []).append(st)
    out: list[Stmt] = []
    parts: list[int] = []
    for j in range(last + 1):
        chunk = [st for st, p in zip(base, part_of_base) if p == j] + at.get(j, [])
        out += chunk
        parts += [j] * len(chunk)
    return (out, *_crossing(out, parts))


def _crossing(stmts: Sequence[Stmt], part_of_stmt: list[int]) -> tuple[list[int], set[sp.Basic], list[set[sp.Basic]]]:
    """(part of each statement, the temporaries used in another part than the one defining them, the free
    symbols of each statement) for the given parts."""
    nparts = max(part_of_stmt, default=0) + 1
    temp_part: dict[sp.Basic, int] = {}
    crossing: set[sp.Basic] = set()
    free: list[set[sp.Basic]] = []
    for k, (kind, a, b) in enumerate(stmts):
        fs: set[sp.Basic] = b.free_symbols if isinstance(b, sp.Basic) else set()
        if isinstance(b, _Trig):   # the batch's arguments: the routine's inputs
            fs = set().union(*(x.free_symbols for x in b.args))
        free.append(fs)
        if nparts > 1:
            for s in fs:
                if s in temp_part and temp_part[s] != part_of_stmt[k]:
                    crossing.add(s)
        if kind == "temp":
            temp_part[a] = part_of_stmt[k]  # type: ignore[index]
    return part_of_stmt, crossing, free


def split_statements(stmts: Sequence[Stmt], size: int) -> tuple[list[int], set[sp.Basic], list[set[sp.Basic]]]:
    """Cut statements into consecutive parts of at most ``size``.

    Returns the part of each statement, the temporaries used in another part than the one
    defining them (they go into the work array), and the free symbols of each statement.
    """
    nparts = max(1, -(-len(stmts) // size))
    return _crossing(stmts, [k // size for k in range(len(stmts))] if nparts > 1 else [0] * len(stmts))


def _print(stmts: Sequence[Stmt], part_of_stmt: Sequence[int], names: dict[sp.Basic, str],
           printer: SlotPrinter) -> list[tuple[int, str, Statement]]:
    """(part, section key, printed statement) per statement."""
    lines: list[tuple[int, str, Statement]] = []
    for k, (kind, a, b) in enumerate(stmts):
        if kind == "temp":
            st = Statement(names[a], printer.doprint(b), declare=not names[a].startswith("w["))  # type: ignore
            key = "temp"
        elif kind == "out":
            st = Statement(str(a), printer.doprint(b))
            key = "out:" + _array(a)
        elif kind == "copy":
            st = Statement(str(a), str(b))
            key = "copy:" + _array(a)
        elif isinstance(b, TrigBatch):
            st = Statement("", "", trig=b)
            key = "trig"
        else:
            loop_rhs: tuple[str, str] = b  # type: ignore[assignment]
            value = printer.number(0.0) if kind == "fill" else loop_rhs[1]   # a literal of the routine's type
            st = Statement(str(a), value, loop=loop_rhs[0])
            key = ("out:" if kind == "fill" else "copy:") + _array(a)
        lines.append((part_of_stmt[k], key, st))
    return lines


def _array(slot: object) -> str:
    """The array name of a slot text (``M`` of ``M[3]``)."""
    return str(slot).split("[")[0]


def _sections(lines: Sequence[tuple[int, str, Statement]], part: int,
              comments: dict[str, str]) -> tuple[Section, ...]:
    """The statements of one part, grouped into commented sections."""
    out: list[Section] = []
    current: list[Statement] = []
    key: Optional[str] = None
    seen: set[str] = set()

    def close() -> None:
        sec = _section(key, current, comments)
        if key != "temp" and key in seen:     # an output continued after more intermediate values
            sec = Section("", sec.statements, sec.guard)
        seen.add(str(key))
        out.append(sec)

    for p, k, st in lines:
        if p != part:
            continue
        if k != key and current:
            close()
            current = []
        key = k
        current.append(st)
    if current:
        close()
    return tuple(out)


def _section(key: Optional[str], statements: list[Statement], comments: dict[str, str]) -> Section:
    if key == "temp":
        n = len(statements)
        comment = f"{n} intermediate value{'s' if n != 1 else ''}"
    elif key == "trig":
        batch = statements[0].trig
        assert batch is not None
        comment = f"the sines and cosines of {len(batch.args)} arguments, in one call"
    else:
        comment = comments.get(str(key), "")
    return Section(comment, tuple(statements), comments.get(f"guard:{key}", ""))
