"""simulate_batch against one thread and against MuJoCo's threaded rollout, in the same run.

1000 trajectories of rodgen.examples.vl_chain(5) (10 coordinates), 1 s each at 1 kHz with classical RK4,
zero inputs, initial angles spread around the model's initial state. Measured, each as the median of
``--repeat`` runs (rodgen's 1- and 2-thread runs interleaved), with wall time and the process's user
CPU time (the machine may be shared: the CPU time shows the work, the wall time the parallelism). The
share of each of the 2 threads, run alone, gives the speedup two free cores allow, whatever the load:

* rodgen ``simulate_batch(..., threads=k)`` storing every step (as the rollout does) and only the final
  states (``store="final"``), for k = 1 and 2;
* MuJoCo ``rollout.rollout`` of the same batch (the same mechanism as MJCF from ``common.mjcf``, RK4,
  dt = 1 ms) with one MjData per thread, k = 1 and 2, into a preallocated state array.

The final states of both agree to about 1e-10 (reported), which shows that the models match. Writes
``results/batch.json``.

    python benchmarks/bench_batch.py [--n 1000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen.examples import vl_chain  # noqa: E402

from common import NumericTree, missing, mjcf, write_json  # noqa: E402

T_END, DT = 1.0, 1e-3


def _user() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def measure(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Median wall and user CPU seconds of fn() over `repeat` runs (after one warm-up)."""
    fn()
    walls, users = [], []
    for _ in range(repeat):
        u0, t0 = _user(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        users.append(_user() - u0)
    return {"wall_s": statistics.median(walls), "user_s": statistics.median(users), "wall_min_s": min(walls)}


def alternate(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict[str, float]]:
    """measure() of several functions, their runs interleaved (after one warm-up each)."""
    for fn in fns.values():
        fn()
    walls: dict[str, list[float]] = {k: [] for k in fns}
    users: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            u0, t0 = _user(), time.perf_counter()
            fn()
            walls[k].append(time.perf_counter() - t0)
            users[k].append(_user() - u0)
    return {k: {"wall_s": statistics.median(walls[k]), "user_s": statistics.median(users[k]),
                "wall_min_s": min(walls[k])} for k in fns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of trajectories")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, steps = args.n, int(round(T_END / DT))
    model = vl_chain(5)
    tree = NumericTree(model)
    with tempfile.TemporaryDirectory() as build_dir:
        robot = rodgen.build(model, build_dir=build_dir)
    nq = robot.nq
    q0 = np.asarray(robot.initial_state())[:nq]
    rng = np.random.default_rng(1)
    y0s = np.zeros((n, 2 * nq))
    y0s[:, :nq] = q0 + 0.05 * rng.standard_normal((n, nq))
    out: dict[str, Any] = {"trajectories": n, "t_end": T_END, "dt": DT, "steps": steps, "integrator": "RK4",
                           "model": "vl_chain(5)", "nq": nq, "repeat": args.repeat, "runs": {}}
    out["load_average_1min_at_start"] = os.getloadavg()[0]
    runs = out["runs"]
    # 1 and 2 threads alternate, so that a change of the machine's load hits both alike
    fns = {f"rodgen_{store}_{threads}t": (lambda threads=threads, store=store: robot.simulate_batch(
        y0s, T_END, DT, threads=threads, store=store)) for store in ("all", "final") for threads in (1, 2)}
    runs.update(alternate(fns, args.repeat))
    for key in fns:
        print(key, runs[key], flush=True)
    # the share of each of 2 threads (trajectory i on thread i % 2), each run alone on one thread: the
    # speedup two free cores give is the total work over the larger share (independent of other load)
    halves = [measure(lambda: robot.simulate_batch(y0s[k::2], T_END, DT, threads=1, store="all"), args.repeat)
              for k in (0, 1)]
    out["thread_shares_user_s"] = [h["user_s"] for h in halves]
    out["speedup_2t_bound_from_shares"] = runs["rodgen_all_1t"]["user_s"] / max(h["user_s"] for h in halves)
    final = robot.simulate_batch(y0s, T_END, DT, threads=2, store="final")
    assert bool(final.ok.all()), final.messages
    if missing("mujoco") is None:
        import mujoco
        from mujoco import rollout
        mj = mujoco.MjModel.from_xml_string(mjcf(tree, model.name, DT))
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        md = mujoco.MjData(mj)
        init = np.empty((n, mujoco.mj_stateSize(mj, spec)))
        for i in range(n):
            md.qpos[:], md.qvel[:] = tree.T @ y0s[i, :nq], tree.T @ y0s[i, nq:]
            md.time = 0.0
            mujoco.mj_getState(mj, md, init[i], spec)
        ctrl = np.zeros((n, steps, mj.nu))
        state = np.empty((n, steps, init.shape[1]))
        for threads in (1, 2):
            datas = [mujoco.MjData(mj) for _ in range(threads)]
            key = f"mujoco_rollout_{threads}t"
            runs[key] = measure(lambda: rollout.rollout(mj, datas, init, ctrl, nstep=steps, state=state),
                                args.repeat)
            print(key, runs[key], flush=True)
        s = state[:, -1, 1:1 + 2 * tree.n]
        ref = np.concatenate([final.q @ tree.T.T, final.qd @ tree.T.T], axis=1)
        out["max_final_state_difference_rodgen_vs_mujoco"] = float(np.abs(s - ref).max())
        out["mujoco"] = mujoco.__version__
    else:
        out["mujoco"] = missing("mujoco")
    r = runs
    out["speedup_2t_over_1t_all"] = r["rodgen_all_1t"]["wall_s"] / r["rodgen_all_2t"]["wall_s"]
    out["speedup_2t_over_1t_final"] = r["rodgen_final_1t"]["wall_s"] / r["rodgen_final_2t"]["wall_s"]
    out["speedup_2t_over_1t_all_best"] = r["rodgen_all_1t"]["wall_min_s"] / r["rodgen_all_2t"]["wall_min_s"]
    out["user_cpu_ratio_2t_over_1t_all"] = r["rodgen_all_2t"]["user_s"] / r["rodgen_all_1t"]["user_s"]
    out["user_cpu_ratio_2t_over_1t_final"] = r["rodgen_final_2t"]["user_s"] / r["rodgen_final_1t"]["user_s"]
    if "mujoco_rollout_2t" in r:
        out["mujoco_over_rodgen_2t_all"] = r["mujoco_rollout_2t"]["wall_s"] / r["rodgen_all_2t"]["wall_s"]
        out["mujoco_over_rodgen_2t_final"] = r["mujoco_rollout_2t"]["wall_s"] / r["rodgen_final_2t"]["wall_s"]
        out["mujoco_over_rodgen_user_cpu_2t_all"] = (r["mujoco_rollout_2t"]["user_s"]
                                                     / r["rodgen_all_2t"]["user_s"])
        out["mujoco_speedup_2t_over_1t"] = r["mujoco_rollout_1t"]["wall_s"] / r["mujoco_rollout_2t"]["wall_s"]
    for k, v in out.items():
        if k.startswith(("speedup", "user_cpu", "mujoco_over", "mujoco_speedup", "max_final")):
            print(f"{k}: {v:.3g}")
    out["load_average_1min_at_end"] = os.getloadavg()[0]
    write_json("batch", out)


if __name__ == "__main__":
    main()
