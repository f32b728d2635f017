"""The exoskeleton steps on compliant heel and toe contacts (gait2d-style ground reactions).

The model is the one of ``exo5_stand.py``: the five-link exoskeleton with a foot
at each shank end and four compliant ground contacts (Hunt–Crossley normal force
``k d^1.5 (1 + c d')`` with regularised Coulomb friction) under the heels and toes.
Since the contacts are force laws there are no events and no phases to switch:
one smooth (stiff) ODE, integrated by the compiled DOPRI5.

The controller is the compiled PD law on every input, tracking a prescribed
quasi-static gait (a reference computed here, not a model of human gait):

* the hip moves forwards at a constant speed after a start from standing, and
  its centre of mass stays over the stance foot in single support (the foot is
  20 cm long) and passes from the back foot to the front one in double support;
* each leg is straight (the knee angle is zero): the leg's angle and its length
  follow from the hip and the ankle positions, the length through the two
  variable-length parts (thigh and shank, shortened or lengthened equally);
* the swing leg **shortens** to lift its foot (flat, 5 cm clearance) while the
  ankle moves ahead by a minimum-jerk profile to its next foothold, and lengthens
  again to put it down; the torso stays upright and the feet flat.

    python examples/exo5_step.py [OUT_DIR] [--steps 4]

Prints the distance walked, the lowest hip height and the mean vertical ground
reaction over the steps against the weight; writes OUT_DIR/exo5_step.png: the
vertical and horizontal ground reactions of each contact (their sum against the
weight), the phases (which contacts carry load), and a stick figure of the gait.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.plot import new_figure
from rodgen.runtime.result import SimulationResult

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exo5_stand import CONTACTS, FOOT_DROP, standing_model  # noqa: E402

#: The contacts that carry load when their vertical force exceeds this share of the weight.
LOAD_SHARE = 0.02


class Gait(NamedTuple):
    """A quasi-static gait plan: hip speed, step length, swing clearance, foot geometry."""

    speed: float = 0.15         # speed of the centre of mass while walking, m/s
    step: float = 0.25          # distance between the ankles in double support, m
    clearance: float = 0.05     # lift of the swing foot, m
    behind: float = 0.0         # single support starts with the centre of mass this far behind the stance ankle
    ahead: float = 0.10         # ... and ends with it this far ahead (the foot spans -0.05 .. +0.15)
    settle: float = 0.6         # standing before the start, s
    rest: float = 0.5           # standing after the last step, s
    height: float = 0.847       # hip height above the ankles while walking, m (legs a little shortened)


def plan(model: rodgen.CompiledModel, steps: int, gait: Gait = Gait()) -> tuple[rodgen.Reference, dict[str, Any]]:
    """The reference q(t) of the gait (sampled every 2 ms) and the plan's numbers (footholds, phases).

    The plan moves the whole body's centre of mass along x; the hip follows from it (a few fixed-point
    iterations on the compiled marker positions: the swing leg's mass moves the centre ahead of the hip)."""
    p = model.parameters
    l_th0, l_sh0 = p["l_thigh0"], p["l_shank0"]
    L0 = l_th0 + p["b_thigh"] + l_sh0 + p["b_shank"]
    q0 = model.initial_state()[:model.nq]
    ix = {n: i for i, n in enumerate(model.coordinates)}
    pts = model.points(q0)
    ankle = {s: float(pts[f"foot_{s}.joint"][0]) for s in "ab"}
    h0 = float(pts["base"][1] - pts["foot_a.joint"][1])            # initial hip height above the ankles
    v = gait.speed
    # motion of the centre of mass: settle, accelerate (double support), then single/double support at
    # speed v, decelerate
    front, back = "a", "b"
    com0 = float(com_x(model, q0[None, :])[0])
    x_start = ankle[front] - gait.behind - com0                  # the distance to the start of single support
    t_acc = 2 * x_start / v                                       # uniform acceleration from rest
    t_ss = (gait.ahead + gait.behind) / v
    t_ds = (gait.step - gait.ahead - gait.behind) / v
    phases: list[tuple[float, float, str, str, float, float]] = []   # (t0, t1, kind, swing, x_from, x_to)
    t = gait.settle + t_acc
    feet = dict(ankle)
    for k in range(steps):
        target = feet[front] + gait.step
        phases.append((t, t + t_ss, "single", back, feet[back], target))
        t += t_ss
        feet[back] = target
        front, back = back, front
        if k < steps - 1:
            phases.append((t, t + t_ds, "double", "", 0.0, 0.0))
            t += t_ds
    t_dec = 2 * (gait.step - gait.ahead - gait.behind) / 2 / v    # decelerate over half the double support
    t_end = t + t_dec + gait.rest

    def hip_x(tt: np.ndarray) -> np.ndarray:
        out = np.zeros_like(tt)
        s0, s1 = gait.settle, gait.settle + t_acc
        acc = tt > s0
        out[acc] = 0.5 * v / t_acc * (np.minimum(tt[acc], s1) - s0) ** 2
        cruise = tt > s1
        out[cruise] += v * (np.minimum(tt[cruise], t) - s1)
        dec = tt > t
        td = np.minimum(tt[dec], t + t_dec) - t
        out[dec] += v * td - 0.5 * v / t_dec * td ** 2
        return out

    tt = np.arange(0.0, t_end + 1e-9, 0.002)
    x_com = hip_x(tt) + com0
    ramp = np.clip(tt / gait.settle, 0, 1)
    yh = h0 + (gait.height - h0) * (3 * ramp ** 2 - 2 * ramp ** 3)     # lower the hip while standing
    ax = {s: np.full_like(tt, ankle[s]) for s in "ab"}
    ay = {s: np.zeros_like(tt) for s in "ab"}
    for t0, t1, kind, swing, x_from, x_to in phases:
        if kind != "single":
            continue
        inside = (tt >= t0) & (tt <= t1)
        tau = (tt[inside] - t0) / (t1 - t0)
        ax[swing][inside] = x_from + (x_to - x_from) * (10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5)
        ay[swing][inside] = gait.clearance * np.sin(np.pi * tau) ** 2
        ax[swing][tt > t1] = x_to
    Q = np.tile(q0, (len(tt), 1))
    xh = x_com.copy()
    for _ in range(4):
        Q[:, ix["x"]], Q[:, ix["y"]] = xh, yh + FOOT_DROP
        Q[:, ix["phi_torso"]] = math.pi / 2
        for s in "ab":
            dx, dy = ax[s] - xh, ay[s] - yh
            angle = np.arctan2(dy, dx)
            stretch = (np.hypot(dx, dy) - L0) / 2
            Q[:, ix[f"phi_thigh_{s}"]] = Q[:, ix[f"phi_shank_{s}"]] = angle
            Q[:, ix[f"l_thigh_{s}_l"]] = l_th0 + stretch
            Q[:, ix[f"l_shank_{s}_l"]] = l_sh0 + stretch
            Q[:, ix[f"phi_foot_{s}"]] = 0.0
        xh = xh - (com_x(model, Q) - x_com)
    info = {"t_end": t_end, "phases": phases, "footholds": feet, "t_walk": (gait.settle, t),
            "cycle": t_ss + t_ds, "x_final": float(xh[-1] - xh[0])}
    return rodgen.Reference(tt, Q), info


def com_x(model: rodgen.CompiledModel, Q: np.ndarray) -> np.ndarray:
    """x of the whole body's centre of mass at the coordinates Q (N, nq), from the rods' mass points."""
    p = model.parameters
    pts = model.points(Q)
    masses = {"torso_b.rod0": p["m_torso"]}
    for s in "ab":
        masses.update({f"thigh_{s}_b.rod0": p["m_thigh"], f"shank_{s}_b.rod0": p["m_shank"],
                       f"foot_{s}_s.rod0": p["m_foot"]})
    return sum(m * pts[nm][:, 0] for nm, m in masses.items()) / sum(masses.values())


def weight_of(model: rodgen.CompiledModel) -> float:
    p = model.parameters
    return (p["m_torso"] + 2 * (p["m_thigh"] + p["m_shank"] + p["m_foot"])) * p["g"]


def run(out_dir: Optional[str], *, steps: int = 4, stiffness: float = 2e5,
        gait: Gait = Gait(), ankle_gain: float = 5e3,
        params: Optional[dict[str, float]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    """Simulate the gait; with ``out_dir`` write the figure. Returns the result and the numbers."""
    sys_ = rodgen.build(standing_model(stiffness))      # the model of exo5_stand.py (one build for both)
    ref, info = plan(sys_, steps, gait)
    p = sys_.parameter_vector(**(params or {}))
    force = np.array([nm.startswith("F_") for nm in sys_.inputs])     # the longitudinal forces
    ankle = np.array([nm.startswith("tau_foot") for nm in sys_.inputs])
    law = rodgen.PD(ref, kp=np.where(force, 1e5, np.where(ankle, ankle_gain, 5e3)),
                    kd=np.where(force, 2e3, np.where(ankle, ankle_gain / 25, 200.0)))
    res = sys_.simulate(sys_.initial_state(), info["t_end"], method="dopri5", controller=law, dt=1e-3,
                        rtol=1e-6, atol=1e-8, store_every=1, p=p)
    if not res.ok:
        raise RuntimeError(res.message)
    assert res.element_forces is not None
    weight = weight_of(sys_)
    grf = {nm: res.element_forces[nm] for nm in CONTACTS}
    total = sum(grf.values())
    # one gait cycle (two steps) in the middle of the walk: the mean vertical reaction carries the weight
    t0, t1 = info["t_walk"]
    mid = 0.5 * (t0 + t1)
    window = (res.t >= mid - info["cycle"]) & (res.t <= mid + info["cycle"])
    ts = res.t[window]
    mean_vertical = float(np.trapezoid(total[window, 1], ts) / (ts[-1] - ts[0]))
    loaded = np.stack([grf[nm][:, 1] > LOAD_SHARE * weight for nm in CONTACTS], axis=1)
    info.update(weight=weight, mean_vertical=mean_vertical, distance=float(res.q[-1, 0] - res.q[0, 0]),
                hip_min=float(res.q[:, 1].min()), steps_taken=steps, evaluations=int(res.extra["evaluations"]),
                peak=float(total[:, 1].max()), loaded=loaded)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        figure(sys_, res, grf, total, loaded, info, os.path.join(out_dir, "exo5_step.png"))
    return res, info


def figure(sys_: rodgen.CompiledModel, res: SimulationResult, grf: dict[str, np.ndarray], total: np.ndarray,
           loaded: np.ndarray, info: dict[str, Any], path: str) -> None:
    fig = new_figure(14.0, 9.0)
    grid = fig.add_gridspec(3, 2, height_ratios=[3, 2, 1.2], width_ratios=[3, 1.3])
    ax = [fig.add_subplot(grid[0, 0])]
    ax += [fig.add_subplot(grid[1, 0], sharex=ax[0]), fig.add_subplot(grid[2, 0], sharex=ax[0]),
           fig.add_subplot(grid[:, 1])]
    for nm in CONTACTS:
        ax[0].plot(res.t, grf[nm][:, 1], lw=0.9, label=nm)
        ax[1].plot(res.t, grf[nm][:, 0], lw=0.9, label=nm)
    ax[0].plot(res.t, total[:, 1], "k", lw=1.2, label="sum")
    ax[0].axhline(info["weight"], color="k", ls="--", lw=0.8, label="weight")
    ax[0].set_ylabel("vertical GRF [N]")
    ax[0].legend(fontsize="small", ncol=3, loc="upper right")
    ax[1].plot(res.t, total[:, 0], "k", lw=1.0, label="sum")
    ax[1].set_ylabel("horizontal GRF [N]")
    ax[1].legend(fontsize="small", ncol=5, loc="lower right")
    for k, nm in enumerate(CONTACTS):          # the phases: which contacts carry load
        on = loaded[:, k]
        ax[2].fill_between(res.t, k - 0.4, k + 0.4, where=on, step="mid", color=f"C{k}", lw=0)
    ax[2].set_yticks(range(len(CONTACTS)), CONTACTS)
    ax[2].set_xlabel("t [s]")
    for a in ax[:3]:
        a.grid(True, alpha=0.3)
        a.set_xlim(res.t[0], res.t[-1])
    # stick figure: the links at every 0.25 s
    pts = sys_.points(res.q)
    chains = [["torso_b.end", "base"], ["base", "thigh_a_b.end", "shank_a_b.end"],
              ["base", "thigh_b_b.end", "shank_b_b.end"], ["heel_a", "foot_a.joint", "toe_a", "heel_a"],
              ["heel_b", "foot_b.joint", "toe_b", "heel_b"]]
    colours = ["k", "tab:blue", "tab:red", "tab:blue", "tab:red"]     # torso, leg a, leg b, foot a, foot b
    times = np.searchsorted(res.t, np.arange(res.t[0], res.t[-1], 0.25))
    for j, i in enumerate(times):
        shade = 0.25 + 0.6 * j / max(len(times) - 1, 1)
        for c, chain in enumerate(chains):
            xy = np.array([pts[nm][i] for nm in chain])
            ax[3].plot(xy[:, 0], xy[:, 1], color=colours[c], alpha=shade, lw=1.0)
    ax[3].axhline(0.0, color="k", lw=0.8)
    ax[3].set_aspect("equal")
    ax[3].set_title("every 0.25 s (leg a blue, leg b red)", fontsize="small")
    ax[3].set_xlabel("x [m]")
    ax[3].set_ylabel("y [m]")
    fig.suptitle(f"exo5 stepping on compliant heel/toe contacts: {info['steps_taken']} steps, "
                 f"{info['distance']:.2f} m; mean vertical GRF over a cycle {info['mean_vertical']:.0f} N, "
                 f"weight {info['weight']:.0f} N")
    fig.savefig(path, dpi=90)


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--stiffness", type=float, default=2e5, help="Hunt-Crossley stiffness k [N/m^1.5]")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, steps=a.steps, stiffness=a.stiffness)
    print(f"{info['steps_taken']} steps in {res.t[-1]:.2f} s ({info['evaluations']} RHS evaluations): walked "
          f"{info['distance']:.3f} m (planned {info['x_final']:.3f} m), lowest hip height {info['hip_min']:.3f} m; "
          f"mean vertical reaction over a gait cycle {info['mean_vertical']:.1f} N against a weight of "
          f"{info['weight']:.1f} N (peak {info['peak']:.0f} N)")
    print(f"wrote {os.path.join(a.out_dir, 'exo5_step.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
