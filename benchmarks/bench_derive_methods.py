"""Derivation time of the matrix method against Lagrange's equations (the reference), vs number of links.

Usage:  python benchmarks/bench_derive_methods.py [--max-links 10] [--out benchmarks/results]

The chain is n links of Borisov's model 3 (a massless variable-length part
followed by a rigid weighty rod), absolute angles: 2n coordinates. The
ratio lagrange/matrix is printed per n and written to
results/derive_methods.json; the target is >= 20x at n = 10.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import sympy
from sympy.core.cache import clear_cache

import rodgen
from rodgen.model.loader import load_dict


def model3_chain(n: int) -> rodgen.Model:
    params: dict[str, float] = {}
    links = []
    for i in range(1, n + 1):
        params.update({f"m{i}": 1.0 + 0.3 * i, f"b{i}": 0.2 + 0.05 * i, f"I{i}": 0.01 * i})
        links.append({"name": f"L{i}", "parent": None if i == 1 else f"L{i-1}", "coordinate": f"phi{i}",
                      "segments": [{"name": f"v{i}", "type": "variable", "coordinate": f"l{i}", "length": 0.3},
                                   {"name": f"r{i}", "length": f"b{i}",
                                    "rod": {"mass": f"m{i}", "inertia": f"I{i}"}}]})
    return load_dict({"name": f"model3_{n}", "parameters": params, "links": links})


def timed(method: str, n: int) -> float:
    model = model3_chain(n)
    clear_cache()  # no method profits from SymPy's cache of an earlier run
    t0 = time.perf_counter()
    rodgen.derive(model, method=method)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-links", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    rows = []
    print(f"{'n':>3} {'coords':>6} {'matrix [s]':>11} {'lagrange [s]':>13} {'ratio':>7}")
    for n in sorted({1, 2, 3, 5, 8, args.max_links}):
        if n > args.max_links:
            continue
        tm = min(timed("matrix", n) for _ in range(3))
        tl = timed("lagrange", n)
        rows.append({"n_links": n, "n_coordinates": 2 * n, "matrix_s": tm, "lagrange_s": tl, "ratio": tl / tm})
        print(f"{n:>3} {2*n:>6} {tm:>11.3f} {tl:>13.3f} {tl/tm:>6.1f}x", flush=True)
    target = next((r for r in rows if r["n_links"] == 10), None)
    if target is not None:
        ok = target["ratio"] >= 20
        print(f"target: matrix >= 20x faster than lagrange at 10 links: {'MET' if ok else 'NOT MET'} "
              f"({target['ratio']:.1f}x)")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "derive_methods.json"), "w") as fh:
        json.dump({"machine": platform.platform(), "python": platform.python_version(),
                   "sympy": sympy.__version__, "rodgen": rodgen.__version__, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
