"""Lowering: Equations -> ModelSpec (straight-line code for every routine).

Each routine is a list of output expressions. Its code is made in three steps:

1. *prune* the given intermediate ``assignments`` (the recursive method emits
   many) to those the outputs need, keeping their order and never expanding
   them;
2. *common subexpressions*: ``sympy.cse`` in canonical order over the kept
   assignments and the outputs; the given assignments stay temporaries of
   their own, and the new ones are placed right before their first use;
3. *print* every statement with :class:`SlotPrinter`, which maps each
   coordinate, rate, input and parameter to its array slot and each
   temporary to ``t<k>`` (numbered in evaluation order), so no name from the
   model reaches the C code.

Routines longer than ``CodegenOptions.max_statements`` are cut into static
parts that pass the temporaries they share through a local work array.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from typing import Iterable, Optional, Sequence

import sympy as sp

from ..errors import CodegenError
from ..symbolic.equations import Equations
from .printer import SlotPrinter, c_double, count_ops
from .spec import Argument, Kernel, ModelSpec, Part, Routine, Section, Slot, Statement, comment_text


@dataclass(frozen=True)
class CodegenOptions:
    """Options of the code stage (keyword-only where used).

    cse : find common subexpressions (``False`` prints every output as it is).
    max_statements : the most statements one C function holds before the
        routine is split into static parts (keeps compile times short).
    """

    cse: bool = True
    max_statements: int = 2000

    def __post_init__(self) -> None:
        if not isinstance(self.max_statements, int) or self.max_statements < 10:
            raise CodegenError(f"max_statements must be an integer of at least 10, got {self.max_statements!r}")


_C_RESERVED = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "main".split())


def prefix_of(name: str) -> str:
    """The lower-case C prefix of a model name; refuses names that are not safe identifiers."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii() or name.startswith("_"):
        raise CodegenError(f"model name {name!r} cannot be used as a C prefix: use letters, digits and "
                           f"underscores, starting with a letter")
    prefix = name.lower()
    if prefix in _C_RESERVED:
        raise CodegenError(f"model name {name!r} gives the C prefix {prefix!r}, a C keyword; rename the model")
    return prefix


# ---------------------------------------------------------------------------
# straight-line code for one routine
# ---------------------------------------------------------------------------

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
    return _drop_aliases(temps, outs)


def _drop_aliases(temps: list[tuple[sp.Symbol, sp.Expr]],
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


@dataclass
class _Group:
    """An argument of a routine and the symbols that live in it."""

    arg: Argument
    symbols: Sequence[sp.Basic]


def _routine(name: str, c_name: str, summary: str, doc: Sequence[str], groups: Sequence[_Group],
             outputs: Sequence[tuple[str, str, list[tuple[str, sp.Expr]]]],
             copies: Sequence[tuple[str, str, list[tuple[str, str]]]],
             assignments: Sequence[tuple[sp.Symbol, sp.Expr]], options: CodegenOptions,
             static: bool = False) -> Routine:
    """Build one routine.

    outputs : (argument name, section comment, [(slot text, expression)]) per output argument.
    copies : (argument name, section comment, [(slot text, slot text)]) plain copies done last
        (the mirrored upper triangle of a symmetric matrix).
    """
    flat = [(slot, ex) for _, _, items in outputs for slot, ex in items]
    temps, reduced = straight_line(assignments, [ex for _, ex in flat], cse=options.cse)

    inputs = [g for g in groups if not g.arg.output]
    slot_of: dict[sp.Basic, str] = {}
    for g in inputs:
        for i, s in enumerate(g.symbols):
            slot_of[s] = f"{g.arg.c_name}[{i}]"
    group_names = ", ".join(g.arg.c_name for g in inputs) or "none"

    # statements: ("temp", sym, expr) | ("out", slot, expr) | ("copy", slot, slot)
    stmts: list[tuple[str, object, object]] = [("temp", s, e) for s, e in temps]
    stmts += [("out", slot, ex) for (slot, _), ex in zip(flat, reduced)]
    stmts += [("copy", a, b) for _, _, items in copies for a, b in items]

    # split into parts of at most max_statements
    size = options.max_statements
    nparts = max(1, -(-len(stmts) // size))
    part_of_stmt = [k // size for k in range(len(stmts))] if nparts > 1 else [0] * len(stmts)
    temp_part: dict[sp.Symbol, int] = {}
    crossing: set[sp.Symbol] = set()
    free: list[set[sp.Basic]] = []
    for k, (kind, a, b) in enumerate(stmts):
        fs = b.free_symbols if kind != "copy" else set()  # type: ignore[union-attr]
        free.append(fs)
        if nparts > 1:
            for s in fs:
                if s in temp_part and temp_part[s] != part_of_stmt[k]:
                    crossing.add(s)
        if kind == "temp":
            temp_part[a] = part_of_stmt[k]  # type: ignore[index]

    # names of temporaries: t<k> locals, or w[j] when shared between parts
    names: dict[sp.Basic, str] = dict(slot_of)
    work = 0
    for k, (s, _) in enumerate(temps):
        if s in crossing:
            names[s] = f"w[{work}]"
            work += 1
        else:
            names[s] = f"t{k}"
    printer = SlotPrinter(names, routine=name, groups=group_names)

    ops = 0
    lines: list[tuple[int, str, Statement]] = []   # (part, section key, statement)
    for k, (kind, a, b) in enumerate(stmts):
        if kind == "temp":
            ops += count_ops(b)  # type: ignore[arg-type]
            st = Statement(names[a], printer.doprint(b), declare=not names[a].startswith("w["))  # type: ignore
            key = "temp"
        elif kind == "out":
            ops += count_ops(b)  # type: ignore[arg-type]
            st = Statement(str(a), printer.doprint(b))
            key = "out:" + str(a).split("[")[0]
        else:
            st = Statement(str(a), str(b))
            key = "copy:" + str(a).split("[")[0]
        lines.append((part_of_stmt[k], key, st))

    comments = {"out:" + arg: comment for arg, comment, _ in outputs}
    comments.update({"copy:" + arg: comment for arg, comment, _ in copies})

    def sections_of(part: int) -> tuple[Section, ...]:
        out: list[Section] = []
        current: list[Statement] = []
        key = None
        for p, k, st in lines:
            if p != part:
                continue
            if k != key and current:
                out.append(_section(key, current, comments))
                current = []
            key = k
            current.append(st)
        if current:
            out.append(_section(key, current, comments))
        return tuple(out)

    used_all = set().union(*free) if free else set()

    def unused_in(fs: Iterable[sp.Basic]) -> tuple[str, ...]:
        fs = set(fs)
        out = []
        for g in inputs:
            if not any(s in fs for s in g.symbols):
                out.append(g.arg.c_name)
        return tuple(out)

    args = tuple(g.arg for g in groups)
    if nparts == 1:
        written = {str(a).split("[")[0] for kind, a, _ in stmts if kind != "temp"}
        unused = unused_in(used_all) + tuple(g.arg.c_name for g in groups
                                             if g.arg.output and g.arg.c_name not in written)
        return Routine(name, c_name, summary, tuple(doc), args, static, unused,
                       sections_of(0), (), 0, len(temps), ops)
    parts = []
    out_names = [g.arg.c_name for g in groups if g.arg.output]
    for j in range(nparts):
        idx = [k for k in range(len(stmts)) if part_of_stmt[k] == j]
        fs = set().union(*(free[k] for k in idx))
        writes = {str(stmts[k][1]).split("[")[0] for k in idx if stmts[k][0] != "temp"}
        reads = {str(stmts[k][2]).split("[")[0] for k in idx if stmts[k][0] == "copy"}
        defined = {stmts[k][1] for k in idx if stmts[k][0] == "temp"}
        uses_w = any(names.get(s, "").startswith("w[") for s in fs | defined)  # type: ignore[arg-type]
        unused = unused_in(fs) + tuple(nm for nm in out_names if nm not in writes | reads)
        if not uses_w:
            unused += ("w",)
        parts.append(Part(f"{c_name}_part{j}", sections_of(j), unused))
    # at least one slot: C99 has no zero-size arrays
    return Routine(name, c_name, summary, tuple(doc), args, static, (), (), tuple(parts), max(work, 1), len(temps),
                   ops)


def _section(key: Optional[str], statements: list[Statement], comments: dict[str, str]) -> Section:
    if key == "temp":
        n = len(statements)
        comment = f"{n} intermediate value{'s' if n != 1 else ''}"
    else:
        comment = comments.get(str(key), "")
    return Section(comment, tuple(statements))


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------

def lower(eqs: Equations, *, options: CodegenOptions | None = None, version: str | None = None) -> ModelSpec:
    """Lower equations of motion to the routine spec the templates render.

    Parameters
    ----------
    eqs : the Equations of a model (``rodgen.derive``).
    options : CodegenOptions; defaults if None.
    version : the rodgen version written into the files (default: the installed one).
    """
    options = options or CodegenOptions()
    if version is None:
        from .. import __version__ as version  # type: ignore[no-redef]
    assert version is not None
    model = eqs.model
    prefix = prefix_of(model.name)
    macro = prefix.upper()
    n, m, npar = len(eqs.q), len(eqs.u), len(eqs.params)
    if n == 0:
        raise CodegenError(f"model {model.name!r} has no coordinates; there is nothing to generate")
    _check_shapes(eqs)

    points = list(eqs.points.items())
    npts = len(points)
    pvals = {str(s): v for s, v in eqs.param_values.items()}
    units = {par.name: par for par in getattr(model, "parameters", [])}

    coord_slots = []
    for i, s in enumerate(eqs.q):
        c = eqs.coordinates[i] if i < len(eqs.coordinates) else None
        doc = _coordinate_doc(c)
        init = _initial_value(c, pvals)
        coord_slots.append(Slot(i, comment_text(s), doc, c_double(init), f"q[{i}]"))
    input_slots = []
    for j, s in enumerate(eqs.u):
        inp = eqs.inputs[j] if j < len(eqs.inputs) else None
        input_slots.append(Slot(j, comment_text(s), _input_doc(inp), "", f"u[{j}]"))
    param_slots = []
    for k, s in enumerate(eqs.params):
        if s not in eqs.param_values:
            raise CodegenError(f"parameter {str(s)!r} has no default value")
        par = units.get(str(s))
        unit = f"[{comment_text(par.unit, 20)}]" if par is not None and par.unit else ""
        pdoc = comment_text(par.doc, 60) if par is not None and par.doc else ""
        param_slots.append(Slot(k, comment_text(s), " ".join(x for x in (unit, pdoc) if x),
                                c_double(eqs.param_values[s]), f"p[{k}]"))
    point_slots = tuple(Slot(i, comment_text(nm, 60), "", "", f"r[{2 * i}], r[{2 * i + 1}]")
                        for i, (nm, _) in enumerate(points))

    # argument groups
    NQ, NU, NP, NPTS = f"{macro}_NQ", f"{macro}_NU", f"{macro}_NP", f"{macro}_NPOINTS"
    g_q = _Group(Argument("q", NQ, "coordinates"), eqs.q)
    g_qd = _Group(Argument("qd", NQ, "coordinate rates"), eqs.qd)
    g_qdd = _Group(Argument("qdd", NQ, "coordinate accelerations"), eqs.qdd)
    g_u = _Group(Argument("u", NU, "inputs"), eqs.u)
    g_p = _Group(Argument("p", NP, "parameters"), eqs.params)

    def out(name: str, length: str, doc: str) -> _Group:
        return _Group(Argument(name, length, doc, output=True), [])

    M, bias, B = eqs.M, eqs.bias, eqs.B
    lower_tri = [(i, j) for i in range(n) for j in range(i + 1)]
    m_items = [(f"M[{i * n + j}]", M[i, j]) for i, j in lower_tri]
    m_copies = [(f"M[{j * n + i}]", f"M[{i * n + j}]") for i, j in lower_tri if i != j]
    bu = B * sp.Matrix(eqs.u) if m else sp.zeros(n, 1)
    a = eqs.assignments
    r = []
    r.append(_routine(
        "mass_matrix", f"{prefix}_mass_matrix", "Mass matrix M(q), symmetric positive definite.",
        (f"M: {NQ} x {NQ}, row-major.",), [g_q, g_p, out("M", f"{NQ}*{NQ}", "mass matrix, row-major")],
        [("M", f"mass matrix, row-major {n}x{n}, lower triangle", m_items)],
        [("M", "upper triangle by symmetry", m_copies)], a, options))
    r.append(_routine(
        "bias", f"{prefix}_bias", "Bias forces h + G + K + D, as in M(q) qdd + bias = B(q) u.",
        ("velocity terms + gravity + springs + dampers.",), [g_q, g_qd, g_p, out("h", NQ, "bias forces")],
        [("h", "bias forces h + G + K + D", [(f"h[{i}]", bias[i]) for i in range(n)])], [], a, options))
    r.append(_routine(
        "gravity", f"{prefix}_gravity", "Gravity forces G(q) (part of the bias).", (),
        [g_q, g_p, out("g", NQ, "gravity forces")],
        [("g", "gravity forces G", [(f"g[{i}]", eqs.G[i]) for i in range(n)])], [], a, options))
    r.append(_routine(
        "input_map", f"{prefix}_input_map", "Input map B(q): generalized forces = B u.",
        (f"B: {NQ} x {NU}, row-major.",), [g_q, g_p, out("B", f"{NQ}*{NU}", "input map, row-major")],
        [("B", f"input map, row-major {n}x{m}", [(f"B[{i * m + j}]", B[i, j]) for i in range(n)
                                                  for j in range(m)])], [], a, options))
    r.append(_routine(
        "inverse_dynamics", f"{prefix}_inverse_dynamics",
        "Inverse dynamics: generalized forces Q = M(q) qdd + bias(q, qd).",
        ("Q equals B(q) u for the inputs u that produce the accelerations qdd.",),
        [g_q, g_qd, g_qdd, g_p, out("Q", NQ, "generalized forces")],
        [("Q", "generalized forces M qdd + bias",
          [(f"Q[{i}]", ex) for i, ex in enumerate(M * sp.Matrix(eqs.qdd) + bias)])], [], a, options))
    r.append(_routine(
        "energy", f"{prefix}_energy", "Kinetic and potential energy: e[0] = T, e[1] = V.",
        ("V holds gravity and springs.",), [g_q, g_qd, g_p, out("e", "2", "kinetic, potential energy")],
        [("e", "kinetic and potential energy", [("e[0]", eqs.T), ("e[1]", eqs.V)])], [], a, options))
    r.append(_routine(
        "points", f"{prefix}_points", "Positions of the marker points: r[2*i] = x, r[2*i+1] = y.",
        (), [g_q, g_p, out("r", f"2*{NPTS}", "point positions")],
        [("r", "marker points x, y", [(f"r[{2 * i + c}]", v[c]) for i, (_, v) in enumerate(points)
                                      for c in range(2)])], [], a, options))
    r.append(_routine(
        "mass_force", f"{prefix}_mass_force", "M(q) and f = B u - bias (used by forward_dynamics).", (),
        [g_q, g_qd, g_u, g_p, out("M", f"{NQ}*{NQ}", "mass matrix"), out("f", NQ, "B u - bias")],
        [("M", "mass matrix, lower triangle", m_items),
         ("f", "B u - bias", [(f"f[{i}]", bu[i] - bias[i]) for i in range(n)])], [], a, options, static=True))

    coords_meta = [str(s) for s in eqs.q]
    inits = [_initial_value(eqs.coordinates[i] if i < len(eqs.coordinates) else None, pvals) for i in range(n)]
    meta = (
        ("NAME", repr(model.name)), ("PREFIX", repr(prefix)), ("VERSION", repr(version)),
        ("METHOD", repr(str(eqs.method))),
        ("NQ", repr(n)), ("NU", repr(m)), ("NP", repr(npar)), ("NPOINTS", repr(npts)),
        ("COORDINATES", repr(tuple(coords_meta))), ("INPUTS", repr(tuple(str(s) for s in eqs.u))),
        ("PARAMETERS", repr(tuple(str(s) for s in eqs.params))),
        ("PARAMETER_VALUES", repr(tuple(float(eqs.param_values[s]) for s in eqs.params))),
        ("INITIAL_Q", repr(tuple(inits))),
        ("POINTS", repr(tuple(str(nm) for nm, _ in points))),
    )
    kernels = _kernels(prefix, macro)
    spec = ModelSpec(model.name, prefix, macro, version, str(eqs.method), comment_text(getattr(model, "doc", "")),
                     "", n, m, npar, npts, tuple(coord_slots), tuple(input_slots), tuple(param_slots),
                     point_slots, tuple(r), kernels, meta)
    digest = hashlib.sha256(_canonical(spec).encode()).hexdigest()[:16]
    meta = meta + (("CONTENT_HASH", repr(digest)),)
    return _replace(spec, content_hash=digest, meta=meta)


def _kernels(prefix: str, macro: str) -> tuple[Kernel, ...]:
    NQ, NU, NP, NPTS = f"{macro}_NQ", f"{macro}_NU", f"{macro}_NP", f"{macro}_NPOINTS"
    k = []

    def kern(name: str, ins: list[tuple[str, str]], outs: list[tuple[str, str]], status: bool = False,
             scalar_t: bool = False) -> Kernel:
        call = []
        for nm, _ in ins + outs:
            call.append(f"b_{nm}.d[i * b_{nm}.step]" if (scalar_t and nm == "t") else f"b_{nm}.d + i * b_{nm}.step")
        return Kernel(name, f"{prefix}_{name}", tuple(ins), tuple(outs), tuple(call), status)

    q, qd, qdd, u, p = ("q", NQ), ("qd", NQ), ("qdd", NQ), ("u", NU), ("p", NP)
    k.append(kern("mass_matrix", [q, p], [("M", f"{NQ}*{NQ}")]))
    k.append(kern("bias", [q, qd, p], [("h", NQ)]))
    k.append(kern("gravity", [q, p], [("g", NQ)]))
    k.append(kern("input_map", [q, p], [("B", f"{NQ}*{NU}")]))
    k.append(kern("forward_dynamics", [q, qd, u, p], [qdd], status=True))
    k.append(kern("inverse_dynamics", [q, qd, qdd, p], [("Q", NQ)]))
    k.append(kern("rhs", [("t", "1"), ("y", f"2*{NQ}"), u, p], [("dy", f"2*{NQ}")], status=True, scalar_t=True))
    k.append(kern("energy", [q, qd, p], [("e", "2")]))
    k.append(kern("points", [q, p], [("r", f"2*{NPTS}")]))
    return tuple(k)


def _check_shapes(eqs: Equations) -> None:
    n, m = len(eqs.q), len(eqs.u)
    expect = {"M": (n, n), "h": (n, 1), "G": (n, 1), "K": (n, 1), "D": (n, 1), "B": (n, m)}
    for nm, shape in expect.items():
        mat = getattr(eqs, nm)
        got = tuple(mat.shape)
        if got != shape and not (nm == "B" and m == 0 and got[0] == n):
            raise CodegenError(f"Equations.{nm} has shape {got}; expected {shape} for {n} coordinates "
                               f"and {m} inputs")
    for nm, v in eqs.points.items():
        if tuple(v.shape) not in ((2, 1), (1, 2)):
            raise CodegenError(f"point {nm!r} has shape {tuple(v.shape)}; expected (2, 1)")


def _coordinate_doc(c: object) -> str:
    if c is None:
        return ""
    kind, link, seg = getattr(c, "kind", ""), getattr(c, "link", None), getattr(c, "segment", None)
    if kind == "angle":
        return comment_text(f"angle of link {link}")
    if kind == "length":
        return comment_text(f"length of segment {seg} (link {link})")
    if kind == "base":
        return "base position"
    return comment_text(kind)


def _input_doc(inp: object) -> str:
    if inp is None:
        return ""
    kind, link, seg = getattr(inp, "kind", ""), getattr(inp, "link", None), getattr(inp, "segment", None)
    if kind == "torque":
        return comment_text(f"torque at the joint of link {link}")
    if kind == "force":
        return comment_text(f"force along segment {seg} (link {link})")
    return comment_text(kind)


def _initial_value(c: object, pvals: dict[str, float]) -> float:
    init = getattr(c, "initial", None)
    if init is None:
        return 0.0
    try:
        if hasattr(init, "evaluate"):
            return float(init.evaluate(pvals))
        return float(init)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AssertionError, KeyError):
        # an initial value that does not evaluate is the model stage's business, not ours
        return 0.0


def _canonical(spec: ModelSpec) -> str:
    def enc(o: object) -> object:
        if hasattr(o, "__dataclass_fields__"):
            return {f.name: enc(getattr(o, f.name)) for f in fields(o)}  # type: ignore[arg-type]
        if isinstance(o, (tuple, list)):
            return [enc(x) for x in o]
        return o
    return json.dumps(enc(spec), sort_keys=True, separators=(",", ":"))


def _replace(spec: ModelSpec, **changes: object) -> ModelSpec:
    from dataclasses import replace
    return replace(spec, **changes)  # type: ignore[arg-type]
