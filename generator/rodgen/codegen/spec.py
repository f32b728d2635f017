"""The routine spec: what the templates get, and nothing more.

``lower(equations) -> ModelSpec``; the templates read these frozen dataclasses
(names, slot tables, straight-line statements as ``(lhs, rhs)`` strings) and
make no decisions of their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence


@dataclass(frozen=True)
class Slot:
    """One entry of an input array: ``q[3]`` is coordinate ``phi_torso``.

    ``name`` and ``doc`` are sanitised for comments (see :func:`comment_text`);
    ``value`` is the printed default (parameters) or initial value (coordinates).
    """

    index: int
    name: str
    doc: str = ""
    value: str = ""
    label: str = ""      # where it lives, e.g. "q[3]" or "r[6], r[7]"
    macro: str = ""      # the header's index macro, e.g. "EXO5_Q_PHI_TORSO" (#define EXO5_Q_PHI_TORSO 3)


@dataclass(frozen=True)
class Argument:
    """A pointer argument of a routine: ``const double *q`` (length NQ), or the scalar time ``double t``
    (``scalar``; its length is empty)."""

    c_name: str
    length: str          # C expression of the length, e.g. "EXO5_NQ" or "2*EXO5_NPOINTS"
    doc: str
    output: bool = False
    scalar: bool = False
    #: C99 ``restrict``: no other argument reaches this array (static routines whose callers are generated), so
    #: the compiler may move its loads and stores past the others' (a loop's next step starts sooner)
    restrict: bool = False

    @property
    def decl(self) -> str:
        if self.scalar:
            return f"double {self.c_name}"
        star = "*restrict " if self.restrict else "*"
        return f"double {star}{self.c_name}" if self.output else f"const double {star}{self.c_name}"


#: The lanes a batch of sines and cosines is padded to (zeros): whole vectors of AVX-512 (8), AVX (4) and SSE2 (2),
#: no scalar remainder (measured: 36 arguments in 0.12 us, the same padded to 40 in 0.06 us).
TRIG_LANES = 8


@dataclass(frozen=True)
class TrigBatch:
    """The sines and cosines of a routine's arguments computed in one call of ``<prefix>_sincos`` at its top
    (its loop vectorised), instead of one ``sin`` and one ``cos`` of the C library each: ``args`` are the
    arguments as C expressions (``q[7]``), padded with zeros to ``length`` (a multiple of :data:`TRIG_LANES`);
    the sines go to ``sines[0 .. length)`` and the cosines to ``cosines[0 .. length)``, local arrays of those
    names when ``local``, else places of the work array (``w + 40``) that the routine's parts share."""

    args: tuple[str, ...]
    length: int
    sines: str
    cosines: str
    local: bool


@dataclass(frozen=True)
class Statement:
    """One line of straight-line code: ``const double t3 = q[0]*p[1];`` or ``M[4] = t3;`` (or, with ``trig``,
    the call that computes a batch of sines and cosines)."""

    lhs: str
    rhs: str
    declare: bool = False
    loop: str = ""                 # a C loop the assignment runs in (a zero fill, a mirrored triangle)
    trig: Optional[TrigBatch] = None


@dataclass(frozen=True)
class Section:
    """A commented group of statements (``/* 143 common subexpressions */``)."""

    comment: str
    statements: tuple[Statement, ...]
    guard: str = ""                # a C condition the statements run under (an output the caller may pass NULL)


@dataclass(frozen=True)
class Part:
    """A static helper holding one slice of a long routine (see ``Routine.parts``)."""

    c_name: str
    sections: tuple[Section, ...]
    unused: tuple[str, ...]


@dataclass(frozen=True)
class Routine:
    """A generated function computing outputs from inputs by straight-line code.

    When the body is short it sits in ``sections``; when it is long it is
    split into ``parts`` (static functions of at most ``CodegenOptions.max_statements`` statements each)
    that pass shared temporaries through a local work array ``w[work]``.
    """

    name: str                      # "mass_matrix"
    c_name: str                    # "exo5_mass_matrix"
    summary: str                   # one line for the header
    doc: tuple[str, ...]           # further lines
    args: tuple[Argument, ...]
    static: bool
    unused: tuple[str, ...]        # arguments the body does not read: cast to (void)
    sections: tuple[Section, ...]
    parts: tuple[Part, ...] = ()
    work: int = 0
    temporaries: int = 0
    ops: int = 0
    # (C condition on the inputs, static routine of the same signature) tried in order before the body:
    # the first whose condition holds computes the outputs instead
    dispatch: tuple[tuple[str, str], ...] = ()

    @property
    def signature(self) -> str:
        return ", ".join(a.decl for a in self.args)


@dataclass(frozen=True)
class ConstraintBlock:
    """One row of the model's constraint table (``rodgen_constraint`` in ``rodgen_model.h``).

    ``name`` is a validated identifier (safe inside a C string); ``kind`` is ``"contact"``,
    ``"loop"`` or ``"limit"``, ``macro`` its C constant (``RODGEN_CONTACT``...) and ``code``
    that constant's value; ``row`` the block's first row, ``nrows`` its rows; ``sole`` a flat foot's
    sole ``(x_min, x_max, y_min, y_max)`` or None (the table's ``sole`` is then zero: no sole).
    """

    name: str
    kind: str
    macro: str
    code: int
    row: int
    nrows: int
    sole: Optional[tuple[float, float, float, float]] = None


#: the most row updates (H[i][j] -= l H[k][j]) of the factorisation M = L^T D L printed as straight-line code
#: (:meth:`ModelSpec.ltdl_steps`); above, the loops over the tree's tables
LTDL_STRAIGHT_MAX = 1000


#: the routines printed with ``<MACRO>_SPEED`` (:meth:`ModelSpec.speed_routine`)
SPEED_ROUTINES = frozenset({"articulated", "bias", "inverse_dynamics", "inverse_dynamics_derivatives",
                            "inverse_dynamics_vectors", "inverse_dynamics_rest", "jacobian_terms"})


#: the routines printed with ``<MACRO>_COMPACT`` (:meth:`ModelSpec.compact_routine`), by the start of their name,
#: from :data:`COMPACT_MIN_OPS` operations (about 32 kB of machine code at -O1, a level-1 instruction cache)
COMPACT_ROUTINES = ("constrained_solve",)
COMPACT_MIN_OPS = 4000


def compact(name: str, ops: int) -> bool:
    """Whether a routine of this name and operation count is compiled for size (:meth:`ModelSpec.compact_routine`)
    and, by default, printed depth first (``CodegenOptions.schedule``)."""
    return name.startswith(COMPACT_ROUTINES) and ops >= COMPACT_MIN_OPS


def ancestors_of(parents: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Each velocity's ancestors in a tree given by its parents (-1: a root), from the parent down to the root."""
    out: list[tuple[int, ...]] = []
    for j in range(len(parents)):
        a, mine = parents[j], []
        while a >= 0:
            mine.append(a)
            a = parents[a]
        out.append(tuple(mine))
    return out


def runs_of(rows: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """Rows of descending indices as runs of consecutive ones for the C loops: (run_start, runs), row r's runs
    ``runs[2 * run_start[r]:2 * run_start[r + 1]]`` as (highest, lowest) pairs."""
    run_start: list[int] = [0]
    runs: list[int] = []
    for row in rows:
        for x in row:
            if runs and len(runs) // 2 > run_start[-1] and runs[-1] == x + 1:
                runs[-1] = x
            else:
                runs += [x, x]
        run_start.append(len(runs) // 2)
    return run_start, runs


def ltdl_straight(parents: tuple[int, ...]) -> bool:
    """Whether the factorisation M = L^T D L along the tree of ``parents`` is printed as straight-line code: at
    most :data:`LTDL_STRAIGHT_MAX` row updates H[i][j] -= l H[k][j] (for each velocity k, each ancestor i of k
    updates its own ancestors' columns and its diagonal)."""
    anc = ancestors_of(parents)
    return sum(len(anc[i]) + 1 for k in range(len(parents)) for i in anc[k]) <= LTDL_STRAIGHT_MAX


def qdd_from_factor_pays(bias_ops: int, nv: int, nu: int, ancestor_pairs: int, forward_ops: int) -> bool:
    """Whether the RHS Jacobian takes qdd = M^-1 (B u - bias) from the factor it needs anyway instead of a
    forward-dynamics pass: where the bias, B u and the two passes over L, counted as operations, stay under 0.6 of
    the forward dynamics' (``forward_ops``). Measured, an operation of the articulated-body algorithm's code takes
    about 0.6 the time of one of the bias' (chain12: 0.57 against 1.12 us; a 36-link chain, over the line, 3.7
    against 2.8 us). The lowering asks it (it then generates ``<prefix>_jacobian_terms``)."""
    return bias_ops + nv * nu + 2 * ancestor_pairs < 0.6 * forward_ops


@dataclass(frozen=True)
class ModelSpec:
    """Everything the templates need to write ``<prefix>.h`` and ``<prefix>.c``."""

    name: str                      # model name (a validated identifier), e.g. "exo5"
    prefix: str                    # lower-case function prefix and file stem
    macro: str                     # upper-case macro prefix
    version: str                   # rodgen version
    method: str                    # derivation method
    doc: str                       # model doc, sanitised
    content_hash: str              # hash of everything below (16 hex digits)
    nq: int
    nu: int
    np: int
    npoints: int
    coordinates: tuple[Slot, ...]
    inputs: tuple[Slot, ...]
    parameters: tuple[Slot, ...]
    points: tuple[Slot, ...]
    routines: tuple[Routine, ...]
    # plain Python values describing the model (printed with repr): names, defaults, provenance
    meta: tuple[tuple[str, str], ...] = field(default=())
    jacobian: bool = False         # <prefix>_rhs_jacobian is generated
    forward: str = "cholesky"      # algorithm of <prefix>_forward_dynamics: "aba" or "cholesky"
    forward_ops: int = 0           # operations of one forward-dynamics call (the Cholesky loops counted too)
    forward_note: str = ""         # why the Cholesky path was taken where the articulated-body one was not
    nconstraints: int = 0          # constraint blocks (contacts, loops, limits)
    nrows: int = 0                 # constraint rows in all
    # the block table, in row order; the routines constraint_position/_jacobian/_bias/_friction fill its rows
    constraints: tuple[ConstraintBlock, ...] = ()
    real: str = "double"           # C type of every number: "double", or "float" (firmware; no table)
    nforces: int = 0               # force elements (element_forces fills 2 per element)
    nv: int = 0                    # velocities (qd, qdd, M is nv x nv): nq except with free joints
    # per free, spherical or planar joint: (RODGEN_JOINT_FREE/_SPHERICAL/_PLANAR, first index in q, in qd)
    lie_joints: tuple[tuple[int, int, int], ...] = ()

    @property
    def NV(self) -> str:
        """The C macro of the velocity size: ``<MACRO>_NQ``, or ``<MACRO>_NV`` where nv != nq."""
        return f"{self.macro}_NV" if self.nv not in (0, self.nq) else f"{self.macro}_NQ"

    def routine(self, name: str) -> Routine:
        for r in self.routines:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def header(self) -> str:
        return f"{self.prefix}.h"

    @property
    def source(self) -> str:
        return f"{self.prefix}.c"

    @property
    def library(self) -> str:
        """Stem of the model's shared library (``lib<prefix>``)."""
        return f"lib{self.prefix}"

    @property
    def table_routines(self) -> frozenset[str]:
        """Names of the routines the C defines as ``<prefix>_<name>`` with external linkage: the fields of
        the model's table (``rodgen_model``) that point at a function; the others are NULL."""
        names = {r.name for r in self.routines if not r.static}
        names.update(("forward_dynamics", "rhs"))
        if self.jacobian:
            names.add("rhs_jacobian")
        return frozenset(names)

    def compile_groups(self) -> tuple[tuple[str, int], ...]:
        """Groups of the C source a build may compile as separate translation units, in parallel.

        Each public routine is a group of its own (``forward_dynamics`` with ``rhs``), ``table`` holds the
        model's table; a static routine goes with the groups that call it. Returns ``(group, weight)`` with
        the weight in operations. A translation unit defines ``<MACRO>_UNIT`` and
        ``<MACRO>_UNIT_<GROUP>`` for each of its groups (see :meth:`unit_guard`); without
        ``<MACRO>_UNIT`` the source is one unit, as a firmware compiles it. The weight is the number
        of statements, which the compile time follows.
        """
        weight: dict[str, int] = {"table": 1}
        for r in self.routines:
            size = sum(len(sec.statements) for sec in r.sections) + sum(
                len(sec.statements) for part in r.parts for sec in part.sections)
            for g in self._groups_of(r.name, r.static):
                weight[g] = weight.get(g, 0) + max(size, 1)
        weight["forward_dynamics"] = weight.get("forward_dynamics", 0) + 1
        if self.jacobian:
            weight["rhs_jacobian"] = weight.get("rhs_jacobian", 0) + 1
        return tuple(sorted(weight.items()))

    def _groups_of(self, name: str, static: bool) -> tuple[str, ...]:
        if name == "rhs":
            return ("forward_dynamics",)
        if not static:
            return (name,)
        if name.startswith("constrained_solve_mode"):
            return ("constrained_solve",)
        if name.startswith("constrained_response_mode"):
            return ("constrained_response",)
        users = {"articulated": ("forward_dynamics",),
                 "mass_force": ("forward_dynamics",),
                 "jacobian_terms": ("rhs_jacobian",),
                 "inverse_dynamics_partials": ("rhs_jacobian",),
                 "inverse_dynamics_tangent": ("rhs_jacobian",),
                 "inverse_dynamics_derivatives": ("rhs_jacobian",),
                 "inverse_dynamics_vectors": ("rhs_jacobian",),
                 "inverse_dynamics_rest": ("rhs_jacobian",),
                 "configuration_rate": ("forward_dynamics", "rhs_jacobian")}
        if name.startswith(("node_forward", "node_backward")):
            return ("rhs_jacobian",)
        if name in users and users[name]:
            return users[name]
        return tuple(g for g, _ in self._all_groups())

    def _all_groups(self) -> tuple[tuple[str, int], ...]:
        names = {r.name for r in self.routines if not r.static and r.name != "rhs"}
        names.update(("forward_dynamics", "table"))
        if self.jacobian:
            names.add("rhs_jacobian")
        return tuple((n, 0) for n in sorted(names))

    def unit_guard(self, name: str, static: bool = False) -> str:
        """The ``#if`` line that keeps routine ``name`` (or group ``table``) in the units compiling it."""
        groups = ("table",) if name == "table" else self._groups_of(name, static)
        tests = " || ".join(f"defined({self.macro}_UNIT_{g.upper()})" for g in groups)
        return f"#if !defined({self.macro}_UNIT) || {tests}"

    def velocity_tree(self) -> dict[str, tuple[int, ...]]:
        """The tree of the velocities that factorises M without fill-in (meta ``VELOCITY_PARENTS``, given
        with ``inverse_dynamics_derivatives``) as compressed rows for the C loops: ``anc[anc_start[i]:
        anc_start[i + 1]]`` are velocity i's ancestors from its parent down to the root (``parents``: -1 for a
        root), and ``runs[2 * run_start[i]:2 * run_start[i + 1]]`` the same as runs of consecutive indices,
        (highest, lowest) each, from the parent down; ``desc[desc_start[i]:desc_start[i + 1]]`` its descendants
        (every velocity with i among its ancestors), ascending. ``anc_far`` and ``desc_far``: the same rows
        farthest first (from the root; the descendants descending), the order the C tables and kernels use: a
        row's sum then takes the row finished just before it last, so that its other terms need not wait for it
        (a 36-link chain's factor 1.15 -> 1.04 us). ``pair_up[i]``: i's parent is i - 1 and i its only child
        (the block solve's pass from the leaves takes rows i and i - 1 together); ``pair_down[i]``: i is the
        parent of i + 1 (the pass from the roots takes rows i and i + 1 together)."""
        parents = tuple(int(x) for x in self.names("VELOCITY_PARENTS"))
        rows = ancestors_of(parents)
        start: list[int] = [0]
        for mine in rows:
            start.append(start[-1] + len(mine))
        run_start, runs = runs_of(rows)
        desc: list[list[int]] = [[] for _ in parents]
        for j, mine in enumerate(rows):
            for a in mine:
                desc[a].append(j)
        desc_start = [0]
        for row in desc:
            desc_start.append(desc_start[-1] + len(row))
        children = [0] * len(parents)
        for x in parents:
            if x >= 0:
                children[x] += 1
        n = len(parents)
        pair_up = tuple(int(i >= 1 and parents[i] == i - 1 and children[i - 1] == 1) for i in range(n))
        pair_down = tuple(int(i + 1 < n and parents[i + 1] == i) for i in range(n))
        return {"parents": parents, "anc_start": tuple(start), "anc": tuple(x for r in rows for x in r) or (0,),
                "run_start": tuple(run_start), "runs": tuple(runs) or (0,),
                "desc_start": tuple(desc_start), "desc": tuple(x for row in desc for x in row) or (0,),
                "anc_far": tuple(x for r in rows for x in reversed(r)) or (0,),
                "desc_far": tuple(x for row in desc for x in reversed(row)) or (0,),
                "pair_up": pair_up or (0,), "pair_down": pair_down or (0,)}

    @staticmethod
    def vector_blocks(columns: int) -> list[dict[str, object]]:
        """How the AVX-512 row kernels hold a row of ``columns`` entries in registers: blocks of at most 12 vectors
        of 8 (AVX-512 has 32 registers), the last block also taking a vector of 4 and the single columns left;
        each block ``{"start": first column, "lanes": [(width 8, 4 or 1, column), ...]}``, and ``"text"``, the
        plan in words for the kernel's comment (on the first block)."""
        nvec = columns // 8
        nb = (nvec + 11) // 12
        rem = columns - 8 * nvec >= 4
        ns = columns - 8 * nvec - (4 if rem else 0)
        blocks: list[dict[str, object]] = []
        for b in range(max(nb, 1)):
            size = (nvec // nb + (1 if b < nvec % nb else 0)) if nb else 0
            start = 8 * ((nvec // nb) * b + min(b, nvec % nb)) if nb else 0
            lanes = [(8, start + 8 * v) for v in range(size)]
            if b == max(nb, 1) - 1:
                lanes += [(4, 8 * nvec)] if rem else []
                lanes += [(1, 8 * nvec + (4 if rem else 0) + c) for c in range(ns)]
            blocks.append({"start": start, "lanes": lanes})
        text = (f"{nvec} vector{'s' if nvec != 1 else ''} of 8{', one of 4' if rem else ''}"
                + (f", {ns} single column{'s' if ns != 1 else ''}" if ns else "")
                + f" in {max(nb, 1)} block{'s' if nb > 1 else ''}")
        blocks[0]["text"] = text
        return blocks

    def most_rows_taken(self) -> int:
        """The most rows one row of the factorisation or the block solve takes off: the largest number of
        descendants or ancestors of a velocity (:meth:`velocity_tree`). The row kernels keep two sums over
        alternate rows only from 4 on (below it the second sum gains nothing, and on the smallest trees gcc's
        -Warray-bounds would see its reads past a one-entry table)."""
        tree = self.velocity_tree()
        counts = [b - a for key in ("desc_start", "anc_start") for a, b in zip(tree[key], tree[key][1:])]
        return max(counts, default=0)

    def qdd_from_factor(self) -> bool:
        """Whether ``<prefix>_rhs_jacobian`` takes qdd = M^-1 (B u - bias) from the factor it needs anyway
        instead of a forward-dynamics pass: the lowering generated ``<prefix>_jacobian_terms`` (M, B u - bias and
        the sines and cosines the derivative reads, in one routine) where :func:`qdd_from_factor_pays`."""
        return any(r.name == "jacobian_terms" for r in self.routines)

    def trig_batched(self) -> bool:
        """Whether a routine computes its sines and cosines with ``<prefix>_sincos`` (a :class:`TrigBatch`), which
        the source then defines."""
        return any(st.trig is not None for r in self.routines
                   for sec in r.sections + tuple(s for part in r.parts for s in part.sections)
                   for st in sec.statements)

    def shared_trig(self) -> tuple[tuple[str, int], ...]:
        """The sines and cosines that ``<prefix>_inverse_dynamics_derivatives`` reads from
        ``<prefix>_jacobian_terms`` (its argument ``sc``) instead of computing them again (meta ``SHARED_TRIG``):
        ``("sin", i)`` or ``("cos", i)`` of coordinate q[i] for sc[0], sc[1], ...; empty where it reads none."""
        import ast
        for k, v in self.meta:
            if k == "SHARED_TRIG":
                return tuple((str(f), int(i)) for f, i in ast.literal_eval(v))
        return ()

    def ltdl_steps(self) -> tuple[tuple[int, tuple[tuple[int, tuple[int, ...]], ...]], ...] | None:
        """The factorisation M = L^T D L as straight-line code, where it takes at most :data:`LTDL_STRAIGHT_MAX`
        row updates: for each velocity k from the leaves, its ancestors i from the parent down, each with the
        columns j it updates (i's ancestors and i: H[i][j] -= (H[k][i] / D_k) H[k][j]). None beyond (the 24-link
        chain's 2600 updates): the loops over the tree's tables. Measured, chain12's factor (364 updates) and the
        two passes of q̈ from it take 3.4 + 2.2 thousand instructions in the loops."""
        parents = tuple(int(x) for x in self.names("VELOCITY_PARENTS"))
        if not ltdl_straight(parents):
            return None
        anc = ancestors_of(parents)
        return tuple((k, tuple((i, tuple(sorted(anc[i] + (i,)))) for i in anc[k])) for k in range(self.nv - 1, -1, -1))

    def speed_routine(self, name: str) -> bool:
        """Whether routine ``name`` is printed with ``<MACRO>_SPEED`` (GCC's ``-fexpensive-optimizations`` for it
        at any level): the forward dynamics' and the RHS Jacobian's straight-line code, whose many live
        temporaries gain from the more thorough register allocation (measured at -O1: solo12's articulated-body
        algorithm 1.13 -> 0.67 us, its inverse-dynamics derivatives 3.69 -> 2.99 us, the same compile time; on
        the 3D biped's whole model the flag costs 16 % more compile time, in its constrained solves, where the
        10 s walk runs no faster at -O2, which includes it, so they stay without it)."""
        return name in SPEED_ROUTINES or name.startswith(("node_forward", "node_backward"))

    def compact_routine(self, name: str) -> bool:
        """Whether routine ``name`` is printed with ``<MACRO>_COMPACT`` (GCC's -Os for it at any level): the
        constrained solves of at least :data:`COMPACT_MIN_OPS` operations, straight-line code (the 3D biped's
        8 500 and 12 900 operations: 66 and 105 kB of machine code at -O1) that a simulation calls with other
        such code between calls, so that every call streams its instructions from the L2 cache again
        (benchmarks/README.md, "Why time lags instructions"). Shorter code is faster there: the 3D biped's 10 s
        walk took 0.89x the time with its solves at -Os, and they compiled in 0.73x the time. Small routines run
        slower at -Os (solo12's mass matrix 1.09x, the biped's 1.24x, measured hot): exo5_walk's solves (1 300
        to 1 700 operations) stay as they are."""
        return compact(name, self.routine(name).ops)

    def routine_attribute(self, name: str) -> str:
        """The attribute macro routine ``name`` is printed with (:meth:`speed_routine`, :meth:`compact_routine`),
        with its trailing space, or ``""``."""
        if self.speed_routine(name):
            return f"{self.macro}_SPEED "
        return f"{self.macro}_COMPACT " if self.compact_routine(name) else ""

    def mass_from_derivative(self) -> bool:
        """Whether ``<prefix>_inverse_dynamics_derivatives`` also gives M = dg/da, which ``<prefix>_rhs_jacobian``
        then factors instead of calling ``mass_matrix``: with the loop over the nodes (``inverse_dynamics_rest``),
        whose F_a = Y J are M's columns (M[d][a] = J(a).F_a(d), six multiply-adds per pair in the pairs' loop),
        unless qdd comes from the factor (:meth:`qdd_from_factor`), which needs M before the derivative. A 36-link
        chain's Jacobian: 21.6 -> 19.4 us (its mass_matrix alone 2.4 us)."""
        names = {r.name for r in self.routines}
        return "inverse_dynamics_rest" in names and not self.qdd_from_factor()

    def pair_ancestors(self) -> dict[str, tuple[int, ...]]:
        """The pairs whose dot products ``<prefix>_inverse_dynamics_derivatives`` computes in a loop (meta
        ``PAIR_ANCESTORS``, given with ``inverse_dynamics_vectors`` or ``inverse_dynamics_rest``) as compressed rows:
        ``anc[start[d]:start[d + 1]]`` are the velocities of the nodes above velocity d's node, and
        ``runs[2 * run_start[d]:2 * run_start[d + 1]]`` the same as runs of consecutive indices, (highest,
        lowest) each."""
        import ast
        rows: tuple[tuple[int, ...], ...] = ()
        for k, v in self.meta:
            if k == "PAIR_ANCESTORS":
                rows = ast.literal_eval(v)
        start, anc = [0], []
        for row in rows:
            anc += [int(a) for a in row]
            start.append(len(anc))
        run_start, runs = runs_of(rows)
        return {"start": tuple(start), "anc": tuple(anc) or (0,), "run_start": tuple(run_start),
                "runs": tuple(runs) or (0,)}

    def node_loop(self) -> dict[str, object]:
        """The tables of the loop over the nodes (meta ``NODE_LOOP``, given with ``inverse_dynamics_rest``): per
        node its kind, parent node (-1: the ground), coordinate and velocity index, and its constants as
        compressed rows (``const[const_start[i]:const_start[i + 1]]``, C double literals); ``kinds``, the number
        of kinds; ``sums``, the numbers a node sums over its subtree."""
        import ast

        from .printer import c_double
        table: dict = {}
        for k, v in self.meta:
            if k == "NODE_LOOP":
                table = ast.literal_eval(v)
        start, const = [0], []
        for row in table["constants"]:
            const += [c_double(x) for x in row]
            start.append(len(const))
        return {"n": len(table["kind"]), "kind": table["kind"], "parent": table["parent"],
                "coordinate": table["coordinate"], "velocity": table["velocity"], "const_start": tuple(start),
                "const": tuple(const) or ("0.0",), "kinds": max(table["kind"]) + 1, "sums": table["sums"]}

    def names(self, key: str) -> tuple[str, ...]:
        """A list of names from ``meta`` (``"COORDINATES"``, ``"INPUTS"``, ``"PARAMETERS"``, ``"POINTS"``)."""
        import ast
        for k, v in self.meta:
            if k == key:
                return tuple(str(x) for x in ast.literal_eval(v))
        return ()


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def comment_text(text: object, limit: int = 120) -> str:
    """Text that is safe inside a C block comment and a Python ``#`` comment.

    ASCII only, one line, no comment delimiters, no trigraphs, at most
    ``limit`` characters.
    """
    s = str(text)
    s = s.encode("ascii", "replace").decode("ascii")
    s = _CONTROL.sub(" ", s)
    s = s.replace("\\", "/")
    while "*/" in s or "/*" in s or "??" in s or "//" in s:
        s = s.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?").replace("//", "/ /")
    s = " ".join(s.split())
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return s
