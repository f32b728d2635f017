"""The order of the generated statements (``CodegenOptions.schedule``), natively, in one run.

``schedule="depth-first"`` prints each temporary just before its first use (the stores in their order, each after
the temporaries it needs, depth first); ``"as-derived"`` is the derivation's order (its intermediates in turn: a
recursion's pass over every body, then the next pass); ``"auto"``, the default, is depth first for the routines
compiled for size (the long constrained solves) and as derived elsewhere. The same operations either way.

1. **Routines, depth first against as derived**: bench_trig_batch.py's harness (forward dynamics, mass matrix,
   RHS Jacobian on the same states; per call, the minimum over rounds; the two programs alternately), the model's
   C compiled as ``rodgen.build`` compiles it. The numbers of both must agree to 1e-12 (relative to the largest
   entry; the products fused into multiply-adds may differ with the order). This is why ``"auto"`` keeps these
   routines as derived.
2. **Walks, 10 s at 1 kHz, RK4 with events, the controllers in C, auto against as derived**: the 3D biped of
   bench_walk3d.py (examples/spatial/biped12.yaml, both soles, the controller per stage: its solves are compiled
   for size) and exo5_walk of bench_walk.py (the planar exoskeleton on foot_a: its solves are not, so auto
   changes nothing there), each built both ways, each run on a fresh copy of its library in a fresh process (a
   library's speed varied by up to 40 % between loads with its pages' placement), ``--walk-rounds`` alternating
   pairs, the best of 3 runs each, the medians kept. The trajectories must agree to 1e-6.

    python benchmarks/bench_schedule.py [--robots ...] [--rounds 7] [--walk-rounds 9] [--no-walks]

Writes ``results/schedule.json``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_trig_batch as tb  # noqa: E402
import numpy as np  # noqa: E402

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions  # noqa: E402
from rodgen.toolchain import BuildOptions  # noqa: E402
from rodgen.toolchain.compiler import model_cflags  # noqa: E402

from common import fresh_copy, library_files, write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"
ORDERS = ("depth-first", "as-derived")        # the routines' comparison
WALK_ORDERS = ("auto", "as-derived")          # the walks
T_END, DT = 10.0, 1e-3

#: One run of a walk in a fresh process: argv = kind, library (a fresh copy), controller library, parameters
#: (.npy), initial state (.npy), output (.npy of q). Prints the best of three times.
WALK_ONCE = r"""
import sys, time
import numpy as np, rodgen
from rodgen.toolchain import load_module
kind, lib, ctrl_lib, params, y0, out = sys.argv[1:7]
robot = load_module(lib)
if kind == "biped12":
    ctrl = rodgen.CController(ctrl_lib, "biped12_walk_controller", params=np.load(params))
    kw = dict(contacts=["sole_l", "sole_r"], on_slip="continue", max_events=2000)
else:
    ctrl = rodgen.CController(ctrl_lib, "exo5_walk_controller", params=np.load(params), state=[0.0])
    kw = dict(contacts=["foot_a"], arm_gap=0.01, on_slip="continue")
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    res = robot.simulate(np.load(y0), 10.0, 1e-3, controller=ctrl, **kw)
    best = min(best, time.perf_counter() - t0)
np.save(out, res.q)
print(best)
"""


def routines(names: list[str], rounds: int) -> list[dict[str, Any]]:
    flags = model_cflags(BuildOptions())
    make = tb.models()
    rows = []
    for name in names:
        model = make[name]()
        with tempfile.TemporaryDirectory(prefix="rodgen_sched_") as tmp:
            exe = {o: tb.build(model, Path(tmp) / o, CodegenOptions(jacobian=True, schedule=o), flags) for o in ORDERS}
            nums = {o: tb.run(exe[o][0], 1) for o in ORDERS}
            spec = exe[ORDERS[0]][1]
            ref = nums["as-derived"][0]
            scale = max(max(abs(x) for x in ref), 1.0)
            diff = max(abs(a - b) for a, b in zip(nums["depth-first"][0], ref)) / scale
            best = {o: nums[o][1] for o in ORDERS}
            for _ in range(rounds):
                for o in ORDERS:
                    best[o] = [min(a, b) for a, b in zip(best[o], tb.run(exe[o][0], 3)[1])]
        d, a = best["depth-first"], best["as-derived"]
        row = {"robot": name, "nq": spec.nq, "nv": spec.nv or spec.nq, "largest_relative_difference": diff,
               **{r: {"depth_first_ns": x, "as_derived_ns": y, "ratio": x / y} for r, x, y in zip(tb.ROUTINES, d, a)}}
        rows.append(row)
        print(f"{name:11s} " + "  ".join(f"{r} {x:8.1f} / {y:8.1f} ns = {x / y:.3f}"
                                          for r, x, y in zip(tb.ROUTINES, d, a)) + f"  (difference {diff:.1e})",
              flush=True)
        assert diff < 1e-12, f"{name}: the two orders differ by {diff:.2e}"
    return rows


def _walk_builds(kind: str, order: str, root: Path) -> tuple[Path, Path, Path, Path]:
    """(model library, controller library, parameters, initial state) of a walk built with ``order``."""
    opts = CodegenOptions(schedule=order)
    bd = root / order
    if kind == "biped12":
        sys.path.insert(0, str(EXAMPLES / "spatial"))
        import biped12_gait as gm
        robot = rodgen.build(rodgen.load(EXAMPLES / "spatial" / "biped12.yaml"), build_dir=bd, codegen=opts)
        gait = gm.plan(robot, 10)
        ctrl = gm.controller(gait, robot, bd)
        y0 = np.r_[gait.q[0], gait.v[0]]
    else:
        sys.path.insert(0, str(EXAMPLES))
        import exo5_walk
        robot = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=bd, codegen=opts)
        law = exo5_walk.VirtualConstraints(robot)
        ctrl = law.c_controller(bd)
        y0 = law.initial_state()
    np.save(bd / f"{kind}_params.npy", ctrl.params)
    np.save(bd / f"{kind}_y0.npy", y0)
    return Path(robot.path), Path(ctrl.library), bd / f"{kind}_params.npy", bd / f"{kind}_y0.npy"


def walks(rounds: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="rodgen_sched_walk_") as tmp:
        root = Path(tmp)
        (root / "once.py").write_text(WALK_ONCE)
        for kind in ("biped12", "exo5_walk"):
            built = {o: _walk_builds(kind, o, root) for o in WALK_ORDERS}
            times: dict[str, list[float]] = {o: [] for o in WALK_ORDERS}
            for _ in range(rounds):
                for o in WALK_ORDERS:
                    lib, ctrl, params, y0 = built[o]
                    copy = fresh_copy(library_files(lib.parent), root) / lib.name
                    r = subprocess.run([sys.executable, str(root / "once.py"), kind, str(copy), str(ctrl),
                                        str(params), str(y0), str(root / f"{kind}_{o}_q.npy")],
                                       capture_output=True, text=True, check=True)
                    times[o].append(float(r.stdout.split()[-1]))
            qa, qb = (np.load(root / f"{kind}_{o}_q.npy") for o in WALK_ORDERS)
            diff = float(np.abs(qa - qb).max()) if qa.shape == qb.shape else float("inf")
            d, a = statistics.median(times["auto"]), statistics.median(times["as-derived"])
            rows.append({"walk": kind, "auto_s": d, "as_derived_s": a, "ratio": d / a,
                         "auto_runs": times["auto"], "as_derived_runs": times["as-derived"],
                         "largest_state_difference": diff})
            print(f"{kind:10s} 10 s walk: auto {d:.4f} s, as derived {a:.4f} s = {d / a:.3f} "
                  f"(trajectories {diff:.1e} apart)", flush=True)
            assert diff < 1e-6, f"{kind}: the two orders walk apart by {diff:.2e}"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=["solo12", "ur5", "chain12", "biped12", "vl_chain5", "vl_chain12"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--walk-rounds", type=int, default=9)
    ap.add_argument("--no-walks", action="store_true")
    args = ap.parse_args()
    start = time.time()
    out: dict[str, Any] = {"load_before": os.getloadavg()[0], "rounds": args.rounds}
    out["routines"] = routines(args.robots, args.rounds)
    if not args.no_walks:
        out["walks"] = walks(args.walk_rounds)
        out["walk_rounds"] = args.walk_rounds
    out["load_after"] = os.getloadavg()[0]
    out["seconds"] = time.time() - start
    write_json("schedule", out)


if __name__ == "__main__":
    main()
