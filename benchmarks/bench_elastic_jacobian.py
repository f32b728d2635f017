"""Size and build time of the exact RHS Jacobian for large elastic models (nq = 12, 24, 48).

A uniform cantilever discretised by B_n (n hinges, n coordinates) is derived with the
recursive method and generated with and without ``rhs_jacobian``; the script reports the
time of each stage, the size of the generated C source and the part of it
that the Jacobian adds (the difference of the two sources), the gcc -O2 compile time, and the growth
exponent of the Jacobian's size between successive n (a size ~ n^k gives k). Not part of the tests.

    python benchmarks/bench_elastic_jacobian.py [--n 12 24 48] [--out benchmarks/results/elastic_jacobian.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import rodgen
from rodgen.codegen import CodegenOptions, generate
from rodgen.symbolic import derive


def cantilever(n: int) -> rodgen.Model:
    m = rodgen.Model(f"cantilever{n}", gravity=(0.0, -9.81))
    m.elastic("beam", length=1.0, EJ=1.0, mass=1.0, rule="B", n=n, initial=-math.pi / 2)
    return m


def measure(n: int) -> dict:
    model = cantilever(n)
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
            t = time.perf_counter()
            subprocess.run(["gcc", "-O2", "-std=c99", "-c", name, "-o", "m.o"], cwd=tmp, check=True)
            cc = time.perf_counter() - t
        key = "jac" if jac else "base"
        row[f"{key}_generate_s"] = gen
        row[f"{key}_compile_s"] = cc
        row[f"{key}_c_bytes"] = len(src)
        print(f"n={n:3d} jacobian={jac!s:5}: generate {gen:7.2f} s, gcc -O2 {cc:7.2f} s, C {len(src) / 1e3:9.1f} kB",
              flush=True)
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[12, 24, 48])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "elastic_jacobian.json"))
    args = ap.parse_args(argv)
    rows = [measure(n) for n in args.n]
    for r in rows:
        r["jacobian_c_bytes"] = r["jac_c_bytes"] - r["base_c_bytes"]
    for a, b in zip(rows, rows[1:]):
        b["jacobian_growth_exponent"] = (math.log(b["jacobian_c_bytes"] / a["jacobian_c_bytes"])
                                         / math.log(b["n"] / a["n"]))
    for r in rows:
        print(json.dumps(r))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump({"rows": rows, "python": sys.version.split()[0], "rodgen": rodgen.__version__}, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
