"""The five-link exoskeleton's periodic gait of least effort at 1 m/s, by multi-phase collocation.

    python examples/exo5_walk_optimal.py [OUT_DIR] [--nodes 15] [--refine 29]

examples/exo5_walk.yaml (free hip, thighs and shanks of variable length) walks one step of 0.5 m in 0.5 s:
one phase of single support on foot_a (the stance foot held: the constrained dynamics, the contact force in
its friction cone), the heel strike of foot_b (rodgen's plastic impact, the old stance foot leaving the
ground) and the legs relabelled a <-> b back to the phase's start, the hip 0.5 m further. The swing foot
stays above the ground. The objective is the effort: the integral of the four joint torques squared and the
four length forces squared (N m and N alike), the joint torques within 150 N m, the joints' rates within
10 rad/s, and a penalty on the inputs' rates (``MultiPhase(input_rate=0.01)``: without it the optimal inputs
alternate between nodes and midpoints, which the mesh does not resolve). With ``--refine N`` the solution is
refined on N nodes, started from the coarse one. 15 nodes take about 8 s with the build from the cache;
``--refine 29`` about 9 s more, and its intervals replay 20 times closer to the next node (docs/optimize.md).

The script prints which actuators carry the work (the integral of |power| of each: torque times relative
angular rate, length force times length rate), replays each interval with the compiled integrator from its
node (how far from the next node it ends), runs the compiled hybrid simulation from the optimum's start
under its inputs (open loop: where it locates foot_b's heel strike, if it does before the walker drifts off
the optimum) and writes OUT_DIR/exo5_walk_optimal.png.
"""
from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

import numpy as np

import rodgen
from rodgen import optimize

HERE = os.path.dirname(os.path.abspath(__file__))
STEP, SPEED = 0.5, 1.0
SIDES = ("a", "b")
RELABEL = {f"{k}_{a}{s}": f"{k}_{b}{s}" for a, b in (("a", "b"), ("b", "a"))
           for k, s in (("phi_thigh", ""), ("l_thigh", "_l"), ("phi_shank", ""), ("l_shank", "_l"))}


def foot_height(side: str) -> str:
    return (f"y + (l_thigh_{side}_l + b_thigh)*sin(phi_thigh_{side}) "
            f"+ (l_shank_{side}_l + b_shank)*sin(phi_shank_{side})")


def problem(model: Any, nodes: int = 15, torque: float = 150.0, input_rate: float = 0.01) -> optimize.MultiPhase:
    p = dict(model.parameters)
    bounds: dict[str, tuple[float, float]] = {}
    for s in SIDES:
        bounds[f"l_thigh_{s}_l"] = (p["l_thigh0"] - 0.06, p["l_thigh0"] + 0.06)
        bounds[f"l_shank_{s}_l"] = (p["l_shank0"] - 0.06, p["l_shank0"] + 0.06)
        bounds[f"phi_thigh_{s}"] = (-math.pi / 2 - 1.0, -math.pi / 2 + 1.0)
        bounds[f"phi_shank_{s}"] = (-math.pi / 2 - 1.0, -math.pi / 2 + 1.0)
    bounds["phi_torso"] = (math.pi / 2 - 0.6, math.pi / 2 + 0.3)
    bounds.update({f"{c}_dot": (-10.0, 10.0) for c in model.coordinates if c.startswith("phi")})
    bounds.update({u: (-torque, torque) if u.startswith("tau") else (-3000.0, 3000.0) for u in model.inputs})
    stance = optimize.Problem(model, nodes=nodes, duration=STEP / SPEED, method="hermite-simpson",
                              contacts=["foot_a"], objective=" + ".join(f"{u}**2" for u in model.inputs),
                              bounds=bounds, path=[(foot_height("b"), 0.0, math.inf)])
    return optimize.MultiPhase([stance], periodic=optimize.Periodic(touchdown=["foot_b"], relabel=RELABEL,
                                                                    shift={"x": STEP}), input_rate=input_rate)


def guess(model: Any, nlp: Any) -> np.ndarray:
    """Straight legs swinging through at a constant rate, the stance foot at the origin, the torso upright."""
    p = dict(model.parameters)
    L = p["l_thigh0"] + p["b_thigh"] + p["l_shank0"] + p["b_shank"]
    d = math.asin(STEP / 2 / L)
    ph = nlp.phases[0]
    T = STEP / SPEED
    t = np.linspace(0.0, T, ph.points)
    a = -math.pi / 2 + d - 2 * d * t / T
    b = -math.pi / 2 - d + 2 * d * t / T
    coords = list(model.coordinates)
    Q = np.zeros((len(t), len(coords)))
    Q[:, coords.index("x")] = -L * np.cos(a)
    Q[:, coords.index("y")] = -L * np.sin(a)
    Q[:, coords.index("phi_torso")] = math.pi / 2 - 0.1
    for s, ang in (("a", a), ("b", b)):
        Q[:, coords.index(f"phi_thigh_{s}")] = ang
        Q[:, coords.index(f"phi_shank_{s}")] = ang
        Q[:, coords.index(f"l_thigh_{s}_l")] = p["l_thigh0"]
        Q[:, coords.index(f"l_shank_{s}_l")] = p["l_shank0"] - (0.05 * np.sin(math.pi * t / T) if s == "b" else 0)
    Qd = np.gradient(Q, t, axis=0)
    Z = np.hstack([Q, Qd, np.zeros((len(t), model.nu))])
    return Z.ravel()


def work(result: Any) -> dict[str, float]:
    """Actuator -> the integral of |power| over the step (J): joint torques on the relative angular rate of
    the link and its parent (thigh: torso, shank: thigh), length forces on the variable part's rate."""
    r = result.phases[0]
    c = {n: i for i, n in enumerate(r.coordinates)}
    out = {}
    for k, u in enumerate(r.inputs):
        kind, part, side = u.split("_")[0], u.split("_")[1], u.split("_")[2]
        if kind == "tau":
            parent = "phi_torso" if part == "thigh" else f"phi_thigh_{side}"
            rate = r.qd[:, c[f"phi_{part}_{side}"]] - r.qd[:, c[parent]]
        else:
            rate = r.qd[:, c[f"l_{part}_{side}_l"]]
        out[u] = float(np.trapezoid(np.abs(r.u[:, k] * rate), r.t))
    return out


def simulate(model: Any, result: Any, extra: float = 0.02) -> Any:
    """The compiled hybrid simulation from the optimum's start under its inputs (linear between the points),
    foot_a held, foot_b's touchdown located (armed once 1 cm above the ground)."""
    r = result.phases[0]
    y0 = np.concatenate([r.q[0], r.qd[0]])
    return model.simulate(y0, r.duration + extra, 2e-4, u=r.inputs_table(), contacts=["foot_a"],
                          disarmed=["foot_b"], arm_gap=0.01, event_tol=1e-12)


def replay(model: Any, result: Any, samples: int = 20, steps: int = 40) -> np.ndarray:
    """Each interval simulated by the compiled hybrid integrator (RK4, ``steps`` steps) from its first node under
    the transcription's own input (``inputs_table(samples)``), foot_a held (its friction raised so that the
    replay tests the dynamics, not the cone: the cone is a constraint of the problem) and foot_b disarmed:
    per interval, the largest difference of the states at the next node (rad, m, rad/s, m/s)."""
    from rodgen.runtime import InputTable
    r = result.phases[0]
    table = r.inputs_table(samples=samples)
    p = dict(model.parameters)
    p["mu"] = 1e3
    err = []
    for k in range(0, len(r.t) - 2, 2):
        t0, h = r.t[k], r.t[k + 2] - r.t[k]
        inside = (table.t >= t0 - 1e-12) & (table.t <= t0 + h + 1e-12)
        u = InputTable(table.t[inside] - t0, table.u[inside])
        sim = model.simulate(np.concatenate([r.q[k], r.qd[k]]), h, h / steps, u=u, p=p, contacts=["foot_a"],
                             disarmed=["foot_b"])
        err.append(float(np.abs(np.concatenate([sim.q[-1] - r.q[k + 2], sim.qd[-1] - r.qd[k + 2]])).max()))
    return np.array(err)


def build(build_dir: Any = None) -> Any:
    return rodgen.build(rodgen.load(os.path.join(HERE, "exo5_walk.yaml")), build_dir=build_dir)


def solve(model: Any, nodes: int = 15, build_dir: Any = None, options: Any = None, previous: Any = None,
          torque: float = 150.0, input_rate: float = 0.01) -> Any:
    """The step on ``nodes`` nodes, from the straight-leg guess or from a ``previous`` result (a coarser mesh's,
    interpolated: a refinement)."""
    nlp = problem(model, nodes, torque, input_rate).compile(build_dir=build_dir)
    x0 = guess(model, nlp) if previous is None else nlp.guess(previous)
    return nlp.solve(x0, options=dict(options or {"tol": 1e-8, "max_iter": 3000}))


def figure(result: Any, path: str) -> None:
    from rodgen.runtime.plot import new_figure
    r = result.phases[0]
    fig = new_figure(10, 4)
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for k, u in enumerate(r.inputs):
        (ax1 if u.startswith("tau") else ax2).plot(r.t, r.u[:, k], label=u)
    ax1.set_ylabel("joint torque [N m]")
    ax2.set_ylabel("length force [N]")
    for ax in (ax1, ax2):
        ax.set_xlabel("t [s]")
        ax.legend(fontsize=7)
    fig.suptitle("exo5_walk: least-effort step at 1 m/s (stance foot_a)")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--nodes", type=int, default=15)
    ap.add_argument("--refine", type=int, default=0, help="refine on this many nodes from the coarse solution")
    args = ap.parse_args()
    start = time.perf_counter()
    model = build()
    res = solve(model, args.nodes)
    print(f"{res.message}: effort {res.objective:.6g} in {res.iterations} iterations, "
          f"{time.perf_counter() - start:.1f} s with the build")
    if args.refine:
        start = time.perf_counter()
        res = solve(model, args.refine, previous=res)
        print(f"refined on {args.refine} nodes: {res.message}: effort {res.objective:.6g} in {res.iterations} "
              f"iterations, {time.perf_counter() - start:.1f} s")
    err = replay(model, res)
    print(f"each interval replayed from its node: {err.min():.2g} to {err.max():.2g} from the next node")
    w = work(res)
    total = sum(w.values())
    for u, v in sorted(w.items(), key=lambda kv: -kv[1]):
        print(f"  {u:14s} integral |power| {v:8.3f} J  ({100 * v / total:4.1f} %)")
    torques = sum(v for u, v in w.items() if u.startswith("tau"))
    share = 100 * torques / total
    print(f"joint torques carry {share:.1f} % of the work, length forces {100 - share:.1f} %")
    print(f"impulse of the heel strike (tangential, normal): {res.impulses[0]['foot_b']} N s")
    sim = simulate(model, res)
    td = [e for e in sim.events if e["kind"] == "touchdown"]
    print(f"hybrid simulation: heel strike of {td[0]['block'] if td else 'nothing'} at "
          f"{td[0]['t'] if td else float('nan'):.4f} s (optimum {res.duration:.4f} s)")
    if sim.events and sim.events[0]["kind"] != "touchdown":
        # the optimum holds foot_a's force on its friction cone's edge: the simulator's strict test may call it
        # a slip at the start and stop there
        e = sim.events[0]
        print(f"  first event: {e['kind']} of {e.get('block')} at {e['t']:.4f} s; the simulation {sim.message}")
    figure(res, os.path.join(args.out_dir, "exo5_walk_optimal.png"))


if __name__ == "__main__":
    main()
