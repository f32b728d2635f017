"""Shorter machine code for a model's long straight-line routines on AVX-512 targets.

A large model's constrained solves are tens of kilobytes of straight-line code that a simulation runs once per
call with other such code in between, so every call fetches their instructions from the level-2 cache again
and their time follows their size in bytes (benchmarks/README.md, "Why time lags instructions"). Most of
those bytes are scalar double instructions with a memory operand on the stack or the work array, and most of
those displacements do not fit a byte: GCC encodes the instructions with the VEX prefix, whose displacement
is then four bytes (``vfmadd231sd 1048(%rax), %xmm2, %xmm1``: 9 bytes). On a target with AVX-512 the same
instruction has an EVEX encoding whose one-byte displacement is scaled by the operand's size (8 for a
double), so any multiple of 8 from -1024 to 1016 takes one byte: 7 bytes. GCC never picks EVEX for that, so
:func:`compress_displacements` asks the assembler for it (the ``{evex}`` pseudo-prefix) instruction by
instruction where it is shorter. The instructions are the same operations on the same registers: the
numbers do not change, only the code's length (the 3D biped's solves 0.96x, its 10 s walk about 0.97x the
time).

:func:`compile_model <rodgen.toolchain.compiler.compile_model>` compiles a model's translation units to
assembly, rewrites them and assembles them where :func:`evex_available` says the compiler and the target
allow it (GCC, a target with AVX-512F, an assembler that takes ``{evex}``).
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from pathlib import Path

#: The scalar double instructions rewritten (AT&T syntax as GCC prints them): moves, arithmetic and the fused
#: multiply-adds, each with an EVEX form in AVX-512F for the same xmm operands.
SCALAR_DOUBLE = ("vmovsd", "vaddsd", "vsubsd", "vmulsd", "vdivsd", "vsqrtsd", "vmaxsd", "vminsd",
                 *(f"v{f}{o}sd" for f in ("fmadd", "fmsub", "fnmadd", "fnmsub") for o in ("132", "213", "231")))

_LINE = re.compile(r"^(\s+)(" + "|".join(SCALAR_DOUBLE) + r")(\s+)(.*)$")
#: a memory operand with a decimal displacement on a general register: ``-1224(%rsp)``, ``8(%rax,%rdx,8)``
_MEMORY = re.compile(r"(?<![\w.$])(-?\d+)\(%r[a-z0-9]+(?:,%r[a-z0-9]+,[1248])?\)")

#: xmm16-xmm31, which only EVEX encodes (the assembler picks it for them by itself)
_UPPER = re.compile(r"%xmm(?:1[6-9]|2\d|3[01])\b")
#: the rules of :func:`compress_displacements`, in the build key of every model GCC compiles (a change of the
#: rules is a new version here)
ENCODING_RULES = "evex-disp8 1"
#: the displacements EVEX's scaled one-byte form holds for an 8-byte operand
EVEX_DISP8 = range(-1024, 1017, 8)


def compress_displacements(asm: str) -> tuple[str, int]:
    """``asm`` (GCC's AT&T output) with ``{evex}`` before every scalar double instruction (:data:`SCALAR_DOUBLE`)
    whose memory displacement is too long for a one-byte VEX displacement but fits EVEX's scaled one (a multiple
    of 8 from -1024 to 1016, :data:`EVEX_DISP8`), and the number of instructions so marked. Other lines are
    kept as they are: symbolic or RIP-relative operands, displacements of one byte already, instructions on
    xmm16-xmm31 (EVEX already), the rest."""
    out: list[str] = []
    count = 0
    for line in asm.splitlines(keepends=True):
        m = _LINE.match(line)
        if m is not None and "%rip" not in m.group(4) and _UPPER.search(m.group(4)) is None:
            d = _MEMORY.search(m.group(4))
            if d is not None:
                disp = int(d.group(1))
                if not -128 <= disp <= 127 and disp in EVEX_DISP8:
                    line = f"{m.group(1)}{{evex}} {m.group(2)}{m.group(3)}{m.group(4)}" + line[m.end():]
                    count += 1
        out.append(line)
    return "".join(out), count


@functools.lru_cache(maxsize=None)
def evex_available(compiler: tuple[str, ...], flags: tuple[str, ...]) -> bool:
    """Whether a model compiled by ``compiler`` with ``flags`` gets :func:`compress_displacements`: GCC, whose
    flags select a target with AVX-512F, and an assembler that takes the ``{evex}`` pseudo-prefix (asked once
    per process by assembling one such instruction)."""
    from .compiler import is_gcc
    if os.environ.get("RODGEN_EVEX", "1") == "0" or not is_gcc(compiler):
        return False
    try:
        macros = subprocess.run(list(compiler) + list(flags) + ["-dM", "-E", "-x", "c", os.devnull],
                                capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError):
        return False
    if macros.returncode != 0 or "#define __AVX512F__ 1" not in macros.stdout:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.s"
        src.write_text("\t.text\n\t{evex} vmovsd\t1016(%rsp), %xmm0\n\t{evex} vfmadd231sd\t-1024(%rax), %xmm1, %xmm2\n")
        try:
            done = subprocess.run(list(compiler) + list(flags) + ["-c", str(src), "-o", str(Path(tmp) / "probe.o")],
                                  capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0


def rewrite_file(path: Path) -> int:
    """Rewrite the assembly file ``path`` in place by :func:`compress_displacements`; the instructions marked."""
    text, count = compress_displacements(path.read_text())
    path.write_text(text)
    return count


