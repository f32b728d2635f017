"""Walking: rodgen's compiled hybrid simulation against MuJoCo's, and the cost of the constraints.

    python benchmarks/bench_walk.py [--repeat 5]

1. **Compass gait, 10 s at dt = 1 ms, RK4.** rodgen: `sys.simulate(..., contacts=[...])`
   of examples/compass_gait.yaml from its period-one gait (about 14 steps:
   constrained dynamics of the stance phase, heel strikes located in the step and
   applied as plastic impacts). MuJoCo: the same mechanism rebuilt from rodgen's
   expanded tree (slide x, slide y, hinge, hinge; the same masses), two sphere
   feet of radius 1 mm on a plane of the same slope, `integrator="RK4"`, the
   same time step, MuJoCo's default soft contact, rolled out by
   `mujoco.rollout`. MuJoCo has no way to let the swing foot pass through the
   ground at mid-stance, so its walker trips within a step and then lies on
   the slope with its feet in contact; the comparison is the cost per
   simulated second of the same mechanism with its foot contacts, not of the
   same motion.
2. **Constrained forward dynamics** of examples/exo5_walk.yaml in double
   support (both feet held, 11 coordinates, 4 constraint rows) against the
   unconstrained forward dynamics of the same model, one state from Python and
   per state in a batch.

Writes benchmarks/results/walk.json.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402

from common import NumericTree, machine, missing, mjcf, write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"
T_END, DT = 10.0, 1e-3


def _median(fn: Any, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def compass_mjcf(tree: NumericTree, slope: float, leg: float) -> str:
    """The compass gait for MuJoCo: bodies and joints from rodgen's tree, a sphere foot at the far end of each
    leg (the revolute nodes), a plane of the same slope."""
    foot = f'<geom type="sphere" size="0.001" pos="{leg!r} 0 0" mass="0"/>'
    normal = (float(-np.sin(slope)), float(np.cos(slope)))
    return mjcf(tree, "compass_gait", DT, geoms={i: [foot] for i in range(tree.n) if tree.revolute[i]},
                ground=f'<geom type="plane" size="0 0 1" zaxis="{normal[0]!r} {normal[1]!r} 0"/>')


def compass(build_dir: str, repeat: int) -> dict[str, Any]:
    model = rodgen.load(EXAMPLES / "compass_gait.yaml")
    robot = rodgen.build(model, build_dir=build_dir)
    import compass_gait as cg  # examples/compass_gait.py: the walker's section state and options
    z = np.array([0.2187, -1.0918, -0.3772])   # Goswami's published period-one gait (4 digits)
    y0 = cg.state(robot, z)
    out: dict[str, Any] = {"t_end": T_END, "dt": DT, "model": "examples/compass_gait.yaml"}

    def run() -> Any:
        return robot.simulate(y0, T_END, DT, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=cg.ARM_GAP)

    res = run()
    out["rodgen_steps"] = sum(1 for e in res.events if e["kind"] == "touchdown")
    out["rodgen_status"] = res.message
    out["rodgen_s"] = _median(run, repeat)
    why = missing("mujoco")
    if why:
        out["mujoco"] = why
        return out
    import mujoco
    from mujoco import rollout
    tree = NumericTree(model)
    p = robot.parameters
    mj = mujoco.MjModel.from_xml_string(compass_mjcf(tree, -p["gamma"], p["a"] + p["b"]))
    md = mujoco.MjData(mj)
    s0 = np.concatenate([tree.T @ y0[:tree.n], tree.T @ y0[tree.n:]])
    init = np.concatenate([[0.0], s0[:tree.n], s0[tree.n:]])
    steps = int(round(T_END / DT))
    ctrl = np.zeros((1, steps, mj.nu))
    rollout.rollout(mj, md, init[None, :], ctrl[:, :10], nstep=10)
    out["mujoco_s"] = _median(lambda: rollout.rollout(mj, md, init[None, :], ctrl, nstep=steps), repeat)
    out["ratio_mujoco_over_rodgen"] = out["mujoco_s"] / out["rodgen_s"]
    return out


def constrained(build_dir: str, repeat: int) -> dict[str, Any]:
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=build_dir)
    y0 = np.asarray(robot.initial_state(), float)
    q, qd = y0[:robot.nq], np.zeros(robot.nq)
    u = np.zeros(len(robot.inputs))
    both = [b.name for b in robot.constraints]
    n = 20000

    def per_call(fn: Any) -> float:
        return _median(lambda: [fn() for _ in range(n)], repeat) / n

    out: dict[str, Any] = {"model": "examples/exo5_walk.yaml", "nq": robot.nq, "active": both}
    out["forward_dynamics_us"] = 1e6 * per_call(lambda: robot.forward_dynamics(q, qd, u))
    out["constrained_dynamics_us"] = 1e6 * per_call(lambda: robot.constrained_dynamics(q, qd, u, active=both))
    out["ratio_constrained_over_forward"] = out["constrained_dynamics_us"] / out["forward_dynamics_us"]
    # in C: 1 s of RK4 at 1 kHz standing in double support (both feet held, no inputs) against the same
    # model's unconstrained simulate() (free fall): the cost of a step with and without the constraints
    y = np.concatenate([q, qd])
    t_free = _median(lambda: robot.simulate(y, 1.0, 1e-3, store_every=100), repeat)
    res = robot.simulate(y, 1.0, 1e-3, contacts=both, on_slip="continue", store_every=100)
    out["double_support_events"] = len(res.events)
    t_held = _median(lambda: robot.simulate(y, 1.0, 1e-3, contacts=both, on_slip="continue", store_every=100),
                     repeat)
    out["c_step_free_us"], out["c_step_double_support_us"] = t_free * 1e3, t_held * 1e3
    out["ratio_c_double_support_over_free"] = t_held / t_free
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build-dir", default=str(HERE / "results" / ".build"))
    args = ap.parse_args()
    sys.path.insert(0, str(EXAMPLES))
    payload = {"machine": machine(), "compass_gait": compass(args.build_dir, args.repeat),
               "constrained": constrained(args.build_dir, args.repeat)}
    path = write_json("walk", payload)
    print(f"wrote {path}")
    for k, v in payload.items():
        if k != "machine":
            print(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
