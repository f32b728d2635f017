"""Shorter encodings of a model's units on AVX-512 targets (rodgen.toolchain.encoding): which instructions are
marked, that the assembler makes them shorter, and that a library built so computes the same numbers, bit for
bit, as one built from the compiler's own output."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rodgen.toolchain import encoding
from rodgen.toolchain.compiler import BuildOptions, compile_model, find_compiler, model_cflags


def test_marks_scalar_doubles_whose_displacement_needs_four_bytes_but_fits_evex() -> None:
    asm = ("\tvmovsd\t-1224(%rsp), %xmm3\n"          # beyond EVEX's scaled byte (-1024..1016)
           "\tvfmadd231sd\t1048(%rax), %xmm2, %xmm1\n"
           "\tvmulsd\t16(%rax), %xmm1, %xmm0\n"      # one byte already
           "\tvmovsd\t%xmm1, 1016(%rsp)\n"            # a store, the largest scaled byte
           "\tvmovsd\t.LC3(%rip), %xmm0\n"            # RIP-relative
           "\tvaddsd\t1020(%rax), %xmm1, %xmm1\n"     # not a multiple of 8
           "\tvfnmadd132sd\t200(%rax,%rdx,8), %xmm4, %xmm5\n"
           "\tvmovsd\t-1024(%rsp), %xmm3\n"
           "\tvmovapd\t256(%rsp), %xmm3\n"            # not a scalar double instruction
           "\tvmovsd\t%xmm1, %xmm2, %xmm3\n"          # no memory operand
           "\tmovq\t512(%rsp), %rax\n"
           "\tvmulsd\t-136(%rbp), %xmm17, %xmm0\n")    # xmm16-31: EVEX already
    out, count = encoding.compress_displacements(asm)
    marked = [ln.split("\t")[1] for ln in out.splitlines() if "{evex}" in ln]
    assert count == 3 and marked == ["{evex} vmovsd", "{evex} vfnmadd132sd", "{evex} vmovsd"]
    assert [ln.replace("{evex} ", "") for ln in out.splitlines()] == asm.splitlines()


def _text_size(obj: Path) -> int:
    out = subprocess.run(["size", "-A", str(obj)], capture_output=True, text=True, check=True).stdout
    return next(int(ln.split()[1]) for ln in out.splitlines() if ln.startswith(".text"))


def _available() -> tuple[tuple[str, ...], list[str]]:
    cc = find_compiler(None)
    flags = model_cflags(BuildOptions(arch="native"))
    if not encoding.evex_available(cc, tuple(flags)):
        pytest.skip("not GCC on an AVX-512 target with an assembler that takes {evex}")
    return cc, flags


def test_marked_instructions_assemble_shorter(tmp_path: Path) -> None:
    """Each marked instruction is 1 or 2 bytes shorter as EVEX with a scaled byte than as VEX with four."""
    if shutil.which("size") is None:
        pytest.skip("binutils' size is not installed")
    cc, flags = _available()
    lines = ["\tvmovsd\t-1016(%rsp), %xmm3", "\tvfmadd231sd\t1000(%rax), %xmm2, %xmm1",
             "\tvmovsd\t%xmm9, 512(%rdx)", "\tvmulsd\t-136(%rbp), %xmm7, %xmm0"]
    for line in lines:
        sizes = []
        for text in (line, encoding.compress_displacements(line + "\n")[0].rstrip("\n")):
            src = tmp_path / "one.s"
            src.write_text(f"\t.text\n{text}\n")
            subprocess.run(list(cc) + flags + ["-c", str(src), "-o", str(tmp_path / "one.o")], check=True)
            sizes.append(_text_size(tmp_path / "one.o"))
        assert sizes[1] in (sizes[0] - 1, sizes[0] - 2, sizes[0] - 3), (line, sizes)


#: two units of one source (``M_UNIT_A``, ``M_UNIT_B``): long sums of products over many live values, so
#: that GCC spills to a stack frame of a few kilobytes
def _source(n: int = 160) -> str:
    rows = []
    for unit, sign in (("A", "+"), ("B", "-")):
        body = [f"    double t{i} = x[{i % 16}] * x[{(3 * i + 1) % 16}] {sign} {1 + i % 7}.0 * x[{(5 * i) % 16}];"
                for i in range(n)]
        body += [f"    t{i} = t{i} * t{(i * 7 + 3) % n} + t{(i * 11 + 5) % n};" for i in range(n)]
        body += [f"    y[{k}] = " + " + ".join(f"t{(k * 13 + j * 17) % n} * t{(k + j * 29) % n}" for j in range(24))
                 + ";" for k in range(40)]
        rows.append(f"#if !defined(M_UNIT) || defined(M_UNIT_{unit})\n"
                    f"__attribute__((optimize(\"Os\"))) void unit_{unit.lower()}(const double *x, double *y)\n{{\n"
                    + "\n".join(body) + "\n}\n#endif\n")
    return "\n".join(rows)


def test_a_library_built_so_computes_the_same_bits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same source compiled into a library through the rewritten assembly and from the compiler's own
    output: its text shorter, its outputs identical to the last bit on random inputs."""
    _available()
    libs = {}
    for name, on in (("plain", "0"), ("evex", "1")):
        monkeypatch.setenv("RODGEN_EVEX", on)
        encoding.evex_available.cache_clear()
        folder = tmp_path / name
        folder.mkdir()
        (folder / "m.c").write_text(_source())
        libs[name] = compile_model(folder, sources=["m.c"], library="libm_test.so",
                                   options=BuildOptions(arch="native"), macro="M",
                                   groups=[("a", 1000), ("b", 1000)], jobs=2)
    encoding.evex_available.cache_clear()
    log = (tmp_path / "evex" / "build.log").read_text()
    marked = int(log.split(" instructions EVEX-encoded")[0].rsplit("# ", 1)[1])
    assert marked > 100, log[-2000:]
    assert "EVEX" not in (tmp_path / "plain" / "build.log").read_text()
    if shutil.which("size") is not None:
        assert _text_size(libs["evex"]) < _text_size(libs["plain"])
    rng = np.random.default_rng(7)
    dp = ctypes.POINTER(ctypes.c_double)
    for _ in range(20):
        x = rng.uniform(-2, 2, 16)
        outs = []
        for name in ("plain", "evex"):
            lib = ctypes.CDLL(str(libs[name]))
            res = []
            for fn in ("unit_a", "unit_b"):
                y = np.zeros(40)
                getattr(lib, fn)(x.ctypes.data_as(dp), y.ctypes.data_as(dp))
                res.append(y)
            outs.append(np.concatenate(res))
        assert np.all(np.isfinite(outs[0])) and outs[0].tobytes() == outs[1].tobytes()
