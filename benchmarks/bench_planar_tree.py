"""Planar models on the spatial tree: the planar recursion against the spatial recursions over the lowered tree.

    python benchmarks/bench_planar_tree.py [--n 5 12 20] [--repeat 7] [--no-instructions]

For vl_chain(5), (12), (20) and examples/exo5_walk.yaml, both derivations of the same model in the same run
(``derive(model, method="planar")``: the planar recursion of rodgen.symbolic.recursive, the planar default
before; ``method="recursive"``: rodgen.symbolic.planar_tree, the planar tree lowered onto the spatial
recursions of rodgen.symbolic.spatial, the default now):

* **operations** of the generated forward dynamics (``ModelSpec.forward_ops``: the articulated-body
  algorithm after the code stage's CSE, what ``rodgen.build`` emits) and, for exo5_walk, of
  ``<model>_constrained_solve`` (both feet held; the routine's count after CSE);
* **time** per call of the generated ``<model>_forward_dynamics`` and ``<model>_constrained_solve`` from a C
  ``main()`` (gcc -O2, no Python), the two derivations' harnesses run interleaved, medians of ``--repeat``
  runs; and the **instructions** per call counted by valgrind's callgrind (not disturbed by other work on
  the machine), where valgrind is installed.

The ratio recursive (tree) / planar of each is printed and written to benchmarks/results/planar_tree.json.
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
METHODS = ("planar", "recursive")

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "{name}.h"

static double now(void) {{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}}

int main(int argc, char **argv) {{
    const double p[{NP}] = {P};
    double q[{NQ}] = {Q}, qd[{NQ}] = {QD}, u[{NU}] = {{0}}, qdd[{NQ}], d[{NQ}];
    double k[4 * {NR}], target[{NR}], lam[{NR}], s[2 * {NR}], f[(2 * {NQ}) * (2 * {NQ})];
    const char *mode = argc > 1 ? argv[1] : "fd";
    long reps = argc > 2 ? atol(argv[2]) : 100000, i;
    int j, st = 0;
    double t0, t1, acc = 0.0, q0 = q[0];
    for (j = 0; j < {NR}; ++j) {{ k[4*j] = 1.0; k[4*j+1] = 0.0; k[4*j+2] = 20.0; k[4*j+3] = 100.0; target[j] = 0.0; }}
    t0 = now();
    for (i = 0; i < reps; ++i) {{
        q[0] = q0 + 1e-9 * (i & 15);        /* defeat hoisting */
        if (mode[0] == 'f') {{ st |= {name}_forward_dynamics(0.0, q, qd, u, p, qdd); acc += qdd[0]; }}
        else {{ {SOLVE}; acc += qdd[0] + lam[0]; }}
    }}
    t1 = now();
    printf("%.9e %d %.17g\n", (t1 - t0) / (reps > 0 ? reps : 1), st, acc);
    return 0;
}}
"""


class Harness:
    """The generated C of one derivation with a timing main()."""

    def __init__(self, eqs: rodgen.Equations) -> None:
        spec = lower(eqs, options=CodegenOptions(forward="aba", jacobian=False))
        files = render(spec)
        self.forward_ops = spec.forward_ops
        solve = spec.routine("constrained_solve") if eqs.constraints else None
        self.solve_ops: Optional[int] = solve.ops if solve is not None else None
        self.dir = Path(tempfile.mkdtemp(prefix="rodgen_planar_tree_"))
        for fname, text in files.files.items():
            (self.dir / fname).write_text(text)
        name = spec.prefix
        nq, nu = len(eqs.q), max(len(eqs.u), 1)
        nr = max(sum(len(c.position) for c in eqs.constraints), 1)
        pvals = [eqs.param_values[s_] for s_ in eqs.params] or [0.0]
        q0 = [0.5 + 0.1 * (i % 3) if c.kind == "length" else 0.2 - 0.15 * (i % 4)
              for i, c in enumerate(eqs.coordinates)]
        qd0 = [0.3 - 0.05 * i for i in range(nq)]

        def arr(v: Any) -> str:
            return "{" + ", ".join(repr(float(x)) for x in v) + "}"
        call = (f"{name}_constrained_solve(0.0, q, qd, u, p, k, target, d, qdd, lam, s, f)" if solve is not None
                else "(void)k; (void)target; (void)d; (void)lam; (void)s; (void)f")
        (self.dir / "harness.c").write_text(HARNESS.format(name=name, NQ=nq, NU=nu, NP=len(pvals), NR=nr,
                                                           P=arr(pvals), Q=arr(q0), QD=arr(qd0), SOLVE=call))
        self.exe = self.dir / "harness"
        sources = ["harness.c", f"{name}.c", "rodgen_linalg.c"]
        cmd = [CC, "-O2", "-std=c99", "-o", str(self.exe), *sources, "-lm"]
        proc = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"harness failed to compile: {' '.join(cmd)}\n{proc.stderr[-3000:]}")

    def seconds(self, mode: str, reps: int) -> float:
        out = subprocess.run([str(self.exe), mode, str(reps)], capture_output=True, text=True, check=True)
        return float(out.stdout.split()[0])

    def instructions(self, mode: str, reps: int = 2000) -> Optional[float]:
        """Instructions per call (callgrind, the run of ``reps`` calls minus the run of none)."""
        if shutil.which("valgrind") is None:
            return None
        counts = []
        for r in (reps, 0):
            out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(self.exe),
                                  mode, str(r)], capture_output=True, text=True, check=True)
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
    for method in METHODS:
        t0 = time.perf_counter()
        eqs = rodgen.derive(model, method=method)
        row[f"derive_s_{method}"] = time.perf_counter() - t0
        harness[method] = Harness(eqs)
        row[f"forward_ops_{method}"] = harness[method].forward_ops
        row[f"solve_ops_{method}"] = harness[method].solve_ops
    modes = ["fd"] + (["solve"] if harness["recursive"].solve_ops is not None else [])
    for mode in modes:
        one = harness["planar"].seconds(mode, 1000)
        reps = max(1000, int(0.2 / max(one, 1e-9)))
        runs: dict[str, list[float]] = {m: [] for m in METHODS}
        for _ in range(repeat):                      # interleaved: the same load on both
            for method in METHODS:
                runs[method].append(harness[method].seconds(mode, reps))
        key = "forward" if mode == "fd" else "solve"
        for method in METHODS:
            row[f"{key}_us_{method}"] = 1e6 * statistics.median(runs[method])
            if instructions:
                row[f"{key}_instructions_{method}"] = harness[method].instructions(mode)
        row[f"{key}_ops_ratio"] = row[f"{key}_ops_recursive"] / row[f"{key}_ops_planar"]
        row[f"{key}_time_ratio"] = row[f"{key}_us_recursive"] / row[f"{key}_us_planar"]
        if instructions and row[f"{key}_instructions_planar"]:
            row[f"{key}_instructions_ratio"] = (row[f"{key}_instructions_recursive"]
                                                / row[f"{key}_instructions_planar"])
    for h in harness.values():
        h.close()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[5, 12, 20])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-instructions", action="store_true", help="skip the callgrind counts")
    args = ap.parse_args()
    cases = [(f"vl_chain({n})", vl_chain(n)) for n in args.n]
    cases.append(("exo5_walk", rodgen.load(EXAMPLES / "exo5_walk.yaml")))
    rows = []
    for label, model in cases:
        row = compare(label, model, args.repeat, not args.no_instructions)
        rows.append(row)
        parts = [f"{label:>13}"]
        for key in ("forward", "solve"):
            if f"{key}_ops_ratio" not in row:
                continue
            parts.append(f"{key}: ops {row[f'{key}_ops_planar']} -> {row[f'{key}_ops_recursive']} "
                         f"({row[f'{key}_ops_ratio']:.3f}), time {row[f'{key}_us_planar']:.3f} -> "
                         f"{row[f'{key}_us_recursive']:.3f} us ({row[f'{key}_time_ratio']:.3f})")
            if row.get(f"{key}_instructions_ratio") is not None:
                parts.append(f"instr {row[f'{key}_instructions_planar']:.0f} -> "
                             f"{row[f'{key}_instructions_recursive']:.0f} ({row[f'{key}_instructions_ratio']:.3f})")
        print("  ".join(parts), flush=True)
    worst = max(r[k] for r in rows for k in ("forward_ops_ratio", "solve_ops_ratio", "forward_time_ratio",
                                              "solve_time_ratio", "forward_instructions_ratio",
                                              "solve_instructions_ratio") if r.get(k) is not None)
    print(f"largest ratio tree/planar: {worst:.3f} ({'within' if worst <= 1.10 else 'NOT within'} 10 %)")
    write_json("planar_tree", {"rows": rows, "largest_ratio": worst,
                               "note": "ratio = recursive (the tree path) / planar (the planar recursion); "
                                       "forward = the generated articulated-body forward dynamics, solve = "
                                       "<model>_constrained_solve with every row held; times per call in C, "
                                       "interleaved, medians; instructions by callgrind"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
