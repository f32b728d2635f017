"""rodgen.sweep on a 2-worker LocalCluster against the same batches run directly, in the same run.

The study: ``--n`` trajectories of rodgen.examples.vl_chain(5) (10 coordinates), 1 s each at 1 kHz with
classical RK4, one per point of a table of initial angles, summarised on the workers by
``max_abs:q`` (so only the summaries travel). It is cut into tasks of ``--chunk`` trajectories (100 by
default), each one ``simulate_batch(threads=1)``.

The reference is the same chunks run directly in this process, one after the other: for each chunk the
same ``simulate_batch`` and the same summary. With 2 workers the sweep would ideally take half that wall
time; the per-task overhead relative to the work is

* wall: ``2 * T_sweep / T_direct - 1`` (the workers' share of a busy machine shows here too), and
* CPU: the CPU seconds the study spent (both worker processes, plus this process, which holds the
  scheduler and the client) over the CPU seconds of the direct run, minus 1, which does not depend on
  other work on the machine; and the same net of the cluster's idle background (heartbeats and
  monitors of the scheduler and workers, measured for 5 s with no work, times the sweep's wall time:
  it grows with the wall time, so with the machine's load, not with the tasks).

The cluster starts once, before the timing (its start-up time is reported apart); the model is built
once into a temporary cache that the workers load it from. Runs alternate (direct, sweep), ``--repeat``
times; medians are reported. Writes ``results/sweep.json``.

    python benchmarks/bench_sweep.py [--n 2000] [--chunk 100] [--repeat 3]
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
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen.examples import vl_chain  # noqa: E402
from rodgen.runtime.study import builtin_summary  # noqa: E402

from common import missing, write_json  # noqa: E402

T_END, DT = 1.0, 1e-3


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _worker_cpu() -> float:
    import resource as res
    r = res.getrusage(res.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="number of trajectories")
    ap.add_argument("--chunk", type=int, default=100, help="trajectories per task")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for dep in ("distributed", "xarray", "pandas"):
        if missing(dep):
            sys.exit(f"{missing(dep)}; pip install -e '.[sweep]'")
    from distributed import Client, LocalCluster

    from rodgen.runtime.study import Names
    n, chunk = args.n, args.chunk
    model = vl_chain(5)
    out: dict[str, Any] = {"trajectories": n, "chunk": chunk, "tasks": -(-n // chunk), "t_end": T_END, "dt": DT,
                           "integrator": "RK4", "model": "vl_chain(5)", "summary": "max_abs:q",
                           "repeat": args.repeat, "workers": 2,
                           "load_average_1min_at_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as build_dir:
        robot = rodgen.build(model, build_dir=build_dir)
        nq = robot.nq
        rng = np.random.default_rng(1)
        q0 = robot.initial_state()[:nq]
        names = robot.coordinates[:5]
        table = {c: q0[i] + 0.05 * rng.standard_normal(n) for i, c in enumerate(names)}
        summary = builtin_summary("max_abs:q", Names(tuple(robot.parameters), tuple(robot.coordinates),
                                                     tuple(robot.inputs)))
        y0s = np.tile(robot.initial_state(), (n, 1))
        for i, c in enumerate(names):
            y0s[:, i] = table[c]

        def direct() -> np.ndarray:
            parts = []
            for s in range(0, n, chunk):
                res = robot.simulate_batch(y0s[s:s + chunk], T_END, DT, threads=1)
                parts.append(next(iter(summary(res).values())))
            return np.concatenate(parts)

        t0 = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            out["cluster_start_s"] = time.perf_counter() - t0

            def study() -> Any:
                return rodgen.sweep(robot, table=table, t_end=T_END, dt=DT, summary="max_abs:q", chunk=chunk,
                                    scheduler=client, progress=False)

            c0, wc0, w0 = _cpu(), sum(client.run(_worker_cpu).values()), time.perf_counter()
            time.sleep(5.0)
            idle = (_cpu() - c0 + sum(client.run(_worker_cpu).values()) - wc0) / (time.perf_counter() - w0)
            out["idle_cluster_cpu_s_per_s"] = idle
            ref = direct()                       # warm-up of both, and the check that they agree
            df = study()
            cols = [f"max_abs_q[{c}]" for c in robot.coordinates]
            assert np.array_equal(df[cols].to_numpy(), ref), "sweep and direct batches differ"
            runs: dict[str, dict[str, list[float]]] = {"direct": {"wall_s": [], "cpu_s": []},
                                                       "sweep": {"wall_s": [], "cpu_s": [], "cpu_net_of_idle_s": []}}
            for _ in range(args.repeat):
                c0, w0 = _cpu(), time.perf_counter()
                direct()
                runs["direct"]["wall_s"].append(time.perf_counter() - w0)
                runs["direct"]["cpu_s"].append(_cpu() - c0)
                wc0 = sum(client.run(_worker_cpu).values())
                c0, w0 = _cpu(), time.perf_counter()
                study()
                wall = time.perf_counter() - w0
                cpu_here = _cpu() - c0
                wc1 = sum(client.run(_worker_cpu).values())
                runs["sweep"]["wall_s"].append(wall)
                runs["sweep"]["cpu_s"].append(cpu_here + (wc1 - wc0))
                runs["sweep"]["cpu_net_of_idle_s"].append(cpu_here + (wc1 - wc0) - idle * wall)
                print(f"direct {runs['direct']['wall_s'][-1]:.3f} s, sweep {wall:.3f} s "
                      f"(cpu {runs['direct']['cpu_s'][-1]:.3f} vs {runs['sweep']['cpu_s'][-1]:.3f} s)", flush=True)
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in runs.items()}
    out["runs"] = {k: {**{m: v for m, v in d.items()}, **{f"{m}_median": med[k][m] for m in d}}
                   for k, d in runs.items()}
    td, ts = med["direct"]["wall_s"], med["sweep"]["wall_s"]
    out["work_per_task_s"] = td / out["tasks"]
    out["work_per_task_cpu_s"] = med["direct"]["cpu_s"] / out["tasks"]
    out["speedup_sweep_over_direct"] = td / ts
    out["overhead_wall"] = 2 * ts / td - 1
    out["overhead_cpu"] = med["sweep"]["cpu_s"] / med["direct"]["cpu_s"] - 1
    out["overhead_cpu_net_of_idle"] = med["sweep"]["cpu_net_of_idle_s"] / med["direct"]["cpu_s"] - 1
    out["overhead_cpu_net_of_idle_per_task_s"] = (med["sweep"]["cpu_net_of_idle_s"]
                                                  - med["direct"]["cpu_s"]) / out["tasks"]
    out["overhead_wall_per_task_s"] = (2 * ts - td) / out["tasks"]
    out["target_overhead"] = 0.10
    out["load_average_1min_at_end"] = os.getloadavg()[0]
    for k in ("cluster_start_s", "work_per_task_s", "work_per_task_cpu_s", "speedup_sweep_over_direct",
              "overhead_wall", "overhead_cpu",
              "idle_cluster_cpu_s_per_s", "overhead_cpu_net_of_idle", "overhead_cpu_net_of_idle_per_task_s",
              "load_average_1min_at_start", "load_average_1min_at_end"):
        print(f"{k}: {out[k]:.3g}")
    write_json("sweep", out)


if __name__ == "__main__":
    main()
