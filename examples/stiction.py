"""Dry friction with stiction: a block that sticks, slips and sticks again, and a pendulum that stops.

1. A block of mass m on a rail (a variable segment's length, its angle held by a coupling) with
   `friction: {static: Fs, kinetic: Fk}` is pushed by a force that rises as c t to c T, falls back to
   zero at 2 T and stays there. It sticks until c t = Fs (t = Fs / c), slides while its velocity is
   positive (m a = F - Fk) and sticks again when the velocity returns to zero, after the force is gone.
2. A pendulum with joint friction released at rest from the horizontal swings from rest to rest, each
   stop given by the energy balance m g L (sin a - sin b) = Fk |a - b|, and stays at the first stop where
   the gravity torque m g L |cos b| is within Fs.

Both run in the hybrid simulator in C (stick and slip are phases; the transitions are located events).

    python examples/stiction.py [OUT_DIR]

Writes OUT_DIR/stiction.png and prints the event times next to the hand-computed ones.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen import Friction, InputTable, Joint, Link, Model, PointMass
from rodgen.runtime.plot import new_figure

HERE = os.path.dirname(os.path.abspath(__file__))


def block_model(m: float = 2.0, fs: float = 3.0, fk: float = 2.0) -> Model:
    """A point mass m at the end of a variable segment along x: its length is the block's position."""
    model = Model(name="stiction_block_example", gravity=(0.0, -9.81), couplings={"phi_rail": 0})
    model.parameter("m", m, "kg")
    model.parameter("Fs", fs, "N", "static friction limit")
    model.parameter("Fk", fk, "N", "kinetic friction")
    rail = Link("rail", joint=Joint(actuated=False))
    rail.variable("s", 1.0, masses=[PointMass("m", fraction=1.0)], friction=Friction(static="Fs", kinetic="Fk"))
    model.links.append(rail)
    return model


def pendulum_model(m: float = 1.0, length: float = 0.8, fs: float = 3.0, fk: float = 1.2) -> Model:
    model = Model(name="stiction_pendulum_example", gravity=(0.0, "-g"))
    for name, value in (("g", 9.81), ("m", m), ("L", length), ("Fs", fs), ("Fk", fk)):
        model.parameter(name, value)
    arm = Link("arm", joint=Joint(actuated=False, friction=Friction(static="Fs", kinetic="Fk")))
    arm.rigid("bar", "L", masses=[PointMass("m", fraction=1.0)])
    model.links.append(arm)
    return model


def pendulum_stops(theta0: float, mgl: float, fs: float, fk: float) -> list[float]:
    """The rest angles by hand (energy balance, bisection between the bottom and the mirror angle)."""
    stops = [theta0]
    while mgl * abs(math.cos(stops[-1])) > fs and len(stops) < 50:
        a = stops[-1]
        lo, hi = -math.pi / 2, -math.pi - a

        def f(b: float) -> float:
            return mgl * (math.sin(a) - math.sin(b)) - fk * abs(a - b)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
        stops.append(0.5 * (lo + hi))
    return stops


def run(out_dir: str, *, c: float = 1.0, T: float = 5.0, dt: float = 1e-3) -> dict[str, Any]:
    build = rodgen.build(block_model())
    m, fs, fk = (build.parameters[k] for k in ("m", "Fs", "Fk"))
    push = InputTable([0.0, T, 2 * T], [[0.0], [c * T], [0.0]])
    blk = build.simulate(np.array([1.0, 0.0]), 2 * T + 5.0, dt, u=push)
    # by hand: slip at Fs / c; the velocity (1/m) * integral of (F - Fk) returns to zero after 2 T at
    # t = 2 T + m v(2 T) / Fk, with m v(2 T) = c T^2 - (Fs/c)^2 c / 2 - Fk (2 T - Fs / c)
    t_slip = fs / c
    mv = c * T * T - 0.5 * c * t_slip ** 2 - fk * (2 * T - t_slip)
    t_stick = 2 * T + mv / fk

    pend = rodgen.build(pendulum_model())
    mgl = pend.parameters["m"] * pend.parameters["g"] * pend.parameters["L"]
    pres = pend.simulate(np.array([0.0, 0.0]), 6.0, dt)
    stops = pendulum_stops(0.0, mgl, pend.parameters["Fs"], pend.parameters["Fk"])

    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(10.0, 8.0)
    ax = fig.subplots(3, 2, sharex="col")
    stuck = blk.active["l_s_friction"] == 1
    ax[0, 0].plot(blk.t, blk.q[:, 0], label="position")
    ax[1, 0].plot(blk.t, blk.qd[:, 0], color="tab:green", label="velocity")
    ax[2, 0].plot(blk.t, blk.u[:, 0], color="k", lw=1, label="applied force")
    ax[2, 0].plot(blk.t, blk.lam[:, 0], color="tab:red", label="friction force")
    ax[2, 0].axhline(-fs, color="tab:red", ls=":", lw=0.8, label="-Fs")
    for a in ax[:, 0]:
        a.fill_between(blk.t, 0, 1, where=stuck, transform=a.get_xaxis_transform(), color="0.85",
                       label="sticking" if a is ax[0, 0] else None)
    ax[0, 0].set_title(f"block: slips at {t_slip:.3f} s, sticks at {t_stick:.3f} s (by hand)", fontsize="small")
    ax[2, 0].set_xlabel("t [s]")
    ax[0, 1].plot(pres.t, np.degrees(pres.q[:, 0]), label="angle")
    for b in stops[1:]:
        ax[0, 1].axhline(math.degrees(b), color="0.6", ls=":", lw=0.8)
    ax[1, 1].plot(pres.t, pres.qd[:, 0], color="tab:green", label="rate")
    ax[2, 1].plot(pres.t, pres.lam[:, 0], color="tab:red", label="friction torque")
    ax[2, 1].plot(pres.t, pres.kinetic + pres.potential, color="tab:purple", label="energy T + V")
    ax[0, 1].set_title("pendulum from horizontal, deg (dotted: stops by hand)", fontsize="small")
    ax[2, 1].set_xlabel("t [s]")
    for a in ax.ravel():
        a.grid(True, alpha=0.3)
        a.legend(fontsize="small", loc="best")
    path = os.path.join(out_dir, "stiction.png")
    fig.savefig(path, dpi=90)
    return {"block": blk, "pendulum": pres, "t_slip": t_slip, "t_stick": t_stick, "stops": stops,
            "path": path}


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    out = run(a.out_dir)
    ev = [(e["kind"], round(e["t"], 6)) for e in out["block"].events]
    print(f"block events {ev}; by hand: slip at {out['t_slip']:.6f} s, stick at {out['t_stick']:.6f} s")
    sticks = [e["t"] for e in out["pendulum"].events if e["kind"] == "stick"]
    angles = [float(np.interp(t, out["pendulum"].t, out["pendulum"].q[:, 0])) for t in sticks]
    print("pendulum stops [rad]:", " ".join(f"{x:.6f}" for x in angles))
    print("          by hand   :", " ".join(f"{x:.6f}" for x in out["stops"][1:]))
    print(f"wrote {out['path']}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
