"""The routine spec: what the templates get, and nothing more.

``lower(equations) -> ModelSpec``; the templates read these frozen dataclasses
(names, slot tables, straight-line statements as ``(lhs, rhs)`` strings) and
make no decisions of their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class Argument:
    """A pointer argument of a routine: ``const double *q`` (length NQ)."""

    c_name: str
    length: str          # C expression of the length, e.g. "EXO5_NQ" or "2*EXO5_NPOINTS"
    doc: str
    output: bool = False

    @property
    def decl(self) -> str:
        return f"double *{self.c_name}" if self.output else f"const double *{self.c_name}"


@dataclass(frozen=True)
class Statement:
    """One line of straight-line code: ``const double t3 = q[0]*p[1];`` or ``M[4] = t3;``."""

    lhs: str
    rhs: str
    declare: bool = False


@dataclass(frozen=True)
class Section:
    """A commented group of statements (``/* 143 common subexpressions */``)."""

    comment: str
    statements: tuple[Statement, ...]


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
    split into ``parts`` (static functions of a few thousand lines each)
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

    @property
    def signature(self) -> str:
        return ", ".join(a.decl for a in self.args)


@dataclass(frozen=True)
class Kernel:
    """A batch loop of the Cython module around one C function.

    ``inputs``/``outputs``: ``(name, row length as C text)``; ``call``: the C
    arguments, in order; ``status``: the C function returns an int status.
    """

    name: str
    c_name: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]
    call: tuple[str, ...]
    status: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Single:
    """A one-state method of the Cython module's ``Single`` class around one C function.

    ``args``: the Python arguments, in order; ``inputs``: the array arguments ``(name, length as C
    text)``, ``u`` and ``p`` may be None (zero inputs, default parameters); ``shape``: the result's
    shape as Python text; ``call``: the C arguments; ``time``: the first argument is a scalar ``t``.
    """

    name: str
    c_name: str
    args: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...]
    shape: str
    call: tuple[str, ...]
    status: bool = False
    time: bool = False


@dataclass(frozen=True)
class ConstraintBlock:
    """One row of the model's constraint table (``rodgen_constraint`` in ``rodgen_model.h``).

    ``name`` is a validated identifier (safe inside a C string); ``kind`` is ``"contact"``,
    ``"loop"`` or ``"limit"``, ``macro`` its C constant (``RODGEN_CONTACT``...) and ``code``
    that constant's value; ``row`` the block's first row, ``nrows`` its rows.
    """

    name: str
    kind: str
    macro: str
    code: int
    row: int
    nrows: int


@dataclass(frozen=True)
class ModelSpec:
    """Everything the templates need to write ``<prefix>.h``, ``<prefix>.c`` and ``_<prefix>.pyx``."""

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
    kernels: tuple[Kernel, ...]
    # plain Python values for the Cython module's metadata (printed with repr)
    meta: tuple[tuple[str, str], ...] = field(default=())
    jacobian: bool = False         # <prefix>_rhs_jacobian is generated
    forward: str = "cholesky"      # algorithm of <prefix>_forward_dynamics: "aba" or "cholesky"
    forward_ops: int = 0           # operations of one forward-dynamics call (the Cholesky loops counted too)
    forward_note: str = ""         # why the Cholesky path was taken where the articulated-body one was not
    singles: tuple[Single, ...] = ()   # one-state methods of the Cython module (the runtime's fast path)
    nconstraints: int = 0          # constraint blocks (contacts, loops, limits)
    nrows: int = 0                 # constraint rows in all
    constraints: tuple[ConstraintBlock, ...] = ()   # the block table, in row order

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
    def pyx(self) -> str:
        return f"_{self.prefix}.pyx"

    @property
    def module(self) -> str:
        return f"_{self.prefix}"


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
