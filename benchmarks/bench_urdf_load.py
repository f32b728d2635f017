"""Loading a URDF robot grows like n^2 with its number of links, not n^4.

``rodgen.from_urdf`` (no build) on generated serial chains of n revolute links (n = 50, 100, 200, 400),
each a median of ``--repeat`` loads in this process. Loading reads the file, checks it (the numeric
mass matrix at four configurations and its Cholesky pivots, to refuse singular robots), maps it onto a
spatial model and validates that. The claim is the ratio of the time at n = 400 to the time at n = 100:
16 for n^2 growth, 256 for n^4 (the eigenvalue problem per leading block the check used to solve: 75 s
at n = 400). Target: the ratio at most 32 and 400 links within 5 s.

Writes ``results/urdf_load.json``.

    python benchmarks/bench_urdf_load.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen.examples import chain_urdf  # noqa: E402

from common import write_json  # noqa: E402

SIZES = (50, 100, 200, 400)
TARGETS = {"ratio_400_over_100": 32.0, "seconds_400": 5.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    seconds: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in SIZES:
            path = Path(tmp) / f"chain{n}.urdf"
            path.write_text(chain_urdf(n))
            runs = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                rodgen.from_urdf(path)
                runs.append(time.perf_counter() - start)
            seconds[n] = statistics.median(runs)
            print(f"n = {n:4d}: {seconds[n]:.3f} s")
    ratio = seconds[400] / seconds[100]
    print(f"t(400) / t(100) = {ratio:.1f} (n^2: 16, n^4: 256)")
    results = {"seconds": {str(n): round(t, 4) for n, t in seconds.items()}, "ratio_400_over_100": round(ratio, 2),
               "seconds_400": round(seconds[400], 3)}
    met = {k: results[k] <= v for k, v in TARGETS.items()}  # type: ignore[operator]
    write_json("urdf_load", {"repeat": args.repeat, "targets": TARGETS, "met": met, **results})


if __name__ == "__main__":
    main()
