"""The batched sines and cosines of the generated code (``<prefix>_sincos``, CodegenOptions.trig_batch_min).

A routine with at least ``trig_batch_min`` distinct arguments of sin and cos computes them all in one vectorised
call at its top. Checked here: the function's values against mpmath's at 40 digits (within one unit in the last
place of the correctly rounded value, where the reduction is hardest too: near multiples of pi/2), the C
library's values beyond its range, the same value in every lane and at every length (so every routine gets the
same numbers), and a compiled model with and without the batch.
"""
from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import mpmath
import numpy as np
import pytest

import rodgen
from rodgen.codegen import CodegenOptions
from rodgen.errors import CodegenError
from rodgen.examples import vl_chain
from rodgen.toolchain.compiler import arch_flags, default_arch, find_compiler

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
%(function)s
int main(int argc, char **argv)
{
    /* argv[1]: n doubles in; argv[2]: 2 n doubles out (sines, cosines); argv[3]: n; argv[4]: chunk length
       (the arguments go through the function in chunks of that length) */
    int n = atoi(argv[3]), chunk = atoi(argv[4]), i;
    double *x = malloc(sizeof(double) * n), *s = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    FILE *f = fopen(argv[1], "rb");
    if (fread(x, sizeof(double), n, f) != (size_t)n) return 1;
    fclose(f);
    for (i = 0; i < n; i += chunk) {
        TRIG_FN(n - i < chunk ? n - i : chunk, x + i, s + i, c + i);
    }
    f = fopen(argv[2], "wb");
    fwrite(s, sizeof(double), n, f);
    fwrite(c, sizeof(double), n, f);
    fclose(f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C source of vl_chain(4) batched from 4 arguments (its routines have 4 angles and more)."""
    out = tmp_path_factory.mktemp("trig_src")
    files = rodgen.generate(rodgen.derive(vl_chain(4)), out, options=CodegenOptions(trig_batch_min=4))
    return out / files.spec.source


@pytest.fixture(scope="module")
def sincos(generated: Path, tmp_path_factory: pytest.TempPathFactory):
    """Run the generated ``<prefix>_sincos``, compiled as rodgen compiles a model (-O1, the target's
    instruction set and its fused multiply-adds), on an array of arguments in chunks of ``chunk``: (sines, cosines)."""
    text = generated.read_text()
    start = text.index("/* vl_chain4_sincos:")
    end = text.index("\n}\n", text.index("static void vl_chain4_sincos(")) + 3
    work = tmp_path_factory.mktemp("trig_run")
    (work / "h.c").write_text("#include <math.h>\n#define TRIG_FN vl_chain4_sincos\n"
                              + HARNESS % {"function": text[start:end]})
    cc = find_compiler()
    subprocess.run([*cc, "-std=c99", "-O1", *arch_flags(cc, default_arch()), "h.c", "-o", "h", "-lm"],
                   cwd=work, check=True, capture_output=True)

    def run(x: np.ndarray, chunk: int = 40) -> tuple[np.ndarray, np.ndarray]:
        x = np.ascontiguousarray(x, dtype=float)
        x.tofile(work / "x.bin")
        subprocess.run([str(work / "h"), str(work / "x.bin"), str(work / "y.bin"), str(len(x)), str(chunk)],
                       check=True)
        y = np.fromfile(work / "y.bin")
        return y[:len(x)], y[len(x):]

    return run


def _ulps(got: np.ndarray, x: np.ndarray, fn) -> np.ndarray:
    """|got - fn(x)| in units in the last place of the correctly rounded fn(x) (mpmath, 40 digits)."""
    errors = []
    with mpmath.workdps(40):
        for g, xi in zip(got, x):
            exact = fn(mpmath.mpf(float(xi)))
            rounded = float(exact)
            ulp = math.ulp(rounded) if rounded != 0 else math.ulp(float(abs(exact)))
            errors.append(abs(mpmath.mpf(float(g)) - exact) / ulp)
    return np.array(errors, dtype=float)


def _hard_arguments(rng: np.random.Generator) -> np.ndarray:
    """Doubles nearest to multiples of pi/2 (the reduction's cancellation) and their neighbours, up to 1e5."""
    k = np.r_[np.arange(-40, 41), rng.integers(-63000, 63000, 300)]
    x = k * (math.pi / 2)
    return np.r_[x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf), x + 1e-9, x - 3e-12]


def test_sincos_within_one_ulp_of_the_correctly_rounded_values(sincos) -> None:
    rng = np.random.default_rng(7)
    x = np.r_[rng.uniform(-4, 4, 2500), rng.uniform(-100, 100, 2500), rng.uniform(-1e5, 1e5, 2500),
              rng.uniform(-1e-3, 1e-3, 500), 10.0 ** rng.uniform(-300, -5, 200), [0.0, -0.0, 1e5, -1e5],
              _hard_arguments(rng)]
    s, c = sincos(x)
    es, ec = _ulps(s, x, mpmath.sin), _ulps(c, x, mpmath.cos)
    assert es.max() <= 1.0, (x[es.argmax()], es.max())
    assert ec.max() <= 1.0, (x[ec.argmax()], ec.max())
    # most are the correctly rounded value itself
    assert np.mean(es < 0.5) > 0.9 and np.mean(ec < 0.5) > 0.9
    zero = np.flatnonzero(x == 0.0)
    assert np.all(s[zero] == 0.0) and np.all(c[zero] == 1.0)


def test_sincos_beyond_its_range_is_the_c_library(sincos) -> None:
    x = np.array([1e5 * (1 + 1e-15), -2e5, 3.7e6, 1e22, -1e300, np.inf, -np.inf, np.nan])
    s, c = sincos(x)
    finite = np.isfinite(x)
    assert np.array_equal(s[finite], [math.sin(v) for v in x[finite]])
    assert np.array_equal(c[finite], [math.cos(v) for v in x[finite]])
    assert np.all(np.isnan(s[~finite])) and np.all(np.isnan(c[~finite]))


@pytest.mark.parametrize("chunk", [1, 3, 8, 37])
def test_sincos_gives_each_argument_the_same_value_at_any_length(sincos, chunk: int) -> None:
    """Vector lanes and the scalar remainder compute the same: every routine gets the same sines."""
    x = np.random.default_rng(3).uniform(-20, 20, 296)
    ref = sincos(x, 40)
    got = sincos(x, chunk)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def _routine(source: str, name: str) -> str:
    body = source[source.index(f"void vl_chain4_{name}("):]
    return body[:body.index("\n}\n")]


def test_routines_call_it_from_the_fewest_arguments(generated: Path, tmp_path: Path) -> None:
    """vl_chain(4)'s relative angles: its mass matrix has 6 arguments (q2, q4, q6 and their sums), its forward
    dynamics 10 (q0 too)."""
    mass = _routine(generated.read_text(), "mass_matrix")
    assert "vl_chain4_sincos(8, rodgen_arg, rodgen_sin, rodgen_cos);" in mass
    assert "q[2] + q[4] + q[6]" in mass and not re.search(r"\b(sin|cos)\(", mass)
    files = rodgen.generate(rodgen.derive(vl_chain(4)), tmp_path / "default")
    default = (tmp_path / "default" / files.spec.source).read_text()
    assert re.search(r"\bsin\(q\[2\]\)", _routine(default, "mass_matrix"))      # 6 < 8 (TRIG_BATCH_MIN)
    assert "vl_chain4_sincos(16, rodgen_arg" in default                         # 10 >= 8
    files = rodgen.generate(rodgen.derive(vl_chain(4)), tmp_path / "plain", options=CodegenOptions(trig_batch_min=0))
    plain = (tmp_path / "plain" / files.spec.source).read_text()
    assert "_sincos" not in plain and re.search(r"\bsin\(q\[", plain)
    with pytest.raises(CodegenError, match="trig_batch_min must be a non-negative integer, got -1"):
        CodegenOptions(trig_batch_min=-1)


def test_a_compiled_model_with_and_without_the_batch(tmp_path: Path) -> None:
    model = vl_chain(4)
    batched = rodgen.build(model, build_dir=tmp_path / "a", codegen=CodegenOptions(trig_batch_min=4))
    plain = rodgen.build(model, build_dir=tmp_path / "b", codegen=CodegenOptions(trig_batch_min=0))
    rng = np.random.default_rng(11)
    for _ in range(5):
        q = rng.uniform(0.3, 3.0, batched.nq)     # angles, and lengths away from 0
        qd, u = rng.normal(size=batched.nq), rng.normal(size=batched.nu)
        a, b = batched.forward_dynamics(q, qd, u), plain.forward_dynamics(q, qd, u)
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
        assert np.allclose(batched.mass_matrix(q), plain.mass_matrix(q), rtol=1e-13, atol=1e-15)
