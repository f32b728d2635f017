"""Identify the masses of a double pendulum from a simulated trajectory by least squares on its regressor.

The "true" robot is examples/double_pendulum.yaml with masses m1 = 1.37 kg and m2 = 0.61 kg (the file says
1.0 and 0.8). It is simulated under exciting joint torques; the measurements are the states, the
accelerations and the torques at 200 samples, first exact, then with noise. The regressor of the model
(``M q̈ + h + G = Y θ``, θ the rods' masses and central inertias) is generated from the file's model
(``CodegenOptions(regressor=True)``): it does not depend on θ, so the file's masses need not be right.

    python examples/identify_masses.py [OUT_DIR]

Prints the identified masses and writes OUT_DIR/identify_masses.png (measured torques and those of the
identified model).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
from scipy.integrate import solve_ivp

import rodgen
from rodgen.codegen import CodegenOptions
from rodgen.runtime.identification import base_parameters, least_squares

HERE = Path(__file__).resolve().parent
TRUE = {"m1": 1.37, "m2": 0.61}


def torques(t: float) -> np.ndarray:
    """Exciting joint torques: a few sines of incommensurate frequencies."""
    return np.array([3.0 * np.sin(1.3 * t) + 1.5 * np.sin(3.7 * t),
                     1.2 * np.sin(2.1 * t + 0.4) + 0.6 * np.cos(5.3 * t)])


def run(out_dir: str, build_dir: Optional[str] = None) -> dict[str, Any]:
    model = rodgen.load(HERE / "double_pendulum.yaml")
    robot = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(regressor=True))
    p = robot.parameter_vector(**TRUE)

    # simulate the true robot and sample its measurements
    f = robot.ode(u=lambda t, q, qd: torques(t), p=p)
    t = np.linspace(0.0, 10.0, 200)
    sol = solve_ivp(f, (0.0, 10.0), robot.initial_state(), t_eval=t, rtol=1e-11, atol=1e-12)
    n = robot.nq
    q, qd = sol.y[:n].T, sol.y[n:].T
    tau = np.array([torques(tk) for tk in t])
    qdd = np.array([robot.forward_dynamics(q[k], qd[k], tau[k], p) for k in range(t.size)])

    # the generated regressor Y(q, qd, qdd) (robot.regressor) and the names of θ (robot.theta_names)
    names = robot.theta_names
    base = base_parameters(robot)
    print(f"{len(names)} inertial parameters, {base.count} identifiable:", ", ".join(base.describe()))

    found: dict[str, Any] = {}
    fits = {}
    rng = np.random.default_rng(0)
    for label, noise in (("noise-free", 0.0), ("noisy", 0.02)):
        meas_tau = tau + noise * rng.standard_normal(tau.shape)      # N m
        meas_qdd = qdd + noise * rng.standard_normal(qdd.shape)      # rad/s²
        est = least_squares(robot, list(zip(q, qd, meas_qdd)), list(meas_tau), base)
        theta = dict(zip([names[k] for k in base.independent], est))
        m1, m2 = theta["upper_rod.rod0.m"], theta["lower_rod.rod0.m"]
        print(f"{label:>10}: m1 = {m1:.6f} kg (true {TRUE['m1']}), m2 = {m2:.6f} kg (true {TRUE['m2']})")
        found[label + ".m1"], found[label + ".m2"] = m1, m2
        fits[label] = (meas_tau, robot.regressor(q, qd, qdd)[:, :, base.independent] @ est)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    meas, pred = fits["noisy"]
    for j in range(n):
        ax[j].plot(t, meas[:, j], ".", ms=3, color="0.6", label="measured (noisy)")
        ax[j].plot(t, pred[:, j], color="tab:blue", label="identified model")
        ax[j].set_ylabel(f"tau_{j + 1} [N m]")
        ax[j].grid(True, alpha=0.3)
        ax[j].legend(fontsize="small", loc="upper right")
    ax[0].set_title(f"identified m1 = {found['noisy.m1']:.4f} kg, m2 = {found['noisy.m2']:.4f} kg "
                    f"(true {TRUE['m1']}, {TRUE['m2']})", fontsize="small")
    ax[1].set_xlabel("t [s]")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "identify_masses.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    found["path"] = path
    return found


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    out = run(a.out_dir)
    print(f"wrote {out['path']}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
