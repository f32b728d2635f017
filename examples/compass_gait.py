"""The passive compass gait: 50 steps down a slope, and its period-one gait by Newton on the step map.

examples/compass_gait.yaml (Goswami's walker: m = 5, m_H = 10, a = b = 0.5, slope 3 degrees) is
compiled and walked by the hybrid simulation in C (``simulate(contacts=[...])``: RK4 of the
constrained dynamics, heel strike located to 1e-13 s, plastic impact, lift-off of the trailing foot).

The step-to-step (Poincare) map P takes the state just after a heel strike to the state just after
the next one, relabelled so that the stance leg comes first. On the section both feet are on the slope
(th_swing = -th_stance - 2 gamma) and the stance foot holds, so three numbers describe it:
z = (th_stance, w_stance, w_swing). The period-one gait is the fixed point P(z*) = z*, found by Newton
(``rodgen.gait.fixed_point``) with P's exact Jacobian: ``rodgen.gait.stride`` differentiates each step of
the compiled hybrid run, the heel strike's event time (the saltation term) and the impact; the gait is
stable when the eigenvalues of dP/dz at z* (its Floquet multipliers) lie inside the unit circle.

    python examples/compass_gait.py [OUT_DIR] [--steps 50] [--dt 1e-3]

Writes OUT_DIR/compass_gait.png (hip height, leg angles and the stance phases).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen import gait
from rodgen.runtime.plot import new_figure

HERE = os.path.dirname(os.path.abspath(__file__))
#: the swing foot rises about 1.6 cm after heel strike and passes under the slope at mid-stance (rigid legs):
#: it may touch down only once it has been 2 cm above the slope
ARM_GAP = 0.02


def state(robot: Any, z: np.ndarray) -> np.ndarray:
    """y = [x, y, th_a, th_b, rates] on the section: foot_a (stance) at the origin and held, foot_b on the
    slope. z = (th_stance, w_stance, w_swing); angles from the downward vertical (the model's)."""
    gamma = robot.parameters["gamma"]
    l = robot.parameters["a"] + robot.parameters["b"]
    ts, ws, ww = z
    tw = -ts - 2 * gamma
    q = np.array([-l * np.sin(ts), l * np.cos(ts), ts, tw])
    qd = np.array([-l * np.cos(ts) * ws, -l * np.sin(ts) * ws, ws, ww])
    return np.concatenate([q, qd])


def walk(robot: Any, z: np.ndarray, t_end: float, dt: float) -> Any:
    return robot.simulate(state(robot, z), t_end, dt, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=ARM_GAP,
                        event_tol=1e-13)


def post_impact(res: Any, event: dict) -> np.ndarray:
    """z just after a heel strike, relabelled: the leg that touched down is the stance leg."""
    i = np.flatnonzero(res.t == event["t"])[-1]          # the row after the jump
    s = 1 if event["block"] == "foot_b" else 0
    return np.array([res.q[i, 2 + s], res.qd[i, 2 + s], res.qd[i, 3 - s]])


def step_map(robot: Any, z: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
    """P(z) and the step time."""
    res = walk(robot, z, 1.2, dt)
    td = [e for e in res.events if e["kind"] == "touchdown"]
    if not td:
        raise RuntimeError(f"no heel strike within 1.2 s from z = {z} ({res.message})")
    return post_impact(res, td[0]), td[0]["t"]


def section_jacobian(robot: Any, z: np.ndarray) -> np.ndarray:
    """d state(z)/dz (8 x 3)."""
    l = robot.parameters["a"] + robot.parameters["b"]
    ts, ws, _ = z
    S = np.zeros((8, 3))
    S[:4, 0] = [-l * np.cos(ts), -l * np.sin(ts), 1.0, -1.0]
    S[4, :2] = [l * np.sin(ts) * ws, -l * np.cos(ts)]
    S[5, :2] = [-l * np.cos(ts) * ws, -l * np.sin(ts)]
    S[6, 1] = S[7, 2] = 1.0
    return S


#: z after foot_b's heel strike, relabelled: (th_b, w_b, w_a) of the state [x, y, th_a, th_b, rates]
RELABEL = np.zeros((3, 8))
RELABEL[0, 3] = RELABEL[1, 7] = RELABEL[2, 6] = 1.0


def poincare(robot: Any, z: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """P(z) and its exact Jacobian dP/dz: one stride from the section state, foot_a held until foot_b
    strikes, through rodgen.gait.stride."""
    s = gait.stride(robot, state(robot, z), ["foot_a"], "foot_b", dt, arm_gap=ARM_GAP)
    return RELABEL @ s.y_plus, RELABEL @ s.jacobian @ section_jacobian(robot, z)


def fixed_point(robot: Any, guess: np.ndarray, dt: float, tol: float = 1e-10,
                iters: int = 12) -> tuple[np.ndarray, np.ndarray, float]:
    """(z*, the eigenvalues of dP/dz at z*, the residual |P(z*) - z*|) by Newton on P(z) - z = 0."""
    cycle = gait.fixed_point(lambda z: poincare(robot, z, dt), guess, tol=tol, iterations=iters)
    return cycle.z, cycle.multipliers, cycle.residual


def plot(res: Any, path: str) -> None:
    fig = new_figure(9.0, 7.0)
    ax = fig.subplots(3, 1, sharex=True)
    ax[0].plot(res.t, res.q[:, 1], lw=0.8)
    ax[0].set_ylabel("hip height y [m]")
    ax[1].plot(res.t, np.degrees(res.q[:, 2]), lw=0.8, label="th_a")
    ax[1].plot(res.t, np.degrees(res.q[:, 3]), lw=0.8, label="th_b")
    ax[1].set_ylabel("leg angle [deg]")
    ax[1].legend(fontsize="small", loc="upper right")
    starts = [ph[0] for ph in res.phases] + [float(res.t[-1])]
    for k, (t0, names) in enumerate(res.phases):
        color = {"foot_a": "tab:blue", "foot_b": "tab:orange"}.get(names[0] if names else "", "grey")
        ax[2].axvspan(t0, starts[k + 1], color=color, alpha=0.6, lw=0)
    ax[2].set_yticks([])
    ax[2].set_ylabel("stance (a blue, b orange)")
    ax[2].set_xlabel("t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
    n = sum(e["kind"] == "touchdown" for e in res.events)
    fig.suptitle(f"passive compass gait: {n} steps, hybrid simulation in C")
    fig.savefig(path, dpi=90)


def run(out_dir: str, *, steps: int = 50, dt: float = 1e-3) -> dict[str, Any]:
    sys_ = rodgen.build(rodgen.load(os.path.join(HERE, "compass_gait.yaml")))
    guess = np.array([0.2187, -1.0918, -0.3772])        # Goswami's published fixed point (4 digits)
    z, eig, residual = fixed_point(sys_, guess, dt)
    period = step_map(sys_, z, dt)[1]
    res = walk(sys_, guess, (steps + 0.5) * period, dt)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "compass_gait.png")
    plot(res, path)
    td = [e for e in res.events if e["kind"] == "touchdown"]
    return {"z": z, "eig": eig, "residual": residual, "period": period, "result": res, "steps": len(td),
            "last": post_impact(res, td[-1]) if td else None, "plot": path}


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--steps", type=int, default=50, help="steps to walk")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step [s]")
    a = ap.parse_args(argv)
    info = run(a.out_dir, steps=a.steps, dt=a.dt)
    z = info["z"]
    print(f"walked {info['steps']} steps ({info['result'].message})")
    print(f"fixed point after heel strike: th_stance = {z[0]:.6f}, w_stance = {z[1]:.6f}, w_swing = {z[2]:.6f} "
          f"(|P(z) - z| = {info['residual']:.1e}); step time {info['period']:.6f} s")
    print("eigenvalues of the step map: " + ", ".join(f"{v:.4f} (|.| = {abs(v):.4f})" for v in info["eig"]))
    print(f"wrote {info['plot']}")
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
