"""A variable-length pendulum pumped at twice its natural frequency (parametric resonance).

The rod length is prescribed, l(t) = l0 (1 + eps cos(2 w0 t)) with
w0 = sqrt(g / l0): longest at the turning points, shortest when the bob
passes the bottom, as a child pumps a swing. The angle is free. This is a
mixed problem (the length coordinate prescribed, the angle integrated;
rodgen.runtime.trajectory.MixedProblem); it also returns the longitudinal
force the actuator must supply.

For small swings u = l * theta obeys a Mathieu equation
u'' + w0^2 (1 + 3 eps cos(2 w0 t)) u = 0, so at exact resonance the
amplitude grows like exp(mu t) with mu = 3 eps w0 / 4 (first order in eps).

    python examples/pumped_pendulum.py [OUT_DIR] [--t-end 20] [--eps 0.05] [--no-compile]

Writes OUT_DIR/pumped_pendulum.png.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np
import sympy as sp

import rodgen
from rodgen.runtime.plot import new_figure
from rodgen.runtime.result import SimulationResult
from rodgen.runtime.trajectory import MixedProblem, as_evaluator

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluator(model: rodgen.Model, compile_: bool) -> Any:
    if compile_:
        from rodgen.toolchain import build
        return build(model)
    return as_evaluator(model)


def peaks(t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times and values of the local maxima of |x|."""
    a = np.abs(x)
    k = np.flatnonzero((a[1:-1] > a[:-2]) & (a[1:-1] >= a[2:])) + 1
    return t[k], a[k]


def run(out_dir: str, *, t_end: float = 20.0, eps: float = 0.05, theta0: float = 0.02, dt: float = 2e-3,
        compile_: bool = True) -> tuple[SimulationResult, dict[str, float]]:
    model = rodgen.load(os.path.join(HERE, "pendulum_vl.yaml"))
    ev = evaluator(model, compile_)
    g, l0 = ev.parameters["g"], ev.parameters["l0"]
    w0 = math.sqrt(g / l0)
    t = sp.Symbol("t")
    length = l0 * (1 + eps * sp.cos(2 * w0 * t))
    mp = MixedProblem(ev, {"l_rod": length})
    res = mp.simulate([-math.pi / 2 + theta0, 0.0], t_end, dt=dt)
    theta = res.q[:, 0] + math.pi / 2                      # swing angle from the downward vertical
    tp, ap = peaks(res.t, theta)
    late = tp > 2 * math.pi / w0                           # skip the first period (transient)
    mu_fit = float(np.polyfit(tp[late], np.log(ap[late]), 1)[0]) if late.sum() > 2 else float("nan")
    info = {"w0": w0, "mu_theory": 3 * eps * w0 / 4, "mu_fit": mu_fit, "growth": float(ap[-1] / theta0)}
    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(9.0, 7.0)
    ax = fig.subplots(3, 1, sharex=True)
    ax[0].plot(res.t, np.degrees(theta), lw=0.8, label="swing angle")
    env = theta0 * np.exp(info["mu_theory"] * res.t)
    ax[0].plot(res.t, np.degrees(env), "k--", lw=1, label="theta0 exp(3 eps w0 t / 4)")
    ax[0].plot(res.t, -np.degrees(env), "k--", lw=1)
    ax[0].set_ylabel("angle [deg]")
    ax[1].plot(res.t, res.q[:, 1], color="tab:green", label="l(t)")
    ax[1].set_ylabel("length [m]")
    ax[2].plot(res.t, res.extra["compensating"][:, 0], color="tab:red", lw=0.8, label="F_rod")
    ax[2].set_ylabel("longitudinal force [N]")
    ax[2].set_xlabel("t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize="small", loc="upper left")
    fig.suptitle(f"pendulum pumped at 2 w0 (eps = {eps:g}): growth rate {mu_fit:.4f}/s "
                 f"(Mathieu estimate {info['mu_theory']:.4f}/s)")
    fig.savefig(os.path.join(out_dir, "pumped_pendulum.png"), dpi=90)
    return res, info


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=20.0)
    ap.add_argument("--eps", type=float, default=0.05, help="relative amplitude of the length modulation")
    ap.add_argument("--theta0", type=float, default=0.02, help="initial swing angle [rad]")
    ap.add_argument("--no-compile", action="store_true", help="evaluate the equations with NumPy, no C build")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, t_end=a.t_end, eps=a.eps, theta0=a.theta0, compile_=not a.no_compile)
    print(f"w0 = {info['w0']:.4f} rad/s; growth rate {info['mu_fit']:.4f}/s "
          f"(Mathieu estimate {info['mu_theory']:.4f}/s); amplitude x{info['growth']:.1f}")
    print(f"wrote {os.path.join(a.out_dir, 'pumped_pendulum.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
