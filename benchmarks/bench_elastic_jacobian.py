"""Size, build time and run time of the exact RHS Jacobian for large elastic models (nq = 12 ... 60).

A uniform cantilever discretised by B_n (n hinges, n coordinates, gravity on) is derived with the
recursive method and generated with and without ``rhs_jacobian``. Per n the script reports the
derivation and generation times, the size of the generated C source and the part of it that the
Jacobian adds (the difference of the two sources), the wall-clock time of ``rodgen.build`` with the
Jacobian (derive, generate, compile and load into an empty build folder: what the first use of a
deferred Jacobian costs) and without it, with the CPU time of that build (this process and the
compilers: on a loaded machine the wall-clock time also holds the waiting for a core), the run
time of one Jacobian evaluation (the batch kernel, best of several repeats), and the growth
exponent k of the Jacobian's C (~ n^k) between successive n and fitted over all n. Not part of
the tests.

With ``--baseline REV`` the run time of one evaluation is also measured with rodgen as of the git
revision REV (exported with ``git archive`` into a temporary folder and run in a subprocess), on the
same model in the same run, for the ratio new/old.

    python benchmarks/bench_elastic_jacobian.py [--n 12 24 48 60] [--baseline REV --baseline-n 12]
        [--out benchmarks/results/elastic_jacobian.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

import rodgen
from rodgen.codegen import CodegenOptions, generate
from rodgen.symbolic import derive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Code run by this script and, for --baseline, by a subprocess with an older rodgen on its path:
#: the model and the timing of one Jacobian evaluation through the batch kernel.
TIMING = r'''
import math, time, tempfile
import numpy as np
import rodgen
from rodgen.codegen import CodegenOptions


def cantilever(n):
    m = rodgen.Model(f"cantilever{n}", gravity=(0.0, -9.81))
    m.elastic("beam", length=1.0, EJ=1.0, mass=1.0, rule="B", n=n, initial=-math.pi / 2)
    return m


def evaluation_seconds(sys_, states=200, repeats=7):
    """Seconds per Jacobian evaluation: the batch kernel on ``states`` random states, best of ``repeats``."""
    rng = np.random.default_rng(1)
    n = sys_.nq
    q = sys_.initial_state()[:n] + 0.1 * rng.standard_normal((states, n))
    qd = rng.standard_normal((states, n))
    u = np.zeros(sys_.nu)
    sys_.rhs_jacobian(q, qd, u)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        sys_.rhs_jacobian(q, qd, u)
        best = min(best, time.perf_counter() - t)
    return best / states


def timed_build(n):
    with tempfile.TemporaryDirectory() as tmp:
        sys_ = rodgen.build(cantilever(n), build_dir=tmp, codegen=CodegenOptions(jacobian=True), progress=False)
        return evaluation_seconds(sys_)
'''
exec(TIMING)  # defines cantilever, evaluation_seconds, timed_build (the same text the baseline runs)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the compilers): a build's cost without the
    waiting that other processes on a shared machine add to its wall-clock time."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(n: int, eval_n: set[int]) -> dict:
    model = cantilever(n)  # noqa: F821 (defined by TIMING)
    row: dict = {"n": n}
    t = time.perf_counter()
    eqs = derive(model, method="recursive")
    row["derive_s"] = time.perf_counter() - t
    for jac in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            files = generate(eqs, tmp, options=CodegenOptions(jacobian=jac))
            gen = time.perf_counter() - t
            name = next(f for f in files.files if f.endswith(".c") and f.startswith(model.name))
            src = files.files[name]
        with tempfile.TemporaryDirectory() as tmp:
            t, cpu = time.perf_counter(), cpu_seconds()
            sys_ = rodgen.build(model, build_dir=tmp, codegen=CodegenOptions(jacobian=jac), progress=False)
            build, build_cpu = time.perf_counter() - t, cpu_seconds() - cpu
            key = "jac" if jac else "base"
            row[f"{key}_generate_s"] = gen
            row[f"{key}_build_s"] = build
            row[f"{key}_build_cpu_s"] = build_cpu
            row[f"{key}_c_bytes"] = len(src)
            if jac and n in eval_n:
                row["evaluation_us"] = 1e6 * evaluation_seconds(sys_)  # noqa: F821
        print(f"n={n:3d} jacobian={jac!s:5}: generate {gen:6.2f} s, rodgen.build {build:6.2f} s "
              f"({build_cpu:6.2f} s CPU), C {len(src) / 1e3:8.1f} kB", flush=True)
    row["jacobian_c_bytes"] = row["jac_c_bytes"] - row["base_c_bytes"]
    return row


def baseline_evaluation_us(rev: str, n: int) -> float:
    """One Jacobian evaluation with rodgen as of the git revision ``rev`` (same model, same machine, now)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        code = TIMING + f"\nprint(repr(timed_build({n})))\n"
        env = dict(os.environ, PYTHONPATH=os.path.join(tmp, "generator"))
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, check=True, capture_output=True,
                             text=True).stdout
        return 1e6 * float(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[12, 24, 48, 60])
    ap.add_argument("--baseline", default=None, help="git revision whose Jacobian evaluation is timed too")
    ap.add_argument("--baseline-n", type=int, nargs="+", default=[12])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "elastic_jacobian.json"))
    args = ap.parse_args(argv)
    rows = [measure(n, set(args.n)) for n in args.n]
    for a, b in zip(rows, rows[1:]):
        b["jacobian_growth_exponent"] = (math.log(b["jacobian_c_bytes"] / a["jacobian_c_bytes"])
                                         / math.log(b["n"] / a["n"]))
    result: dict = {"rows": rows, "python": sys.version.split()[0], "rodgen": rodgen.__version__}
    if len(rows) > 1:
        ns = np.log([r["n"] for r in rows])
        result["jacobian_fitted_exponent"] = float(np.polyfit(ns, np.log([r["jacobian_c_bytes"] for r in rows]), 1)[0])
        result["base_fitted_exponent"] = float(np.polyfit(ns, np.log([r["base_c_bytes"] for r in rows]), 1)[0])
    if args.baseline:
        result["baseline"] = {"revision": args.baseline, "rows": []}
        for n in args.baseline_n:
            old = baseline_evaluation_us(args.baseline, n)
            new = next((r.get("evaluation_us") for r in rows if r["n"] == n), None)
            if new is None:
                with tempfile.TemporaryDirectory():
                    new = 1e6 * timed_build(n)  # noqa: F821
            result["baseline"]["rows"].append({"n": n, "evaluation_us": new, "baseline_evaluation_us": old,
                                               "ratio_new_over_old": new / old})
            print(f"n={n:3d}: one Jacobian evaluation {new:8.1f} us, at {args.baseline} {old:8.1f} us "
                  f"(ratio {new / old:.2f})", flush=True)
    for r in rows:
        print(json.dumps(r))
    for k in ("jacobian_fitted_exponent", "base_fitted_exponent"):
        if k in result:
            print(f"{k}: {result[k]:.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
