"""A Franka Emika Panda read from its URDF holds a posture under gravity.

The robot file comes from the ``example-robot-data`` package (``pip install example-robot-data``; or give
any URDF with ``--urdf``). rodgen reads it (``rodgen.from_urdf``: links, inertials, joints, limits; the
fingers held 3 cm open, ``lock=``), derives and compiles the 7-joint arm, and simulates it in C with RK4:
the arm starts 0.3 rad away from a ready posture in every joint, and a PD law (``rodgen.PD``) with the
gravity torques of that posture as feedforward pulls it back:

    u = G(q_ready) + Kp (q_ready - q) - Kd qd.

    python examples/panda_urdf.py [OUT_DIR] [--t-end 3] [--urdf FILE]

Writes OUT_DIR/panda_urdf.png (joint angles, rates, torques, energy), OUT_DIR/panda_urdf_3d.png (the start
and the final posture in 3D) and OUT_DIR/panda_urdf.gif (the motion in 3D); prints the final error and the
build time.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.plot3d import draw_configuration, skeleton3d

HERE = os.path.dirname(os.path.abspath(__file__))
#: the ready posture of the Panda (rad)
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
KP = np.array([600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])
KD = np.array([50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 10.0])


def panda_urdf() -> str:
    """The Panda's URDF in the installed example-robot-data package (found through its file list)."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("example-robot-data is not installed: pip install example-robot-data, or give --urdf")
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("robots/panda_description/urdf/panda.urdf"):
            return str(dist.locate_file(f))
    raise SystemExit("panda.urdf is not among the files of example-robot-data")


def main(argv: Optional[Sequence[str]] = None) -> tuple[Any, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=3.0)
    ap.add_argument("--dt", type=float, default=0.001)
    ap.add_argument("--urdf", default=None, help="the Panda URDF (default: example-robot-data's)")
    ap.add_argument("--frames", type=int, default=60, help="frames of the GIF")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    model = rodgen.from_urdf(args.urdf or panda_urdf(), lock={"panda_finger_joint1": 0.03})
    t0 = time.perf_counter()
    robot = rodgen.build(model)
    build_s = time.perf_counter() - t0

    gravity = robot.inverse_dynamics(READY, np.zeros(7), np.zeros(7))      # G(q_ready): the feedforward
    hold = rodgen.PD(rodgen.Reference([0.0, args.t_end], [READY, READY]), kp=KP, kd=KD)
    q0 = READY + 0.3
    res = robot.simulate(np.r_[q0, np.zeros(7)], args.t_end, args.dt, u=gravity, controller=hold,
                         store_every=max(1, int(round(0.01 / args.dt))))
    if not res.ok:
        raise SystemExit(f"the simulation stopped: {res.message}")

    png = os.path.join(args.out, "panda_urdf.png")
    rodgen.plot(res, png, model=model, title="Panda (URDF): PD hold of the ready posture under gravity")
    pts0 = robot.points(q0)
    pts1 = robot.points(res.q[-1])
    lines, masses = skeleton3d(list(pts0), model)
    both = {**{f"{k}@0": v for k, v in pts0.items()}, **pts1}
    draw_configuration(both, [[f"{n}@0" for n in line] for line in lines] + lines,
                       os.path.join(args.out, "panda_urdf_3d.png"), title="start (first sticks) and final posture")
    gif = os.path.join(args.out, "panda_urdf.gif")
    frames = rodgen.animate(robot, res, gif, fps=max(1, int(args.frames / args.t_end)), model=model)
    info = {"build_s": build_s, "final_error": float(np.abs(res.q[-1] - READY).max()),
            "final_rate": float(np.abs(res.qd[-1]).max()), "frames": frames, "gravity": gravity}
    print(f"built in {build_s:.2f} s; after {args.t_end:g} s the largest joint error is "
          f"{info['final_error']:.2e} rad, the largest rate {info['final_rate']:.2e} rad/s; "
          f"wrote {png} and {gif} ({frames} frames)")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
