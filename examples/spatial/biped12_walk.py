"""The 12-joint biped on flat feet: a planned quasi-static gait tracked by a joint law in C, in the hybrid simulator.

    python examples/spatial/biped12_walk.py [OUT_DIR] [--steps N] [--t-end T] [--no-animation]

The model is examples/spatial/biped12.yaml (a free pelvis, 6 joints per leg, flat-foot contacts sole_l and
sole_r of 6 rows). biped12_gait.py plans the gait (a CoM shift over the stance foot, a swing, a landing;
inverse kinematics on the compiled model, feedforward torques from the constrained inverse dynamics) and
biped12_walk_controller.c tracks it in C (``rodgen.CController``). The script prints the plan per step (its
foothold, step length, lift and landing times, the pelvis height), runs rodgen's hybrid simulation with both
soles held at the start up to ``--t-end`` (default: the end of the plan, 10 steps in 26.4 s), prints its
lift-offs and touchdowns and where each foot stands against its planned foothold, and writes a GIF of the
walk (OUT_DIR/biped12_walk.gif, twice real time).

The run checks itself in tests/test_biped12_gait.py: the stance foot carries the weight in single support,
the feet advance by the planned stride to 5 mm and lie flat, no sole sinks below the ground by more than
1e-6 m, the pelvis keeps its planned height to 1 cm. What it does not do yet: in double support the joint law
of both legs sets the load split by the joints' errors, so a foot leaves the ground for up to 0.4 s now and
then and lands again (docs/walking.md, "A 3D biped").
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import biped12_gait as gait_mod  # noqa: E402


def run(steps: int = 10, t_end: Optional[float] = None, build_dir: Optional[str] = None,
        dt: float = 1e-3, gait: Any = None) -> tuple[Any, Any, Any]:
    """Build, plan ``steps`` steps, and simulate to ``t_end`` (default: the end of the plan): (compiled model,
    gait, SimulationResult). ``gait``: a plan made before by ``biped12_gait.plan`` on this model, simulated
    instead of planning again (``steps`` is then its own)."""
    robot = rodgen.build(rodgen.load(os.path.join(HERE, "biped12.yaml")), build_dir=build_dir)
    if gait is None:
        gait = gait_mod.plan(robot, steps)
    ctrl = gait_mod.controller(gait, robot, build_dir)
    if t_end is None:
        t_end = float(gait.t[-1])
    y0 = np.r_[gait.q[0], gait.v[0]]
    # the soles' tangential force can exceed mu f_n for an instant as a foot unloads to lift-off: logged as
    # "slip" events, the foot kept sticking
    res = robot.simulate(y0, t_end, dt, controller=ctrl, contacts=["sole_l", "sole_r"], on_slip="continue",
                         max_events=2000)
    return robot, gait, res


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, os.pardir, "out"))
    ap.add_argument("--steps", type=int, default=10, help="steps planned")
    ap.add_argument("--t-end", type=float, default=None, help="end of the simulation [s]")
    ap.add_argument("--no-animation", action="store_true")
    a = ap.parse_args(argv)
    robot, gait, res = run(a.steps, a.t_end)
    dt = gait.t[1] - gait.t[0]
    print(f"plan: {len(gait.steps)} steps in {gait.t[-1]:.1f} s")
    for k, s in enumerate(gait.steps, 1):
        i = int(round(s["land"] / dt))
        print(f"  step {k:2d}: {s['swing']} foot lifts at {s['lift']:5.2f} s, lands at {s['land']:5.2f} s on "
              f"x = {s['foothold'][0]:.3f} m (step length {s['length']:.3f} m), pelvis height "
              f"{gait.q[i, 2]:.3f} m")
    print(f"hybrid simulation to t = {res.t[-1]:.3f} s: {res.message}")
    for e in res.events:
        if e["kind"] in ("liftoff", "touchdown", "tip"):
            print(f"  t = {e['t']:.4f} s: {e['kind']} of {e['block']}")
    fr = robot.frames(res.q)
    for k, s in enumerate(gait.steps, 1):
        i = int(np.searchsorted(res.t, s["land"] + 1.5))
        if i < len(res.t):
            dx, dy = (fr[f"foot_{s['swing']}"][0][i] - s["foothold"])[:2]
            print(f"  step {k:2d}: the {s['swing']} foot stands {dx * 100:+.1f} cm, {dy * 100:+.1f} cm from its "
                  f"foothold")
    fz = res.lam[:, [2, 8]].sum(axis=1)
    plan_z = gait.q[min(len(gait.t) - 1, int(round(res.t[-1] / dt))), 2]
    print(f"pelvis height at the end {res.q[-1, 2]:.4f} m (plan {plan_z:.4f} m); "
          f"mean vertical ground force {fz.mean():.1f} N against a weight of "
          f"{robot.mass_matrix(gait.q[0])[0, 0] * 9.81:.1f} N")
    if a.out_dir and not a.no_animation:
        os.makedirs(a.out_dir, exist_ok=True)
        path = os.path.join(a.out_dir, "biped12_walk.gif")
        rodgen.animate(robot, res, path, fps=10, speed=2.0, dpi=60)
        print(f"wrote {path}")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
