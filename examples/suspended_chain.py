"""A chain whose suspension point moves periodically (prescribed base motion).

The three-rod chain of suspended_chain.yaml hangs from its floating base.
The base is moved along a prescribed path, translating
x(t) = A sin(W t) (``--mode translate``) or circling
x = A cos(W t), y = A sin(W t) (``--mode rotate``), with W a multiple of the
chain's lowest natural frequency. This is a mixed problem: the base
coordinates are prescribed, the hinge angles are integrated under gravity
and hinge damping, and the generalized forces on x and y are the force the
suspension must exert on the chain (rodgen.runtime.trajectory.MixedProblem).
The excitation is switched on smoothly over the first two periods.

    python examples/suspended_chain.py [OUT_DIR] [--t-end 30] [--ratio 0.9] [--mode translate] [--no-compile]

Writes OUT_DIR/suspended_chain.png (and suspended_chain.gif with --gif).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np
import sympy as sp
from scipy.linalg import eigh

import rodgen
from rodgen.runtime.plot import animate, new_figure
from rodgen.runtime.result import SimulationResult
from rodgen.runtime.trajectory import MixedProblem, as_evaluator

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluator(model: rodgen.Model, compile_: bool) -> Any:
    if compile_:
        from rodgen.toolchain import build
        return build(model)
    return as_evaluator(model)


def natural_frequencies(ev: Any, p: np.ndarray) -> np.ndarray:
    """Small-oscillation frequencies [rad/s] of the chain hanging from a fixed point.

    Stiffness from central differences of the gravity forces about the hanging
    equilibrium (step 1e-6, error ~1e-10 relative), mass matrix there.
    """
    q0 = np.zeros(ev.nq)
    q0[2] = -math.pi / 2
    free = list(range(2, ev.nq))
    h = 1e-6
    K = np.empty((len(free), len(free)))
    for j, k in enumerate(free):
        dq = np.zeros(ev.nq)
        dq[k] = h
        K[:, j] = (ev.bias(q0 + dq, np.zeros(ev.nq), p)[free] - ev.bias(q0 - dq, np.zeros(ev.nq), p)[free]) / (2 * h)
    M = ev.mass_matrix(q0, p)[np.ix_(free, free)]
    return np.sqrt(eigh((K + K.T) / 2, M, eigvals_only=True))


def base_path(mode: str, A: float, W: float, ramp: float) -> dict[str, sp.Expr]:
    t = sp.Symbol("t")
    s = sp.Piecewise(((1 - sp.cos(sp.pi * t / ramp)) / 2, t < ramp), (1, True))  # smooth switch-on
    if mode == "translate":
        return {"x": A * s * sp.sin(W * t), "y": sp.Integer(0)}
    if mode == "rotate":
        return {"x": A * s * sp.cos(W * t), "y": A * s * sp.sin(W * t)}
    raise ValueError(f"mode must be 'translate' or 'rotate', got {mode!r}")


def run(out_dir: str, *, t_end: float = 30.0, ratio: float = 0.9, amplitude: float = 0.02,
        mode: str = "translate", damping: Optional[float] = None, dt: float = 5e-3, compile_: bool = True,
        gif: bool = False) -> tuple[SimulationResult, dict[str, Any]]:
    model = rodgen.load(os.path.join(HERE, "suspended_chain.yaml"))
    ev = evaluator(model, compile_)
    over = {} if damping is None else {"c": damping}
    p = np.array([over.get(k, v) for k, v in ev.parameters.items()])
    freqs = natural_frequencies(ev, p)
    W = ratio * float(freqs[0])
    path = base_path(mode, amplitude, W, ramp=2 * 2 * math.pi / W)
    mp = MixedProblem(ev, path, p=p)
    res = mp.simulate([-math.pi / 2, 0.0, 0.0, 0.0, 0.0, 0.0], t_end, dt=dt)
    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(9.0, 8.0)
    ax = fig.subplots(3, 1, sharex=True)
    ax[0].plot(res.t, res.q[:, 0], label="x")
    ax[0].plot(res.t, res.q[:, 1], label="y")
    ax[0].set_ylabel("suspension [m]")
    absolute = np.cumsum(res.q[:, 2:], axis=1) + math.pi / 2
    for k in range(absolute.shape[1]):
        ax[1].plot(res.t, np.degrees(absolute[:, k]), lw=0.8, label=f"rod {k + 1}")
    ax[1].set_ylabel("angle from vertical [deg]")
    ax[2].plot(res.t, res.extra["compensating"][:, 0], lw=0.8, label="F_x")
    ax[2].plot(res.t, res.extra["compensating"][:, 1], lw=0.8, label="F_y")
    ax[2].set_ylabel("suspension force [N]")
    ax[2].set_xlabel("t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize="small", loc="upper left")
    fig.suptitle(f"chain with a moving suspension point ({mode}, W = {ratio:g} w1 = {W:.3f} rad/s)")
    fig.savefig(os.path.join(out_dir, "suspended_chain.png"), dpi=90)
    if gif:
        animate(ev, res, os.path.join(out_dir, "suspended_chain.gif"), model=model, trace="rod3_s.end")
    return res, {"frequencies": freqs, "W": W, "p": p}


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=30.0)
    ap.add_argument("--ratio", type=float, default=0.9, help="excitation frequency / lowest natural frequency")
    ap.add_argument("--amplitude", type=float, default=0.02, help="amplitude of the suspension motion [m]")
    ap.add_argument("--mode", choices=("translate", "rotate"), default="translate")
    ap.add_argument("--damping", type=float, default=None, help="hinge damping c (default: the model's)")
    ap.add_argument("--no-compile", action="store_true", help="evaluate the equations with NumPy, no C build")
    ap.add_argument("--gif", action="store_true", help="also write an animation")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, t_end=a.t_end, ratio=a.ratio, amplitude=a.amplitude, mode=a.mode,
                    damping=a.damping, compile_=not a.no_compile, gif=a.gif)
    print("natural frequencies [rad/s]: " + ", ".join(f"{w:.4f}" for w in info["frequencies"]))
    print(f"excitation {info['W']:.4f} rad/s; peak |F_x| = {np.abs(res.extra['compensating'][:, 0]).max():.3f} N")
    print(f"wrote {os.path.join(a.out_dir, 'suspended_chain.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
