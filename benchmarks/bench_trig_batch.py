"""The batched sines and cosines of the generated C against the C library's, natively, in one run.

For each model the script generates its C twice (``rodgen.generate`` with the RHS Jacobian): with
``CodegenOptions.trig_batch_min`` = ``--batch-min`` (8 by default, rodgen's default: a routine with at least that
many distinct arguments of sin and cos computes them in one vectorised call of ``<prefix>_sincos``) and with
``trig_batch_min=0`` (each ``sin`` and ``cos`` from libm, the code before the batch). Each is linked with a small C
harness that times, on the same states, the forward dynamics, the mass matrix and the RHS Jacobian (the mean per
call, the minimum over rounds); the two programs run alternately, ``--rounds`` times each, and the minimum of each
is kept. Both are compiled as ``rodgen.build`` compiles a model (``-O1``, the machine's instruction set, fused
multiply-adds: ``BuildOptions()``'s flags) and, with ``--o3``, also at ``-O3 -march=native`` as the native
harnesses against Pinocchio are.

The harness checks that both give the same numbers (to 1e-12 relative to the largest entry) before timing.

    python benchmarks/bench_trig_batch.py [--robots solo12 chain12 ...] [--rounds 7] [--o3] [--batch-min N]

Needs example-robot-data for the robots from URDF (as bench_derivatives.py). Writes ``results/trig_batch.json``.
"""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions  # noqa: E402
from rodgen.codegen.options import TRIG_BATCH_MIN  # noqa: E402
from rodgen.examples import vl_chain  # noqa: E402
from rodgen.toolchain import BuildOptions  # noqa: E402
from rodgen.toolchain.compiler import find_compiler, model_cflags  # noqa: E402

from common import write_json  # noqa: E402

HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include HDR
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(x) CAT(PFX, x)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static const double P[] = PARAMS;
static unsigned long long x = 88172645463325252ULL;
static double next(void) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return (double)(x % 20001) / 10000.0 - 1.0; }
enum { NS = 16 };
int main(int argc, char **argv)
{
    static double q[NS][NQ_], v[NS][NV_], u[NS][NU_ + 1], qdd[NV_], M[NV_ * NV_], J[2 * NV_ * 2 * NV_];
    double best[3] = { 1e9, 1e9, 1e9 }, chk = 0.0;
    int rounds = argc > 1 ? atoi(argv[1]) : 7, s, r, k;
    for (s = 0; s < NS; ++s) {
        for (k = 0; k < NQ_; ++k) q[s][k] = next();
        for (k = 0; k < NV_; ++k) v[s][k] = next();
        for (k = 0; k < NU_; ++k) u[s][k] = next();
        if (NQ_ != NV_) {   /* a free joint: its quaternion q[3..6] normalised */
            double nrm = sqrt(q[s][3] * q[s][3] + q[s][4] * q[s][4] + q[s][5] * q[s][5] + q[s][6] * q[s][6]);
            for (k = 3; k < 7; ++k) q[s][k] /= nrm;
        }
    }
    /* the numbers, for the agreement check of the two variants */
    for (s = 0; s < NS; ++s) {
        F(forward_dynamics)(0.0, q[s], v[s], u[s], P, qdd);
        F(mass_matrix)(q[s], P, M);
        F(rhs_jacobian)(0.0, q[s], v[s], u[s], P, J);
        for (k = 0; k < NV_; ++k) printf("%.17g\n", qdd[k]);
        for (k = 0; k < NV_ * NV_; ++k) printf("%.17g\n", M[k]);
        for (k = 0; k < 4 * NV_ * NV_; ++k) printf("%.17g\n", J[k]);
    }
    for (r = 0; r < rounds; ++r) {
        double t0, t1;
        int R = 200;
        t0 = now();
        for (k = 0; k < R; ++k) for (s = 0; s < NS; ++s) F(forward_dynamics)(0.0, q[s], v[s], u[s], P, qdd);
        t1 = now(); if ((t1 - t0) / (R * NS) < best[0]) best[0] = (t1 - t0) / (R * NS); chk += qdd[0];
        t0 = now();
        for (k = 0; k < R; ++k) for (s = 0; s < NS; ++s) F(mass_matrix)(q[s], P, M);
        t1 = now(); if ((t1 - t0) / (R * NS) < best[1]) best[1] = (t1 - t0) / (R * NS); chk += M[0];
        R = 40;
        t0 = now();
        for (k = 0; k < R; ++k) for (s = 0; s < NS; ++s) F(rhs_jacobian)(0.0, q[s], v[s], u[s], P, J);
        t1 = now(); if ((t1 - t0) / (R * NS) < best[2]) best[2] = (t1 - t0) / (R * NS); chk += J[0];
    }
    printf("times %.6g %.6g %.6g %d\n", best[0] * 1e9, best[1] * 1e9, best[2] * 1e9, chk != chk);
    return 0;
}
"""

ROUTINES = ("forward_dynamics", "mass_matrix", "rhs_jacobian")


def models() -> dict[str, Any]:
    import bench_derivatives as bd
    chosen = {name: (lambda make=make: make()[0]) for name, make in bd.robots().items()}
    chosen["biped12"] = lambda: rodgen.load(HERE.parent / "examples" / "spatial" / "biped12.yaml")
    for n in (5, 12, 20):   # planar, relative angles: the sums of angles are arguments too (n (n + 1) / 2)
        chosen[f"vl_chain{n}"] = lambda n=n: vl_chain(n)
    return chosen


def build(model: Any, folder: Path, options: CodegenOptions, flags: list[str]) -> tuple[Path, Any]:
    """The model's C generated with ``options`` and compiled with the harness: (program, spec)."""
    files = rodgen.generate(model, folder, options=options)
    spec = files.spec
    values = [float(v) for v in ast.literal_eval(dict(spec.meta)["PARAMETER_VALUES"])] or [0.0]
    params = "{" + ", ".join(repr(v) for v in values) + "}"
    cc = find_compiler()
    objs = []
    for src in sorted(folder.glob("rodgen_*.c")):
        subprocess.run([*cc, "-std=c99", *flags, "-c", src.name, "-o", src.with_suffix(".o").name], cwd=folder,
                       check=True, capture_output=True)
        objs.append(src.with_suffix(".o").name)
    (folder / "harness.c").write_text(HARNESS)
    defines = [f"-DPFX={spec.prefix}", f'-DHDR="{spec.source}"', f"-DNQ_={spec.nq}", f"-DNV_={spec.nv or spec.nq}",
               f"-DNU_={spec.nu}", f"-DPARAMS={params}", "-D_POSIX_C_SOURCE=200809L", "-include", "stdlib.h"]
    subprocess.run([*cc, "-std=c99", *flags, *defines, "harness.c", *objs, "-lm", "-o", "bench"], cwd=folder,
                   check=True, capture_output=True, text=True)
    return folder / "bench", spec


def run(exe: Path, rounds: int) -> tuple[list[float], list[float]]:
    out = subprocess.run([str(exe), str(rounds)], capture_output=True, text=True, check=True).stdout.splitlines()
    times = [float(x) for x in out[-1].split()[1:4]]
    return [float(x) for x in out[:-1]], times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=["solo12", "talos_legs", "ur5", "chain12", "chain36", "biped12",
                                                    "vl_chain5", "vl_chain12", "vl_chain20"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--o3", action="store_true", help="also compile at -O3 -march=native")
    ap.add_argument("--batch-min", type=int, default=TRIG_BATCH_MIN, help="trig_batch_min of the batched variant")
    args = ap.parse_args()
    levels = {"build": model_cflags(BuildOptions())}
    if args.o3:
        levels["O3"] = ["-O3", "-march=native", "-ffp-contract=fast"]
    rows = []
    make = models()
    for name in args.robots:
        model = make[name]()
        for level, flags in levels.items():
            with tempfile.TemporaryDirectory(prefix="rodgen_trig_") as tmp:
                exe_b, spec = build(model, Path(tmp) / "batch",
                                    CodegenOptions(jacobian=True, trig_batch_min=args.batch_min), flags)
                exe_l, _ = build(model, Path(tmp) / "libm", CodegenOptions(jacobian=True, trig_batch_min=0), flags)
                nb, best_b = run(exe_b, 1)
                nl, best_l = run(exe_l, 1)
                scale = max(max(abs(x) for x in nl), 1.0)
                diff = max(abs(a - b) for a, b in zip(nb, nl)) / scale
                for _ in range(args.rounds):
                    best_b = [min(a, b) for a, b in zip(best_b, run(exe_b, 3)[1])]
                    best_l = [min(a, b) for a, b in zip(best_l, run(exe_l, 3)[1])]
            row = {"robot": name, "level": level, "flags": flags, "nq": spec.nq, "nv": spec.nv or spec.nq,
                   "largest_relative_difference": diff,
                   **{r: {"batch_ns": b, "libm_ns": lb, "ratio": b / lb} for r, b, lb in zip(ROUTINES, best_b, best_l)}}
            rows.append(row)
            print(f"{name:11s} {level:5s} " + "  ".join(f"{r} {b:8.1f} / {lb:8.1f} ns = {b / lb:.3f}"
                                                      for r, b, lb in zip(ROUTINES, best_b, best_l))
                  + f"  (difference {diff:.1e})", flush=True)
            assert diff < 1e-12, f"{name}: the two variants differ by {diff:.2e}"
    write_json("trig_batch", {"rows": rows, "rounds": args.rounds, "batch_min": args.batch_min})


if __name__ == "__main__":
    main()
