"""The everyday loop: a script that builds a model and is run again.

    python benchmarks/bench_warm.py [--repeat 5] [--model examples/exo5.yaml]

Each measurement is a fresh Python process running

    import rodgen
    robot = rodgen.build(rodgen.load(MODEL), build_dir=DIR)

and timed from before ``import rodgen`` to the loaded model (interpreter start-up excluded):

* **cold**: a new, empty build folder (derive, generate, compile; the runtime extension is
  already in the user cache, as after the first use on a machine);
* **warm**: the same build folder again (the cache is looked up before derivation; SymPy is not
  imported).

Writes benchmarks/results/warm.json; ``python benchmarks/run.py --only summary`` shows it beside
the cold build and checks the target (warm build of exo5 under 0.5 s).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import write_json  # noqa: E402

SCRIPT = """
import time
t0 = time.perf_counter()
import rodgen
robot = rodgen.build(rodgen.load({model!r}), build_dir={build_dir!r})
t1 = time.perf_counter()
import json, sys
print(json.dumps({{"seconds": t1 - t0, "sympy": "sympy" in sys.modules, "path": str(robot.path)}}))
"""

#: The target of a warm build of exo5, seconds (fresh process, ``import rodgen`` included).
WARM_TARGET_S = 0.5


def run_once(model: Path, build_dir: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "generator"))
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(model=str(model), build_dir=build_dir)],
                         capture_output=True, text=True, env=env, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", default=str(HERE.parent / "examples" / "exo5.yaml"))
    args = ap.parse_args(argv)
    model = Path(args.model).resolve()
    cold: list[float] = []
    warm: list[float] = []
    sympy_warm: list[bool] = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="rodgen_warm_") as d:
            first = run_once(model, d)
            cold.append(first["seconds"])
            for _ in range(2):
                again = run_once(model, d)
                assert again["path"] == first["path"], "a warm build loaded another library"
                warm.append(again["seconds"])
                sympy_warm.append(again["sympy"])
        print(f"run {i + 1}: cold {cold[-1]:.2f} s, warm {warm[-2]:.3f} s / {warm[-1]:.3f} s")
    result = {
        "model": model.stem,
        "cold_s": statistics.median(cold),
        "warm_s": statistics.median(warm),
        "warm_min_s": min(warm),
        "warm_max_s": max(warm),
        "warm_imports_sympy": any(sympy_warm),
        "target_s": WARM_TARGET_S,
        "runs": {"cold": cold, "warm": warm},
        "note": "fresh process each, from before `import rodgen` to the loaded model; cold = empty build "
                "folder (derive, generate, compile), warm = the same folder again; medians",
    }
    write_json("warm", result)
    print(f"{model.stem}: cold {result['cold_s']:.2f} s, warm {result['warm_s']:.3f} s "
          f"(min {result['warm_min_s']:.3f}, max {result['warm_max_s']:.3f}); SymPy imported when warm: "
          f"{result['warm_imports_sympy']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
