"""The snake robot: rodgen's compiled simulation with force elements against MuJoCo's, same chain, same drag.

    python benchmarks/bench_snake.py [--repeat 5] [--links 8]

**10 s of the eight-link snake at dt = 1 ms, RK4** (10 000 steps, four evaluations
each), driven by a PD law toward the serpenoid joint angles (alpha = 0.6 rad,
0.5 Hz, kp = 20, kd = 1), anisotropic viscous friction at every link's centre
(c_t = 0.5 N s/m along the link, c_n = 10 N s/m across it).

- rodgen: ``sys.simulate(y0, 10, 1e-3, controller=PD(Reference(...)))`` of
  ``rodgen.examples.snake(8)``: the RK4 loop, the PD law (the reference sampled
  every 1 ms and interpolated in C) and the dynamics with the friction elements
  (articulated-body recursion with their Jᵀ F) all in C.
- MuJoCo: the same mechanism rebuilt from rodgen's expanded tree (slide x, slide
  y, hinges; the same masses and inertias; no geoms, no contact), ``integrator=
  "RK4"``, the same time step; the friction is MuJoCo's passive-force callback
  ``mjcb_passive`` written in C (each link's centre velocity from
  ``mj_objectVelocity``, the force applied by ``mj_applyFT`` at the centre) and
  the PD law its control callback ``mjcb_control`` in C (the serpenoid in closed
  form), compiled against the ``libmujoco`` of the ``mujoco`` wheel; a C ``main()``
  runs ``mj_step`` 10 000 times: no Python in the loop. MuJoCo's built-in fluid
  model does not give a viscous law along and across a link, so it is not used.

The two are timed alternately, one run of each per round (the machine is shared:
load drifts), and the ratio is the median over rounds of MuJoCo's time over
rodgen's. The final states of the two runs are compared (they agree when the two
describe the same mechanism with the same forces). Writes benchmarks/results/snake.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402
from rodgen.examples import snake  # noqa: E402

from common import NumericTree, missing, mjcf, write_json  # noqa: E402

T_END, DT = 10.0, 1e-3
ALPHA, FREQ, KP, KD = 0.6, 0.5, 20.0, 1.0

MJ_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <mujoco/mujoco.h>

#define NLINK %(nlink)d
static int link_body[NLINK];
static int joint_q[NLINK], joint_v[NLINK];
static const double CT = %(ct)r, CN = %(cn)r;
static const double ALPHA = %(alpha)r, OMEGA = %(omega)r, DELTA = %(delta)r, KP = %(kp)r, KD = %(kd)r;

/* anisotropic viscous drag at each link's centre (its body's centre of mass), as a passive force */
static void passive(const mjModel *m, mjData *d)
{
    for (int i = 0; i < NLINK; ++i) {
        int b = link_body[i];
        mjtNum v[6], f[3] = {0, 0, 0}, zero[3] = {0, 0, 0};
        mj_objectVelocity(m, d, mjOBJ_BODY, b, v, 0);          /* [rot, lin] at xipos, world axes */
        const mjtNum *R = d->xmat + 9 * b;
        double ax = R[0], ay = R[3];                            /* the link axis: the body's x axis */
        double va = ax * v[3] + ay * v[4], vc = -ay * v[3] + ax * v[4];
        f[0] = -CT * va * ax + CN * vc * ay;
        f[1] = -CT * va * ay - CN * vc * ax;
        mj_applyFT(m, d, f, zero, d->xipos + 3 * b, b, d->qfrc_passive);
    }
}

/* PD toward the serpenoid joint angles (joints 2..n of the snake) */
static void control(const mjModel *m, mjData *d)
{
    (void)m;
    for (int i = 1; i < NLINK; ++i) {
        double ph = OMEGA * d->time + (i - 1) * DELTA;
        double ref = ALPHA * sin(ph), dref = ALPHA * OMEGA * cos(ph);
        d->ctrl[i + 2] = KP * (ref - d->qpos[joint_q[i]]) + KD * (dref - d->qvel[joint_v[i]]);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    char err[1000] = "";
    if (argc < 4) return 2;
    mjModel *m = mj_loadXML(argv[1], NULL, err, sizeof err);
    if (!m) { fprintf(stderr, "%%s\n", err); return 1; }
    int steps = atoi(argv[2]), repeat = atoi(argv[3]);
    for (int i = 0; i < NLINK; ++i) {
        char name[16];
        snprintf(name, sizeof name, "b%%d", i + 2);
        link_body[i] = mj_name2id(m, mjOBJ_BODY, name);
        snprintf(name, sizeof name, "j%%d", i + 2);
        int j = mj_name2id(m, mjOBJ_JOINT, name);
        joint_q[i] = m->jnt_qposadr[j];
        joint_v[i] = m->jnt_dofadr[j];
    }
    mjcb_passive = passive;
    mjcb_control = control;
    mjData *d = mj_makeData(m);
    double best[64];
    for (int r = 0; r < repeat && r < 64; ++r) {
        mj_resetData(m, d);
        double t0 = now();
        for (int k = 0; k < steps; ++k) mj_step(m, d);
        best[r] = now() - t0;
    }
    for (int r = 0; r < repeat && r < 64; ++r) printf("%%.9g ", best[r]);
    printf("\n");
    for (int i = 0; i < m->nq; ++i) printf("%%.17g ", d->qpos[i]);
    printf("\n");
    for (int i = 0; i < m->nv; ++i) printf("%%.17g ", d->qvel[i]);
    printf("\n");
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
"""


def serpenoid_reference(sys_: Any, links: int) -> rodgen.Reference:
    t = np.arange(0.0, T_END + DT / 2, DT)
    q = np.zeros((len(t), sys_.nq))
    qd = np.zeros_like(q)
    omega, delta = 2 * np.pi * FREQ, 2 * np.pi / (links - 1)
    for i in range(2, links + 1):
        j = sys_.coordinates.index(f"th{i}")
        q[:, j] = ALPHA * np.sin(omega * t + (i - 2) * delta)
        qd[:, j] = ALPHA * omega * np.cos(omega * t + (i - 2) * delta)
    return rodgen.Reference(t, q, qd)


class RodgenSnake:
    """The compiled snake with its serpenoid PD law; ``run()`` times one 10-second simulation."""

    def __init__(self, links: int, build_dir: str) -> None:
        t0 = time.perf_counter()
        self.sys = rodgen.build(snake(links), build_dir=build_dir)
        self.build_seconds = time.perf_counter() - t0
        self.law = rodgen.PD(serpenoid_reference(self.sys, links), kp=KP, kd=KD)
        self.y0 = self.sys.initial_state()
        self.result: Any = None

    def run(self) -> float:
        t0 = time.perf_counter()
        res = self.sys.simulate(self.y0, T_END, DT, controller=self.law, store_every=10000)
        seconds = time.perf_counter() - t0
        assert res.ok, res.message
        self.result = res
        return seconds


class MujocoSnake:
    """The same snake in MuJoCo, its drag and PD law as C callbacks, stepped by a C main(); ``run()`` times
    one 10-second simulation inside that program."""

    def __init__(self, links: int, params: dict[str, float], tmp: str) -> None:
        import mujoco
        self.version = mujoco.__version__
        self.tree = NumericTree(snake(links))
        inc = Path(mujoco.__file__).parent / "include"
        lib = next(Path(mujoco.__file__).parent.glob("libmujoco.so*"))
        self.xml = Path(tmp) / "snake.xml"
        self.xml.write_text(mjcf(self.tree, f"snake{links}", DT))
        src = Path(tmp) / "main.c"
        src.write_text(MJ_MAIN % {"nlink": links, "ct": params["c_t"], "cn": params["c_n"], "alpha": ALPHA,
                                  "omega": 2 * np.pi * FREQ, "delta": 2 * np.pi / (links - 1), "kp": KP,
                                  "kd": KD})
        self.exe = Path(tmp) / "snake_mj"
        subprocess.run(["gcc", "-O2", "-std=gnu99", "-include", "stdlib.h", str(src), "-I", str(inc),
                        str(lib), f"-Wl,-rpath,{lib.parent}", "-lm", "-o", str(self.exe)], check=True)
        self.final: tuple[list[float], list[float]] = ([], [])

    def run(self) -> float:
        out = subprocess.run([str(self.exe), str(self.xml), str(int(round(T_END / DT))), "1"], check=True,
                             capture_output=True, text=True).stdout.split("\n")
        qpos = np.array([float(x) for x in out[1].split()])
        qvel = np.array([float(x) for x in out[2].split()])
        Tinv = np.linalg.inv(self.tree.T)
        self.final = ((Tinv @ qpos).tolist(), (Tinv @ qvel).tolist())
        return float(out[0].split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--links", type=int, default=8)
    ap.add_argument("--build-dir", default=str(HERE.parent / "build"))
    args = ap.parse_args()
    rs = RodgenSnake(args.links, args.build_dir)
    why = missing("mujoco")
    with tempfile.TemporaryDirectory() as tmp:
        ms = None if why else MujocoSnake(args.links, rs.sys.parameters, tmp)
        rodgen_runs, mujoco_runs = [], []
        for _ in range(args.repeat):            # alternately, one run of each per round
            rodgen_runs.append(rs.run())
            if ms is not None:
                mujoco_runs.append(ms.run())
    res = rs.result
    r = {"seconds": statistics.median(rodgen_runs), "runs": rodgen_runs, "build_seconds": rs.build_seconds,
         "forward": rs.sys.forward, "final_q": res.q[-1].tolist(), "final_qd": res.qd[-1].tolist(),
         "coordinates": rs.sys.coordinates}
    payload: dict[str, Any] = {"links": args.links, "t_end": T_END, "dt": DT, "method": "rk4",
                               "gait": {"alpha": ALPHA, "freq": FREQ, "kp": KP, "kd": KD},
                               "friction": {"c_t": rs.sys.parameters["c_t"], "c_n": rs.sys.parameters["c_n"]},
                               "rodgen": r}
    if why:
        print(why)
    else:
        assert ms is not None
        mj = {"seconds": statistics.median(mujoco_runs), "runs": mujoco_runs, "version": ms.version,
              "final_q": ms.final[0], "final_qd": ms.final[1]}
        payload["mujoco"] = mj
        payload["ratio"] = statistics.median(m / g for m, g in zip(mujoco_runs, rodgen_runs))
        payload["ratio_of_best"] = min(mujoco_runs) / min(rodgen_runs)
        payload["final_state_difference"] = float(max(
            np.abs(np.subtract(mj["final_q"], r["final_q"])).max(),
            np.abs(np.subtract(mj["final_qd"], r["final_qd"])).max()))
    path = write_json("snake", payload)
    print(f"{args.links}-link snake, 10 s at 1 kHz RK4 with anisotropic friction: rodgen {r['seconds'] * 1e3:.1f} ms"
          + (f", MuJoCo (C callbacks) {payload['mujoco']['seconds'] * 1e3:.1f} ms: {payload['ratio']:.1f}x faster; "
             f"final states differ by {payload['final_state_difference']:.2g}" if "mujoco" in payload else ""))
    print(json.dumps({k: v for k, v in payload.items() if k in ("ratio", "ratio_of_best",
                                                                 "final_state_difference")}))
    print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
