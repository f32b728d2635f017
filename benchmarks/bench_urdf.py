"""The Franka Emika Panda read from its URDF file: forward dynamics against Pinocchio, the C call, the build.

The robot file is example-robot-data's ``panda.urdf`` (found through the package's file list). rodgen reads
it with ``rodgen.from_urdf`` (the fingers held 2 cm open: 7 joints); Pinocchio reads the same file with
its own parser (``buildModelFromUrdf``, the fingers locked with ``buildReducedModel``), so the two models
share nothing but the file. The accelerations agree to about 1e-14 (reported). Measured in one run, each a
median of repeated runs:

* one state from Python: ``CompiledModel.forward_dynamics(q, qd, u)`` against ``pinocchio.aba``
  (target: rodgen at most half of Pinocchio's time);
* the C call: ``panda_forward_dynamics`` called from a C ``main()`` (``gcc -O2``, no Python), and per state
  in the compiled batch kernel (200,000 states) (target: at most 2 us);
* the build (derive, generate, compile into a fresh folder): wall and CPU time, the compiler's processes
  included (target: at most 5 s).

Writes ``results/urdf.json``.

    python benchmarks/bench_urdf.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402

from common import CC, machine, median_time, write_json  # noqa: E402

LOCK = {"panda_finger_joint1": 0.02}
TARGETS = {"ratio_rodgen_over_pinocchio": 0.5, "c_call_us": 2.0, "build_s": 5.0}

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
    const double q0[{N}] = {Q}, qd[{N}] = {QD}, u[{N}] = {U};
    double q[{N}], qdd[{N}], acc = 0.0, t0, t1;
    const double *p = NULL;
    long i, reps = argc > 1 ? atol(argv[1]) : 200000;
    int j, st = 0;
    for (j = 0; j < {N}; ++j) q[j] = q0[j];
    t0 = now();
    for (i = 0; i < reps; ++i) {{
        q[0] = q0[0] + 1e-9 * (double)(i & 15);      /* a new state each call: nothing to hoist */
        st |= {name}_forward_dynamics(0.0, q, qd, u, p, qdd);
        acc += qdd[{N} - 1];
    }}
    t1 = now();
    printf("%.9e %d %.17g\n", (t1 - t0) / (double)reps, st, acc);
    return 0;
}}
"""


def panda_urdf() -> str:
    dist = importlib.metadata.distribution("example-robot-data")
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("robots/panda_description/urdf/panda.urdf"):
            return str(dist.locate_file(f))
    raise SystemExit("panda.urdf is not among the files of example-robot-data")


def _cpu() -> float:
    """User + system CPU seconds of this process and its finished children (the compiler)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def c_call_seconds(model: Any, q: np.ndarray, qd: np.ndarray, u: np.ndarray, repeat: int) -> float:
    """Seconds per call of the generated forward dynamics from a C main() (gcc -O2)."""
    files = rodgen.generate(model)
    folder = Path(tempfile.mkdtemp(prefix="rodgen_urdf_bench_"))
    try:
        for fname, text in files.files.items():
            (folder / fname).write_text(text)
        name = files.spec.prefix

        def arr(v: np.ndarray) -> str:
            return "{" + ", ".join(repr(float(x)) for x in v) + "}"
        (folder / "harness.c").write_text(HARNESS.format(name=name, N=len(q), Q=arr(q), QD=arr(qd), U=arr(u)))
        sources = ["harness.c", f"{name}.c"] + [f for f in files.files if f.endswith(".c") and f != f"{name}.c"]
        cmd = [CC, "-O2", "-std=c99", "-o", "harness", *sources, "-lm"]
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the harness does not compile: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
        runs = []
        for _ in range(repeat):
            out = subprocess.run([str(folder / "harness"), "400000"], capture_output=True, text=True, check=True)
            seconds, status = out.stdout.split()[:2]
            assert status == "0", "the forward dynamics reported a status"
            runs.append(float(seconds))
        return statistics.median(runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    import pinocchio as pin
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    path = panda_urdf()
    model = rodgen.from_urdf(path, lock=LOCK)
    builds, cpus = [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            c0 = _cpu()
            t0 = time.perf_counter()
            robot = rodgen.build(model, build_dir=tmp)
            builds.append(time.perf_counter() - t0)
            cpus.append(_cpu() - c0)
    full = pin.buildModelFromUrdf(path)
    fingers = [full.getJointId("panda_finger_joint1"), full.getJointId("panda_finger_joint2")]
    q_lock = pin.neutral(full)
    for j in fingers:
        q_lock[full.idx_qs[j]] = LOCK["panda_finger_joint1"]
    pm = pin.buildReducedModel(full, fingers, q_lock)
    data = pm.createData()
    assert [pm.names[i] for i in range(1, pm.njoints)] == list(robot.coordinates)
    rng = np.random.default_rng(0)
    q, qd, u = rng.uniform(-1, 1, robot.nq), rng.normal(size=robot.nv), rng.normal(size=robot.nu)
    agree = float(np.abs(robot.forward_dynamics(q, qd, u) - pin.aba(pm, data, q, qd, u)).max())
    # interleave the two one-state timings so that the machine's load hits both alike
    t_rod, t_pin = [], []
    for _ in range(args.repeat):
        t_rod.append(median_time(lambda: robot.forward_dynamics(q, qd, u), number=20000, repeat=1))
        t_pin.append(median_time(lambda: pin.aba(pm, data, q, qd, u), number=20000, repeat=1))
    one_rod, one_pin = statistics.median(t_rod), statistics.median(t_pin)
    n = 200_000
    Q = np.ascontiguousarray(np.tile(q, (n, 1)) + rng.normal(scale=0.1, size=(n, robot.nq)))
    QD = np.ascontiguousarray(np.tile(qd, (n, 1)))
    U = np.ascontiguousarray(np.tile(u, (n, 1)))
    out = np.empty((n, robot.nv))
    t_batch = median_time(lambda: robot.forward_dynamics(Q, QD, U, out=out), number=1, repeat=args.repeat) / n
    t_c = c_call_seconds(model, q, qd, u, args.repeat)
    row = {"model": "panda (URDF, fingers held)", "urdf": Path(path).name, "nq": robot.nq, "forward": robot.forward,
           "build_s": statistics.median(builds), "build_cpu_s": statistics.median(cpus), "build_runs_s": builds,
           "python_one_state_us": one_rod * 1e6, "pinocchio_aba_us": one_pin * 1e6,
           "ratio_rodgen_over_pinocchio": one_rod / one_pin, "c_call_us": t_c * 1e6,
           "c_batch_per_state_us": t_batch * 1e6, "max_abs_difference_qdd": agree}
    row["targets"] = TARGETS
    row["targets_met"] = {k: row[k] <= v for k, v in TARGETS.items()}
    print(f"{row['model']}: nq={row['nq']} ({row['forward']}) | build {row['build_s']:.2f} s "
          f"(CPU {row['build_cpu_s']:.2f} s) | one state: rodgen {row['python_one_state_us']:.2f} us, "
          f"pinocchio.aba {row['pinocchio_aba_us']:.2f} us, ratio {row['ratio_rodgen_over_pinocchio']:.2f} | "
          f"C call {row['c_call_us']:.3f} us, batch {row['c_batch_per_state_us']:.3f} us/state | "
          f"|qdd - pin| {agree:.1e} | targets met {row['targets_met']}")
    write_json("urdf", {"machine": machine(), "rows": [row],
                        "note": "medians; one-state timings interleaved rodgen/Pinocchio in the same run"})


if __name__ == "__main__":
    main()
