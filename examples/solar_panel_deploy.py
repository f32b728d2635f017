"""Deployment of the solar-panel boom at a constant rate (Ruchkin & Ruchkina; SEEDS.md section 2.3).

The three coupled tube links (q2 = -2 q1, q3 = 2 q1) unfold from the stowed
configuration (q1 = 0) to the deployed one (q1 = 90 deg) with q1' = 90 deg/s.
The actuator torque on link 1 follows from the reduced equation
M_1 = J(q1) q1'' + 1/2 J'(q1) q1'^2 (here q1'' = 0), and each link's kinetic
energy is 1/2 m |v_C|^2 + 1/2 I w^2 with v_C the velocity of its centre of
mass and w its absolute angular rate.

    python examples/solar_panel_deploy.py [OUT_DIR] [--rate 90] [--no-compile] [--gif]

Writes OUT_DIR/solar_panel_deploy.png (and solar_panel_deploy.gif with --gif).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.plot import animate, new_figure
from rodgen.runtime.trajectory import PrescribedForces, as_evaluator, prescribed_forces

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = 1e-6  # directional-difference step for point velocities (error ~ STEP^2)


def evaluator(model: rodgen.Model, compile_: bool) -> Any:
    if compile_:
        from rodgen.toolchain import build
        return build(model)
    return as_evaluator(model)


def link_kinetic_energies(ev: Any, model: rodgen.Model, q: np.ndarray, qd: np.ndarray) -> dict[str, np.ndarray]:
    """Kinetic energy of every link with a rod, from the velocities of the model's points.

    A point's velocity is its directional derivative along qd,
    (r(q + h qd) - r(q - h qd)) / 2h; a link's angular rate that of the
    direction from its joint to the end of its first segment.
    """
    plus, minus = ev.points(q + STEP * qd), ev.points(q - STEP * qd)
    out: dict[str, np.ndarray] = {}
    vm = model.validate()            # rod inertias and lengths resolved, fields as expressions
    for lk in vm.links:
        first = lk.segments[0].name
        ang = []
        for pts in (plus, minus):
            d = pts[f"{first}.end"] - pts[f"{lk.name}.joint"]
            ang.append(np.arctan2(d[:, 1], d[:, 0]))
        w = np.angle(np.exp(1j * (ang[0] - ang[1]))) / (2 * STEP)
        T = np.zeros(len(q))
        for sg in lk.segments:
            for i, rd in enumerate(sg.rods):
                nm = rd.name or f"{sg.name}.rod{i}"
                v = (plus[nm] - minus[nm]) / (2 * STEP)
                T += 0.5 * vm.value(rd.mass) * np.sum(v**2, axis=1) + 0.5 * vm.value(rd.inertia) * w**2
        out[lk.name] = T
    return out


def run(out_dir: str, *, rate_deg: float = 90.0, n: int = 201, compile_: bool = True,
        gif: bool = False) -> tuple[PrescribedForces, dict[str, np.ndarray]]:
    model = rodgen.load(os.path.join(HERE, "solar_panel.yaml"))
    ev = evaluator(model, compile_)
    w = math.radians(rate_deg)
    t = np.linspace(0.0, (math.pi / 2) / w, n)
    res = prescribed_forces(ev, t, w * t)
    energies = link_kinetic_energies(ev, model, res.q, res.qd)
    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(8.0, 7.0)
    ax = fig.subplots(3, 1, sharex=True)
    ax[0].plot(res.t, np.degrees(res.q[:, 0]), label="q1")
    ax[0].plot(res.t, -2 * np.degrees(res.q[:, 0]), label="q2 = -2 q1")
    ax[0].plot(res.t, 2 * np.degrees(res.q[:, 0]), label="q3 = 2 q1")
    ax[0].set_ylabel("joint angle [deg]")
    ax[1].plot(res.t, res.u[:, 0], color="tab:red", label="M_1")
    ax[1].set_ylabel("actuator torque [N m]")
    for name, T in energies.items():
        ax[2].plot(res.t, T, label=name)
    ax[2].plot(res.t, res.kinetic, "k--", lw=1, label="total")
    ax[2].set_ylabel("kinetic energy [J]")
    ax[2].set_xlabel("t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize="small", loc="upper right")
    fig.suptitle(f"solar panel deployment at q1' = {rate_deg:g} deg/s")
    fig.savefig(os.path.join(out_dir, "solar_panel_deploy.png"), dpi=90)
    if gif:
        animate(ev, res, os.path.join(out_dir, "solar_panel_deploy.gif"), model=model, trace="tube3.end")
    return res, energies


def main(argv: Optional[Sequence[str]] = None) -> tuple[PrescribedForces, dict[str, np.ndarray]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--rate", type=float, default=90.0, help="q1' in deg/s")
    ap.add_argument("--samples", type=int, default=201)
    ap.add_argument("--no-compile", action="store_true", help="evaluate the equations with NumPy, no C build")
    ap.add_argument("--gif", action="store_true", help="also write an animation")
    a = ap.parse_args(argv)
    res, energies = run(a.out_dir, rate_deg=a.rate, n=a.samples, compile_=not a.no_compile, gif=a.gif)
    print(f"peak |M_1| = {np.abs(res.u[:, 0]).max():.4f} N m")
    for name, T in energies.items():
        print(f"{name}: kinetic energy {T[0]:.4f} J (stowed) -> {T[-1]:.4f} J (deployed)")
    print(f"wrote {os.path.join(a.out_dir, 'solar_panel_deploy.png')}")
    return res, energies


if __name__ == "__main__":
    main(sys.argv[1:])
