"""Half a gait cycle of gait2d's human walking at 1.2 m/s with the least joint torques (opty's problem).

The model is examples/gait2d.yaml (gait2d's planar human, 9 coordinates, 6 joint torques, compliant
ground contact). The problem is the one of opty's human-gait example (examples-gallery/advanced/
plot_human_gait.py): 40 nodes of backward Euler (opty's default transcription) over a free duration
T = 39 h with 0.001 <= h <= 0.1 s; the objective is h times the sum of the squared joint torques at the
nodes; the hip moves on average at the given speed ((qax_end - qax_start)/T = v, qax_start = 0); the
motion is half a cycle: the end state is the start state with the legs swapped (right hip, knee, ankle of
the start = left of the end and vice versa, angles and rates) and the trunk's height, angle and velocities
the same; opty's bounds: hip height 0.5-1.5 m, trunk within 60 degrees of upright, hips within 40
degrees, knees flexed up to 60 degrees, ankles within 30 degrees, joint rates within 400 degrees/s,
torques within 100 N m, forward hip speed 0-10 m/s.

    python examples/gait2d_walk.py [OUT_DIR] [--speed 1.2] [--nodes 40]

Writes OUT_DIR/gait2d_walk.png (torques, joint angles and stick figures) and OUT_DIR/gait2d_walk.gif.
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

#: gait2d's coordinates: hip position, trunk angle, right hip, knee, ankle, left hip, knee, ankle.
COORDINATES = ["qax", "qay", "qa", "qb", "qc", "qd", "qe", "qf", "qg"]
TORQUES = ["Tb", "Tc", "Td", "Te", "Tf", "Tg"]
#: the legs' coordinates that swap over half a cycle (right, left)
SWAP = [("qb", "qe"), ("qc", "qf"), ("qd", "qg")]


def model() -> Any:
    """gait2d's human, compiled with its RHS Jacobian (which the collocation needs: one build, where the
    default build compiles the model and then, on the Jacobian's first use, the model with it)."""
    from rodgen.codegen import CodegenOptions
    return rodgen.build(rodgen.load(os.path.join(HERE, "gait2d.yaml")), codegen=CodegenOptions(jacobian=True))


def bounds() -> dict[str, tuple[float, float]]:
    """opty's bounds of the human-gait example (angles in radians)."""
    deg = math.radians
    b: dict[str, tuple[float, float]] = {
        "qax": (0.0, 10.0), "qay": (0.5, 1.5), "qa": (-deg(60), deg(60)),
        "qax_dot": (0.0, 10.0), "qay_dot": (-10.0, 10.0)}
    for hip, knee, ankle in (("qb", "qc", "qd"), ("qe", "qf", "qg")):
        b[hip] = (-deg(40), deg(40))
        b[knee] = (-deg(60), 0.0)
        b[ankle] = (-deg(30), deg(30))
    for name in COORDINATES[2:]:
        b[name + "_dot"] = (-deg(400), deg(400))
    for name in TORQUES:
        b[name] = (-100.0, 100.0)
    return b


def problem(cm: Any, *, speed: float = 1.2, nodes: int = 40) -> optimize.Problem:
    """opty's human-gait problem on the compiled model ``cm``."""
    boundary: list[tuple[str, float, float]] = [("(qax_end - qax_start)/duration", speed, speed)]
    for right, left in SWAP:
        for a, b in ((right, left), (left, right)):
            boundary.append((f"{a}_start - {b}_end", 0.0, 0.0))
            boundary.append((f"{a}_dot_start - {b}_dot_end", 0.0, 0.0))
    h_bounds = (0.001, 0.1)
    return optimize.Problem(
        cm, nodes=nodes, duration=((nodes - 1) * h_bounds[0], (nodes - 1) * h_bounds[1]),
        method="backward-euler", objective=" + ".join(f"{t}**2" for t in TORQUES),
        bounds=bounds(), initial={"qax": 0.0},
        periodic=["qay", "qa", "qax_dot", "qay_dot", "qa_dot"], boundary=boundary)


def stride_guess(nlp: Any, *, speed: float = 1.2, duration: float = 0.6, hip_swing: float = 0.3,
                 height: float = 0.92) -> np.ndarray:
    """The start of the search: the hip at ``height`` gliding forward at ``speed`` for ``duration``, the
    thighs swinging at a constant rate from +-``hip_swing`` to -+``hip_swing`` (right forward first), knees
    and ankles straight, no torques. The same vector starts opty in benchmarks/bench_opty_gait.py."""
    n, nu = 9, 6
    npts = (len(nlp.bounds()[0]) - 1) // (2 * n + nu)
    z = np.zeros((npts, 2 * n + nu))
    z[:, 0] = np.linspace(0.0, speed * duration, npts)
    z[:, 1] = height
    z[:, 3] = np.linspace(hip_swing, -hip_swing, npts)
    z[:, 6] = -z[:, 3]
    z[:, n] = speed
    z[:, n + 3] = -2 * hip_swing / duration
    z[:, n + 6] = 2 * hip_swing / duration
    return np.r_[z.ravel(), duration]


def run(out_dir: Optional[str], *, speed: float = 1.2, nodes: int = 40,
        options: Optional[dict[str, Any]] = None) -> tuple[Any, Any]:
    cm = model()
    pr = problem(cm, speed=speed, nodes=nodes)
    nlp = optimize.compile_problem(pr)
    x0 = stride_guess(nlp, speed=speed)
    result = nlp.solve(x0, {"tol": 1e-8, "max_iter": 3000, **(options or {})})
    print(f"{result.message}: J = {result.objective:.8g} in {result.iterations} iterations, "
          f"{result.solve_seconds:.2f} s; half cycle {result.duration:.4f} s, "
          f"step {result.q[-1, 0] - result.q[0, 0]:.4f} m")
    if out_dir:
        _figure(cm, result, os.path.join(out_dir, "gait2d_walk.png"))
        rodgen.animate(cm, result.to_result(), os.path.join(out_dir, "gait2d_walk.gif"))
    return cm, result


def _figure(cm: Any, result: Any, path: str) -> None:
    from rodgen.runtime.plot import new_figure
    fig = new_figure(12, 4)
    ax1 = fig.add_subplot(1, 3, 1)
    for k, name in enumerate(result.inputs):
        ax1.plot(result.t, result.u[:, k], label=name)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("joint torque [N m]")
    ax1.legend(fontsize=7)
    ax2 = fig.add_subplot(1, 3, 2)
    for k in range(3, 9):
        ax2.plot(result.t, np.degrees(result.q[:, k]), label=COORDINATES[k])
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("joint angle [deg]")
    ax2.legend(fontsize=7)
    ax3 = fig.add_subplot(1, 3, 3)
    chains = [["hip", "l_knee", "l_ankle", "l_heel", "l_toe", "l_ankle"],
              ["trunk_com", "hip", "r_knee", "r_ankle", "r_heel", "r_toe", "r_ankle"]]
    for j in range(0, len(result.t), 4):
        pts = cm.points(result.q[j])
        for chain, colour in zip(chains, ("tab:blue", "tab:red")):
            xy = np.array([pts[c] for c in chain])
            ax3.plot(xy[:, 0], xy[:, 1], color=colour, lw=0.8)
    ax3.axhline(0.0, color="k", lw=0.5)
    ax3.set_aspect("equal")
    ax3.set_xlabel("x [m]")
    ax3.set_ylabel("y [m]")
    ax3.set_title("right leg red, left blue", fontsize=8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, bbox_inches="tight")


def main(argv: Optional[Sequence[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--speed", type=float, default=1.2)
    ap.add_argument("--nodes", type=int, default=40)
    a = ap.parse_args(argv)
    run(a.out_dir, speed=a.speed, nodes=a.nodes)


if __name__ == "__main__":
    main()
