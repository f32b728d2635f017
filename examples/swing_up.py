"""The double pendulum's swing-up with the least torque, found by trajectory optimisation.

Both joints of the double pendulum (examples/double_pendulum.yaml) carry a torque of at most 20 N m. From
hanging at rest (th_upper = -pi/2, th_lower = 0) it is to stand upright at rest (th_upper = pi/2) after
2 s with the least integral of tau_upper^2 + tau_lower^2: direct collocation (Hermite-Simpson) over the
compiled model's dynamics, solved by IPOPT with the exact Hessian (rodgen.optimize, docs/optimize.md).
The energy balance checks the solution: the work of the torques is the gain in potential energy. IPOPT
finds a local optimum: from the same start, the limited-memory Hessian reaches another one (a lower cost,
in more iterations).

    python examples/swing_up.py [OUT_DIR] [--nodes 41] [--hessian exact|limited-memory]

Writes OUT_DIR/swing_up.png (the torques and angles, and stick figures of the motion).
"""
from __future__ import annotations

import argparse
import math
import os
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen import optimize

HERE = os.path.dirname(os.path.abspath(__file__))


def run(out_dir: str, *, nodes: int = 41, hessian: str = "exact", duration: float = 2.0,
        torque: float = 20.0) -> tuple[Any, dict[str, float]]:
    model = rodgen.build(rodgen.load(os.path.join(HERE, "double_pendulum.yaml")))
    rest = {"th_upper_dot": 0.0, "th_lower_dot": 0.0}
    problem = optimize.Problem(
        model, nodes=nodes, duration=duration, method="hermite-simpson", hessian=hessian,
        objective="tau_upper**2 + tau_lower**2",
        bounds={"tau_upper": (-torque, torque), "tau_lower": (-torque, torque)},
        initial={"th_upper": -math.pi / 2, "th_lower": 0.0, **rest},
        final={"th_upper": math.pi / 2, "th_lower": 0.0, **rest})
    result = problem.solve(options={"tol": 1e-9})
    # work of the torques (Simpson's rule on the points) against the change of the energy
    power = np.sum(result.u * result.qd, axis=1)
    work = float(np.sum(power[0:-1:2] + 4 * power[1::2] + power[2::2]) * (result.t[2] - result.t[0]) / 6)
    kinetic, potential = model.energy(result.q, result.qd)
    info = {"objective": result.objective, "iterations": float(result.iterations), "work": work,
            "energy_gain": float(kinetic[-1] + potential[-1] - kinetic[0] - potential[0]),
            "solve_seconds": result.solve_seconds, "build_seconds": result.build_seconds}
    print(f"{result.message}: J = {result.objective:.6g} in {result.iterations} iterations, "
          f"{result.solve_seconds * 1e3:.0f} ms (build {result.build_seconds:.2f} s); work of the torques "
          f"{work:.6f} J, energy gain {info['energy_gain']:.6f} J")
    _figure(model, result, os.path.join(out_dir, "swing_up.png"))
    return result, info


def _figure(model: Any, result: Any, path: str) -> None:
    from rodgen.runtime.plot import new_figure
    fig = new_figure(10, 4)
    ax1 = fig.add_subplot(1, 2, 1)
    for k, name in enumerate(result.inputs):
        ax1.plot(result.t, result.u[:, k], label=name)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("torque [N m]")
    ax1.legend()
    ax2 = fig.add_subplot(1, 2, 2)
    pts = model.points(result.q)
    names = list(pts)     # the rods' ends: the elbow and the tip
    for j in range(0, len(result.t), max(1, len(result.t) // 12)):
        xy = np.array([[0.0, 0.0]] + [pts[n][j] for n in names if n.endswith(".end")])
        ax2.plot(xy[:, 0], xy[:, 1], "-o", color=(j / len(result.t), 0.3, 1 - j / len(result.t)), ms=3)
    ax2.set_aspect("equal")
    ax2.set_xlabel("x [m]")
    ax2.set_ylabel("y [m]")
    ax2.set_title("blue: start, red: end")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=90)


def main(argv: Optional[Sequence[str]] = None) -> tuple[Any, dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--nodes", type=int, default=41)
    ap.add_argument("--hessian", choices=optimize.problem.HESSIANS, default="exact")
    args = ap.parse_args(argv)
    return run(args.out_dir, nodes=args.nodes, hessian=args.hessian)


if __name__ == "__main__":
    main()
