"""Planar models' RHS Jacobian: the Newton-Euler derivative over the lowered tree against the tangent path.

    python benchmarks/bench_planar_jacobian.py [--n 5 12 20] [--repeat 7] [--no-instructions]

For vl_chain(5), (12), (20), examples/exo5_walk.yaml and examples/gait2d.yaml, both paths of the same model in
the same run: ``derive(model, method="recursive")`` (the default; its ``rhs_jacobian`` differentiates the
recursive Newton-Euler algorithm over the planar tree lowered onto the spatial one,
``<model>_inverse_dynamics_derivatives``, and factorises M along the tree of the velocities) and
``method="planar"`` (the planar recursion kept for comparison; its ``rhs_jacobian`` runs the tangent of the
inverse dynamics once per column, ``inverse_dynamics_partials`` + 2n ``inverse_dynamics_tangent``, and a
Cholesky block solve). Reported per model and path:

* **derivative operations** per call: the Newton-Euler routine's count, against the partials' plus 2n times
  the tangent's (the code stage's counts after CSE), and the generated routines' total size;
* **time** per call of the generated ``<model>_rhs_jacobian`` from a C ``main()`` (gcc -O2, no Python), the
  two paths' harnesses run interleaved, medians of ``--repeat`` runs, and the **instructions** per call by
  valgrind's callgrind where it is installed (not disturbed by other work on the machine);
* the derivation and generation time of the Jacobian (SymPy and the code stage).

The ratio Newton-Euler / tangent of each is printed and written to benchmarks/results/planar_jacobian.json.
Both harnesses also print their Jacobian at the same state; the script checks they agree to round-off, 1e-10
relative to the largest entry (the two solve with different factorisations of M, Cholesky and L^T D L, whose
round-off grows with M's condition along the chain: 1.6e-12 at vl_chain(20)); the derivatives themselves agree
to 1e-12 in tests/test_rnea_derivatives.py.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions, lower, render  # noqa: E402
from rodgen.examples import vl_chain  # noqa: E402

from common import CC, write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"
PATHS = {"tangent": "planar", "newton_euler": "recursive"}     # path -> derivation method

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "{name}.h"

static double now(void) {{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}}

int main(int argc, char **argv) {{
    const double p[{NP}] = {P};
    double q[{NQ}] = {Q}, qd[{NQ}] = {QD}, u[{NU}] = {U};
    static double J[4 * {NQ} * {NQ}];
    long reps = argc > 1 ? atol(argv[1]) : 1000, i;
    int st = 0, k;
    double t0, t1, acc = 0.0, q0 = q[0];
    if (reps < 0) {{                        /* print the Jacobian at the state */
        st = {name}_rhs_jacobian(0.0, q, qd, u, p, J);
        for (k = 0; k < 4 * {NQ} * {NQ}; ++k) printf("%.17g\n", J[k]);
        return st;
    }}
    t0 = now();
    for (i = 0; i < reps; ++i) {{
        q[0] = q0 + 1e-9 * (i & 15);        /* defeat hoisting */
        st |= {name}_rhs_jacobian(0.0, q, qd, u, p, J);
        acc += J[4 * {NQ} * {NQ} - 1];
    }}
    t1 = now();
    printf("%.9e %d %.17g\n", (t1 - t0) / (reps > 0 ? reps : 1), st, acc);
    return 0;
}}
"""


class Harness:
    """The generated C of one derivation, with the Jacobian, and a timing main()."""

    def __init__(self, eqs: rodgen.Equations) -> None:
        t0 = time.perf_counter()
        spec = lower(eqs, options=CodegenOptions(jacobian=True))
        files = render(spec)
        self.generate_s = time.perf_counter() - t0
        n = len(eqs.qd)
        names = {r.name: r.ops for r in spec.routines}
        if "inverse_dynamics_derivatives" in names:
            self.derivative_ops = self.code_ops = names["inverse_dynamics_derivatives"]
        else:
            part, tang = names["inverse_dynamics_partials"], names["inverse_dynamics_tangent"]
            self.derivative_ops = part + 2 * n * tang
            self.code_ops = part + tang
        self.dir = Path(tempfile.mkdtemp(prefix="rodgen_planar_jacobian_"))
        for fname, text in files.files.items():
            (self.dir / fname).write_text(text)
        name = spec.prefix
        nu = max(len(eqs.u), 1)
        pvals = [eqs.param_values[s_] for s_ in eqs.params] or [0.0]
        q0 = [0.5 + 0.1 * (i % 3) if c.kind == "length" else 0.2 - 0.15 * (i % 4)
              for i, c in enumerate(eqs.coordinates)]
        qd0 = [0.3 - 0.05 * i for i in range(n)]
        u0 = [0.1 * (i % 5) - 0.2 for i in range(nu)]

        def arr(v: Any) -> str:
            return "{" + ", ".join(repr(float(x)) for x in v) + "}"
        (self.dir / "harness.c").write_text(HARNESS.format(name=name, NQ=n, NU=nu, NP=len(pvals), P=arr(pvals),
                                                           Q=arr(q0), QD=arr(qd0), U=arr(u0)))
        self.exe = self.dir / "harness"
        sources = ["harness.c", f"{name}.c", "rodgen_linalg.c"]
        cmd = [CC, "-O2", "-std=c99", "-o", str(self.exe), *sources, "-lm"]
        proc = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"harness failed to compile: {' '.join(cmd)}\n{proc.stderr[-3000:]}")

    def jacobian(self) -> list[float]:
        out = subprocess.run([str(self.exe), "-1"], capture_output=True, text=True, check=True)
        return [float(x) for x in out.stdout.split()]

    def seconds(self, reps: int) -> float:
        out = subprocess.run([str(self.exe), str(reps)], capture_output=True, text=True, check=True)
        return float(out.stdout.split()[0])

    def instructions(self, reps: int = 500) -> Optional[float]:
        """Instructions per call (callgrind, the run of ``reps`` calls minus the run of none)."""
        if shutil.which("valgrind") is None:
            return None
        counts = []
        for r in (reps, 0):
            out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(self.exe),
                                  str(r)], capture_output=True, text=True, check=True)
            m = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
            if m is None:
                return None
            counts.append(int(m.group(1)))
        return (counts[0] - counts[1]) / reps

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def compare(label: str, model: rodgen.Model, repeat: int, instructions: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"model": label}
    harness: dict[str, Harness] = {}
    for path, method in PATHS.items():
        t0 = time.perf_counter()
        eqs = rodgen.derive(model, method=method)
        row[f"derive_s_{path}"] = time.perf_counter() - t0
        harness[path] = Harness(eqs)
        row[f"generate_s_{path}"] = harness[path].generate_s
        row[f"derivative_ops_{path}"] = harness[path].derivative_ops
        row[f"code_ops_{path}"] = harness[path].code_ops
    a, b = harness["tangent"].jacobian(), harness["newton_euler"].jacobian()
    scale = max(1.0, max(abs(x) for x in a))
    row["max_rel_difference"] = max(abs(x - y) for x, y in zip(a, b)) / scale
    one = harness["tangent"].seconds(200)
    reps = max(200, int(0.2 / max(one, 1e-9)))
    runs: dict[str, list[float]] = {p: [] for p in PATHS}
    for _ in range(repeat):                      # interleaved: the same load on both
        for path in PATHS:
            runs[path].append(harness[path].seconds(reps))
    for path in PATHS:
        row[f"jacobian_us_{path}"] = 1e6 * statistics.median(runs[path])
        if instructions:
            row[f"jacobian_instructions_{path}"] = harness[path].instructions()
    row["ops_ratio"] = row["derivative_ops_newton_euler"] / row["derivative_ops_tangent"]
    row["time_ratio"] = row["jacobian_us_newton_euler"] / row["jacobian_us_tangent"]
    if instructions and row["jacobian_instructions_tangent"]:
        row["instructions_ratio"] = row["jacobian_instructions_newton_euler"] / row["jacobian_instructions_tangent"]
    for h in harness.values():
        h.close()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[5, 12, 20])
    ap.add_argument("--examples", nargs="*", default=["exo5_walk", "gait2d"])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-instructions", action="store_true", help="skip the callgrind counts")
    args = ap.parse_args()
    cases = [(f"vl_chain({n})", vl_chain(n)) for n in args.n]
    cases += [(nm, rodgen.load(EXAMPLES / f"{nm}.yaml")) for nm in args.examples]
    rows = []
    for label, model in cases:
        row = compare(label, model, args.repeat, not args.no_instructions)
        rows.append(row)
        line = (f"{label:>13}  derivative ops {row['derivative_ops_tangent']} -> {row['derivative_ops_newton_euler']}"
                f" ({row['ops_ratio']:.3f}), rhs_jacobian {row['jacobian_us_tangent']:.3f} -> "
                f"{row['jacobian_us_newton_euler']:.3f} us ({row['time_ratio']:.3f})")
        if row.get("instructions_ratio") is not None:
            line += (f", instr {row['jacobian_instructions_tangent']:.0f} -> "
                     f"{row['jacobian_instructions_newton_euler']:.0f} ({row['instructions_ratio']:.3f})")
        line += (f", derive+generate {row['derive_s_tangent'] + row['generate_s_tangent']:.1f} -> "
                 f"{row['derive_s_newton_euler'] + row['generate_s_newton_euler']:.1f} s"
                 f", max difference {row['max_rel_difference']:.1e}")
        print(line, flush=True)
    worst = max(r["max_rel_difference"] for r in rows)
    write_json("planar_jacobian", {"rows": rows, "largest_difference": worst,
                                   "note": "ratio = Newton-Euler derivative (method recursive) / tangent path "
                                           "(method planar); rhs_jacobian per call in C (gcc -O2), "
                                           "interleaved, medians; instructions by callgrind; derivative ops = "
                                           "the NE routine vs partials + 2n tangents"})
    return 0 if worst <= 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main())
