"""Five-link exoskeleton driven along a prescribed analytic gait (control by prescribed kinematics).

The stance and swing thigh and shank angles, the torso angle and the four
variable lengths are smooth periodic functions of time (one gait cycle
lasts ``--period`` seconds). The inverse dynamics along this motion gives
the joint torques and the longitudinal forces of the variable-length links
that the exoskeleton's actuators must supply (Borisov, ch. 4).

    python examples/exo5_gait.py [OUT_DIR] [--cycles 2] [--period 1.2] [--no-compile]

Writes OUT_DIR/exo5_gait.png (default OUT_DIR: examples/out).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np
import sympy as sp

import rodgen
from rodgen.runtime.plot import new_figure
from rodgen.runtime.trajectory import PrescribedForces, as_evaluator, prescribed_forces

HERE = os.path.dirname(os.path.abspath(__file__))


def gait(period: float) -> dict[str, sp.Expr]:
    """Coordinate name -> expression of time ``t``: a smooth, periodic single-support gait."""
    t = sp.Symbol("t")
    w = 2 * sp.pi / sp.nsimplify(period)
    s = sp.Rational
    return {
        "phi_stance_shank": s(157, 100) + s(25, 100) * sp.sin(w * t),            # leg swings about vertical
        "l_stance_shank_l": s(13, 100) + s(1, 100) * sp.sin(2 * w * t),
        "phi_stance_thigh": s(157, 100) + s(30, 100) * sp.sin(w * t + s(1, 5)),
        "l_stance_thigh_l": s(14, 100) + s(1, 100) * sp.cos(2 * w * t),
        "phi_torso": s(160, 100) + s(5, 100) * sp.sin(2 * w * t),
        "phi_swing_thigh": -s(157, 100) - s(35, 100) * sp.sin(w * t),            # swing leg in antiphase
        "l_swing_thigh_l": s(14, 100) + s(2, 100) * sp.sin(w * t),
        "phi_swing_shank": -s(165, 100) - s(45, 100) * sp.sin(w * t - s(1, 2)),
        "l_swing_shank_l": s(13, 100) - s(2, 100) * sp.cos(w * t),
    }


def evaluator(model: rodgen.Model, compile_: bool) -> Any:
    if compile_:
        from rodgen.toolchain import build
        return build(model)
    return as_evaluator(model)


def run(out_dir: str, *, cycles: float = 2.0, period: float = 1.2, dt: float = 1e-3,
        compile_: bool = True) -> PrescribedForces:
    model = rodgen.load(os.path.join(HERE, "exo5.yaml"))
    ev = evaluator(model, compile_)
    t = np.arange(0.0, cycles * period + 0.5 * dt, dt)
    res = prescribed_forces(ev, t, gait(period))
    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(10.0, 10.0)
    ax = fig.subplots(4, 1, sharex=True)
    angle = [i for i, c in enumerate(res.coordinates) if c.startswith("phi_")]
    length = [i for i, c in enumerate(res.coordinates) if c.startswith("l_")]
    torque = [j for j, u in enumerate(res.inputs) if u.startswith("tau_")]
    force = [j for j, u in enumerate(res.inputs) if u.startswith("F_")]
    for i in angle:
        ax[0].plot(res.t, res.q[:, i], label=res.coordinates[i])
    for i in length:
        ax[1].plot(res.t, res.q[:, i], label=res.coordinates[i])
    for j in torque:
        ax[2].plot(res.t, res.u[:, j], label=res.inputs[j])
    for j in force:
        ax[3].plot(res.t, res.u[:, j], label=res.inputs[j])
    for a, lab in zip(ax, ["angle [rad]", "variable length [m]", "joint torque [N m]", "longitudinal force [N]"]):
        a.set_ylabel(lab)
        a.grid(True, alpha=0.3)
        a.legend(fontsize="x-small", ncol=3, loc="upper right")
    ax[-1].set_xlabel("t [s]")
    fig.suptitle(f"exo5: prescribed gait, period {period} s: required torques and longitudinal forces")
    fig.savefig(os.path.join(out_dir, "exo5_gait.png"), dpi=90)
    return res


def main(argv: Optional[Sequence[str]] = None) -> PrescribedForces:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--cycles", type=float, default=2.0)
    ap.add_argument("--period", type=float, default=1.2)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--no-compile", action="store_true", help="evaluate the equations with NumPy, no C build")
    a = ap.parse_args(argv)
    res = run(a.out_dir, cycles=a.cycles, period=a.period, dt=a.dt, compile_=not a.no_compile)
    peak = np.abs(res.u).max(axis=0)
    for name, v in zip(res.inputs, peak):
        print(f"peak |{name}| = {v:9.2f}")
    print(f"wrote {os.path.join(a.out_dir, 'exo5_gait.png')}")
    return res


if __name__ == "__main__":
    main(sys.argv[1:])
