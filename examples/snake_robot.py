"""A snake robot crawls on a plane by lateral undulation (serpenoid gait, anisotropic friction).

The eight-link snake of ``snake.yaml`` lies on a horizontal plane; each link's
centre feels viscous friction, 20 times stronger across the link than along
it. The joints follow Hirose's serpenoid curve, a wave travelling from the
head to the tail,

    th_i(t) = alpha sin(omega t + (i - 2) delta),   i = 2..n,  delta = 2 pi / (n - 1),

tracked by the compiled PD law (``rodgen.PD`` toward a ``rodgen.Reference``):
the joint torques push the body into the wave and the friction pushes the
snake forward, towards its head (+x at the start). With isotropic friction
(``--isotropic``: the same coefficient both ways) the same gait goes nowhere.

    python examples/snake_robot.py [OUT_DIR] [--t-end 20] [--alpha 0.6] [--freq 0.5] [--isotropic]

Prints the mean forward speed of the centre of mass (after the first wave
period) and writes OUT_DIR/snake_robot.png: the head's path and snapshots of
the body, the forward displacement, and the friction force on the head link.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.plot import new_figure
from rodgen.runtime.result import SimulationResult

HERE = os.path.dirname(os.path.abspath(__file__))


def serpenoid(coordinates: Sequence[str], links: int, t_end: float, *, alpha: float, freq: float,
              dt: float = 0.005) -> rodgen.Reference:
    """Samples of the serpenoid joint angles and rates (the head-to-tail wave) for the PD law."""
    t = np.arange(0.0, t_end + dt / 2, dt)
    q = np.zeros((len(t), len(coordinates)))
    qd = np.zeros_like(q)
    omega, delta = 2 * math.pi * freq, 2 * math.pi / (links - 1)
    for i in range(2, links + 1):
        j = coordinates.index(f"th{i}")
        phase = omega * t + (i - 2) * delta
        q[:, j] = alpha * np.sin(phase)
        qd[:, j] = alpha * omega * np.cos(phase)
    return rodgen.Reference(t, q, qd)


def snake_model(isotropic: bool) -> rodgen.Model:
    model = rodgen.load(os.path.join(HERE, "snake.yaml"))
    if isotropic:
        model.name = "snake_isotropic"
        for f in model.forces:
            f.across = f.along
    return model


def run(out_dir: str, *, t_end: float = 20.0, alpha: float = 0.6, freq: float = 0.5, isotropic: bool = False,
        dt: float = 1e-3) -> tuple[SimulationResult, dict[str, Any]]:
    sys_ = rodgen.build(snake_model(isotropic))
    links = sum(1 for c in sys_.coordinates if c.startswith("th")) + 1
    law = rodgen.PD(serpenoid(sys_.coordinates, links, t_end, alpha=alpha, freq=freq), kp=20.0, kd=1.0)
    res = sys_.simulate(sys_.initial_state(), t_end, dt, controller=law, store_every=10)
    if not res.ok:
        raise RuntimeError(res.message)
    pts = sys_.points(res.q)
    centres = np.mean([pts[f"c{i}"] for i in range(1, links + 1)], axis=0)
    head = pts["head"]
    start = int(np.searchsorted(res.t, 1.0 / freq))            # after the first wave period
    span = res.t[-1] - res.t[start]
    disp = centres[-1] - centres[start]
    info = {"links": links, "speed": float(disp[0] / span), "drift": float(disp[1] / span),
            "distance": float(np.linalg.norm(centres[-1] - centres[0])),
            "torque_rms": float(np.sqrt(np.mean(res.u ** 2)))}

    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(10.0, 8.0)
    ax = fig.subplots(2, 2)
    path = ax[0, 0]
    path.plot(head[:, 0], head[:, 1], lw=0.8, color="tab:red", label="head")
    path.plot(centres[:, 0], centres[:, 1], lw=1.2, color="k", label="centre of mass")
    chain = ["tail"] + [f"s{i}.end" for i in range(1, links + 1)]
    for k in np.linspace(0, len(res.t) - 1, 6).astype(int):
        xy = np.array([pts[nm][k] for nm in chain])
        path.plot(xy[:, 0], xy[:, 1], "-o", ms=2, lw=1.5, color="tab:blue", alpha=0.6)
    path.set_aspect("equal", adjustable="datalim")
    path.set_xlabel("x [m]")
    path.set_ylabel("y [m]")
    path.set_title("head path and the body every %.1f s" % (res.t[-1] / 5))
    path.legend(fontsize="small")
    fwd = ax[0, 1]
    fwd.plot(res.t, centres[:, 0], label="centre of mass x")
    fwd.plot(res.t, head[:, 0], lw=0.6, label="head x")
    fwd.set_xlabel("t [s]")
    fwd.set_ylabel("x [m]")
    fwd.set_title(f"mean forward speed {info['speed']:.3f} m/s")
    fwd.legend(fontsize="small")
    ang = ax[1, 0]
    for i in (2, links // 2 + 1, links):
        j = sys_.coordinates.index(f"th{i}")
        ang.plot(res.t, np.degrees(res.q[:, j]), lw=0.8, label=f"th{i}")
    ang.set_xlabel("t [s]")
    ang.set_ylabel("joint angle [deg]")
    ang.legend(fontsize="small")
    drag = ax[1, 1]
    assert res.element_forces is not None
    f_head = res.element_forces[f"drag{links}"]
    drag.plot(res.t, f_head[:, 0], lw=0.8, label=f"drag{links} x")
    drag.plot(res.t, f_head[:, 1], lw=0.8, label=f"drag{links} y")
    total = sum(res.element_forces.values())
    drag.plot(res.t, total[:, 0], "k", lw=1.0, label="all links, x")
    drag.set_xlabel("t [s]")
    drag.set_ylabel("friction force [N]")
    drag.legend(fontsize="small")
    for a in ax.flat:
        a.grid(True, alpha=0.3)
    kind = "isotropic" if isotropic else "anisotropic"
    fig.suptitle(f"{links}-link snake, serpenoid gait (alpha = {alpha:g} rad, {freq:g} Hz), {kind} friction")
    fig.savefig(os.path.join(out_dir, "snake_robot.png"), dpi=90)
    return res, info


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=20.0)
    ap.add_argument("--alpha", type=float, default=0.6, help="amplitude of the joint angles [rad]")
    ap.add_argument("--freq", type=float, default=0.5, help="frequency of the wave [Hz]")
    ap.add_argument("--isotropic", action="store_true", help="the same friction along and across the links")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, t_end=a.t_end, alpha=a.alpha, freq=a.freq, isotropic=a.isotropic)
    print(f"{info['links']}-link snake, {res.t[-1]:g} s: mean forward speed {info['speed']:.4f} m/s "
          f"(sideways drift {info['drift']:+.4f} m/s), centre of mass moved {info['distance']:.3f} m, "
          f"rms joint torque {info['torque_rms']:.3f} N m")
    print(f"wrote {os.path.join(a.out_dir, 'snake_robot.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
