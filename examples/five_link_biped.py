"""Kelly's five-link biped: the periodic walking gait of least torque squared (Kelly 2017, SIAM Review).

examples/five_link_biped.yaml is RABBIT pinned at its stance foot (absolute link angles q1..q5, Kelly's).
One step of 0.7 s and 0.5 m is one phase of collocation; the heel strike joins its last node to its first
as boundary constraints, as in Kelly's OptimTraj demo/fiveLinkBiped:

* the legs swap: q+ = (q5, q4, q3, q2, q1)- (Kelly's cst_heelStrike),
* the plastic impact of the swing foot, the old stance foot leaving the ground: five balances of angular
  momentum before and after (about the new stance foot for the whole robot, about the new stance knee
  without the new stance tibia, about the hip for the torso and the legs, for the trailing leg, and about
  the trailing knee for its tibia: Kelly's Derive_Equations.m, heelStrikeDynamics),
* the swing foot lands 0.5 m ahead on the ground (cst_stepLength), leaves it upwards and arrives downwards
  (cst_footVel), and the knees do not hyperextend (pathConstraint: q1 <= q2, q5 <= q4),

with Kelly's bounds (|q| <= pi/2, |qd| <= 10 rad/s, |u| <= 100 N m, no ankle torque). The equations of the
impact are written here from Kelly's kinematics (each angular momentum a sum of cos(q_a - q_b) q_b' terms),
independently of rodgen's derivation.

With ``--free`` the same gait is found on examples/five_link_biped_free.yaml (the hip free, two point feet
as contacts) by multi-phase collocation: foot_a held, foot_b's heel strike by the model's own impact map,
the legs relabelled; only the foot's velocities, the knees, the bounds and the start's place are stated
(:func:`multiphase`). It reaches the same optimum.

    python examples/five_link_biped.py [OUT_DIR] [--nodes 25] [--method hermite-simpson] [--free]

Writes OUT_DIR/five_link_biped.png (the torques, and the step as stick figures; not with ``--free``).
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
from rodgen.model.loader import load

HERE = os.path.dirname(os.path.abspath(__file__))
STEP_LENGTH = 0.5
STEP_TIME = 0.7
#: Kelly's initial guess (MAIN.m): the pose after heel strike, and the legs swapped at the end
Q0 = (-0.3, 0.7, 0.0, -0.5, -0.6)
INPUTS = ("tau_stance_femur", "tau_torso", "tau_swing_femur", "tau_swing_tibia")


#: Kelly's link directions e_k = SIGN[k] (-sin q_k, cos q_k): the stance leg and the torso point up from
#: their proximal joint, the swing leg down
SIGN = (1, 1, 1, -1, -1)


def kelly_points(p: dict[str, float]) -> dict[str, dict[int, float]]:
    """Kelly's points (Derive_Equations.m) relative to the stance foot P0, as {link k: coefficient of e_k}:
    the joints P1..P5 (knee, hip, shoulders, swing knee, swing foot) and the CoMs G1..G5."""
    l = [p["l_tibia"], p["l_femur"], p["l_torso"], p["l_femur"], p["l_tibia"]]
    c = [p["c_tibia"], p["c_femur"], p["c_torso"], p["c_femur"], p["c_tibia"]]
    P1, P2 = {0: l[0]}, {0: l[0], 1: l[1]}
    P3, P4 = {**P2, 2: l[2]}, {**P2, 3: l[3]}
    P5 = {**P4, 4: l[4]}
    G = [{0: l[0] - c[0]}, {0: l[0], 1: l[1] - c[1]}, {**P2, 2: l[2] - c[2]}, {**P2, 3: c[3]}, {**P4, 4: c[4]}]
    return {"P1": P1, "P2": P2, "P3": P3, "P4": P4, "P5": P5, **{f"G{i + 1}": g for i, g in enumerate(G)}}


def _minus(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    return {k: a.get(k, 0.0) - b.get(k, 0.0) for k in sorted(set(a) | set(b))}


def momentum(p: dict[str, float], links: tuple[int, ...], about: dict[int, float]) -> dict[tuple[int, int], float]:
    """Kelly's angular momentum of ``links`` about the point ``about`` (of :func:`kelly_points`), as
    {(a, b): coefficient of cos(q_a - q_b) q_b'} (a == b: of q_b' alone)."""
    pts = kelly_points(p)
    m = [p["m_tibia"], p["m_femur"], p["m_torso"], p["m_femur"], p["m_tibia"]]
    inertia = [p["I_tibia"], p["I_femur"], p["I_torso"], p["I_femur"], p["I_tibia"]]
    out: dict[tuple[int, int], float] = {}
    for i in links:
        G = pts[f"G{i + 1}"]
        # (G - O) x m dG, with e_a x de_b/dq_b = SIGN_a SIGN_b cos(q_a - q_b)
        for a, ra in _minus(G, about).items():
            for b, gb in G.items():
                out[(a, b)] = out.get((a, b), 0.0) + m[i] * ra * gb * SIGN[a] * SIGN[b]
        out[(i, i)] = out.get((i, i), 0.0) + inertia[i]
    return out


def _text(h: dict[tuple[int, int], float], end: str, sign: float = 1.0) -> list[str]:
    """The terms of a momentum of :func:`momentum` at the node ``end`` (``start``, ``end``)."""
    terms = []
    for (a, b), c in sorted(h.items()):
        if c != 0.0:
            trig = "" if a == b else f"*cos(q{a + 1}_{end} - q{b + 1}_{end})"
            terms.append(f"{sign * c!r}{trig}*q{b + 1}_dot_{end}")
    return terms


def step_constraints(model: Any) -> list[tuple[str, float, float]]:
    """Kelly's step constraints (stepConstraint.m) as boundary constraints in ``q<i>_start``, ``q<i>_end``,
    ``q<i>_dot_start``, ``q<i>_dot_end``: the swap, the heel strike, the step length, the foot's velocity."""
    return step_constraints_for(dict(model.parameters))


def step_constraints_for(p: dict[str, float]) -> list[tuple[str, float, float]]:
    """:func:`step_constraints` for the parameter values ``p``."""
    P = kelly_points(p)
    P0: dict[int, float] = {}
    # the links before the impact and the point (the new stance foot P5, its knee P4, the hip), the same links
    # relabelled after it and their point
    balances = [((0, 1, 2, 3, 4), P["P5"], (0, 1, 2, 3, 4), P0), ((0, 1, 2, 3), P["P4"], (1, 2, 3, 4), P["P1"]),
                ((0, 1, 2), P["P2"], (2, 3, 4), P["P2"]), ((0, 1), P["P2"], (3, 4), P["P2"]),
                ((0,), P["P1"], (4,), P["P4"])]
    out = [(f"q{i + 1}_start - q{5 - i}_end", 0.0, 0.0) for i in range(5)]
    for before, o_before, after, o_after in balances:
        terms = _text(momentum(p, before, o_before), "end") + _text(momentum(p, after, o_after), "start", -1.0)
        out.append((_balanced(terms), 0.0, 0.0))
    foot = P["P5"]
    x = " + ".join(f"{-SIGN[k] * c!r}*sin(q{k + 1}_end)" for k, c in foot.items())
    y = " + ".join(f"{SIGN[k] * c!r}*cos(q{k + 1}_end)" for k, c in foot.items())

    def vy(end: str) -> str:
        return " + ".join(f"{-SIGN[k] * c!r}*sin(q{k + 1}_{end})*q{k + 1}_dot_{end}" for k, c in foot.items())

    out += [(x, STEP_LENGTH, STEP_LENGTH), (y, 0.0, 0.0)]
    out += [(vy("start"), 0.0, math.inf), (vy("end"), -math.inf, 0.0)]
    return out


def _balanced(terms: list[str]) -> str:
    """``a + b + c + d`` as ``((a) + (b)) + ((c) + (d))``: nested as deep as log2 of the terms."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({_balanced(terms[:half])}) + ({_balanced(terms[half:])})"


#: Kelly's knees: they do not hyperextend (pathConstraint.m)
KNEES = [("q1 - q2", -math.inf, 0.0), ("q5 - q4", -math.inf, 0.0)]


def kelly_bounds(inputs: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """Kelly's bounds (MAIN.m): |q| <= pi/2, |qd| <= 10 rad/s, |u| <= 100 N m for the torques ``inputs``."""
    bounds: dict[str, tuple[float, float]] = {f"q{i}": (-math.pi / 2, math.pi / 2) for i in range(1, 6)}
    bounds.update({f"q{i}_dot": (-10.0, 10.0) for i in range(1, 6)})
    bounds.update({u: (-100.0, 100.0) for u in inputs})
    return bounds


def problem(model: Any, nodes: int = 25, method: str = "hermite-simpson") -> optimize.Problem:
    """Kelly's problem (MAIN.m) on the compiled model."""
    return optimize.Problem(model, nodes=nodes, duration=STEP_TIME, method=method,
                            objective=" + ".join(f"{u}**2" for u in INPUTS), bounds=kelly_bounds(INPUTS),
                            path=KNEES, boundary=step_constraints(model))


def kelly_path(points: int) -> tuple[np.ndarray, np.ndarray]:
    """Kelly's guess of the angles q1..q5 at ``points`` points: linear from Q0 to its mirror image, and their
    constant rates: (Q, W), each (points, 5)."""
    q0 = np.array(Q0)
    s = np.linspace(0.0, 1.0, points)[:, None]
    return q0 + (q0[::-1] - q0) * s, np.tile((q0[::-1] - q0) / STEP_TIME, (points, 1))


def guess(nlp: Any) -> np.ndarray:
    """Kelly's guess: the angles linear from Q0 to its mirror image, constant rates, no torque."""
    Q, W = kelly_path(nlp.points)
    return np.hstack([Q, W, np.zeros((nlp.points, len(INPUTS)))]).ravel()


def kelly_point(p: dict[str, float], name: str, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position and velocity of Kelly's point ``name`` (:func:`kelly_points`) from the stance foot, at the
    angles ``q`` and rates ``qd`` (their last axis q1..q5): ((..., 2), (..., 2))."""
    pos, vel = np.zeros(q.shape[:-1] + (2,)), np.zeros(q.shape[:-1] + (2,))
    for k, c in kelly_points(p)[name].items():
        s, co = np.sin(q[..., k]), np.cos(q[..., k])
        pos += SIGN[k] * c * np.stack([-s, co], axis=-1)
        vel += SIGN[k] * c * np.stack([-co, -s], axis=-1) * qd[..., k:k + 1]
    return pos, vel


def build(build_dir: Any = None) -> Any:
    return rodgen.build(load(os.path.join(HERE, "five_link_biped.yaml")), build_dir=build_dir)


def solve(model: Any, nodes: int = 25, method: str = "hermite-simpson", build_dir: Any = None,
          options: Any = None) -> Any:
    nlp = optimize.compile_problem(problem(model, nodes, method), build_dir=build_dir)
    return nlp.solve(guess(nlp), options=dict(options or {"tol": 1e-8}))


#: The floating model's torques (examples/five_link_biped_free.yaml): at the hips and the knees of legs a, b
FREE_INPUTS = ("tau_femur_a", "tau_tibia_a", "tau_femur_b", "tau_tibia_b")
#: The heel strike's leg swap in the floating model's names: leg a (Kelly's q1, q2) <-> leg b (q5, q4)
RELABEL = {"q1": "q5", "q5": "q1", "q2": "q4", "q4": "q2"}


def build_free(build_dir: Any = None) -> Any:
    return rodgen.build(load(os.path.join(HERE, "five_link_biped_free.yaml")), build_dir=build_dir)


def multiphase(free: Any, nodes: int = 25, method: str = "hermite-simpson") -> optimize.MultiPhase:
    """Kelly's problem on the floating model: one phase with foot_a held, foot_b's heel strike by the model's
    own impact map (``Periodic(touchdown=["foot_b"])``: foot_a leaves the ground), the legs relabelled and the
    hip 0.5 m ahead. What Kelly writes by hand follows from it: the swap, the five momentum balances, the
    landing on the ground and the step length. Left to state: the foot's velocities at the ends, the knees,
    Kelly's bounds, and foot_a at the origin at the start (the gait's place along the ground)."""
    l_f, l_t = "l_femur", "l_tibia"

    def vy(end: str) -> str:                                    # foot_b's vertical velocity
        return f"y_dot_{end} + {l_f}*sin(q4_{end})*q4_dot_{end} + {l_t}*sin(q5_{end})*q5_dot_{end}"

    bounds = kelly_bounds(FREE_INPUTS)
    bounds.update({"x": (-1.0, 1.0), "y": (0.0, 1.0)})         # the hip: its place follows from the held foot
    stance = optimize.Problem(
        free, nodes=nodes, duration=STEP_TIME, method=method, contacts=["foot_a"],
        objective=" + ".join(f"{u}**2" for u in FREE_INPUTS), bounds=bounds, path=KNEES,
        boundary=[(f"x_start + {l_f}*sin(q2_start) + {l_t}*sin(q1_start)", 0.0, 0.0),
                  (vy("start"), 0.0, math.inf), (vy("end"), -math.inf, 0.0)])
    return optimize.MultiPhase([stance], periodic=optimize.Periodic(touchdown=["foot_b"], relabel=RELABEL,
                                                                    shift={"x": STEP_LENGTH}))


def free_guess(nlp: Any) -> np.ndarray:
    """:func:`guess` for the floating model: the hip placed by the stance leg from the foot at the origin."""
    points = nlp.phases[0].points
    Q, W = kelly_path(points)
    hip, hip_rate = kelly_point(dict(nlp.problem.phases[0].model.parameters), "P2", Q, W)
    order = [2, 1, 0, 3, 4]                                     # the floating model's q3, q2, q1, q4, q5
    return np.hstack([hip, Q[:, order], hip_rate, W[:, order], np.zeros((points, len(FREE_INPUTS)))]).ravel()


def solve_free(free: Any, nodes: int = 25, method: str = "hermite-simpson", build_dir: Any = None,
               options: Any = None) -> Any:
    nlp = multiphase(free, nodes, method).compile(build_dir=build_dir)
    return nlp.solve(free_guess(nlp), options=dict(options or {"tol": 1e-8}))


def figure(result: Any, path: str) -> None:
    """The torques over the step, and the robot drawn at a dozen instants (Kelly's points)."""
    from rodgen.runtime.plot import new_figure
    p = dict(result.nlp.problem.model.parameters)
    fig = new_figure(10, 4)
    ax1 = fig.add_subplot(1, 2, 1)
    for k, name in enumerate(INPUTS):
        ax1.plot(result.t, result.u[:, k], label=name)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("torque [N m]")
    ax1.legend(fontsize=8)
    ax2 = fig.add_subplot(1, 2, 2)

    def at(q: np.ndarray, point: str) -> tuple[float, float]:
        x, y = kelly_point(p, point, q, np.zeros_like(q))[0]
        return float(x), float(y)

    n = len(result.t)
    for j in range(0, n, max(1, n // 12)):
        q = result.q[j]
        chain = [(0.0, 0.0)] + [at(q, k) for k in ("P1", "P2", "P3", "P2", "P4", "P5")]
        xy = np.array(chain)
        ax2.plot(xy[:, 0], xy[:, 1], "-o", color=(j / n, 0.3, 1 - j / n), ms=2)
    ax2.axhline(0.0, color="0.5", lw=0.8)
    ax2.set_aspect("equal")
    ax2.set_xlabel("x [m]")
    ax2.set_ylabel("y [m]")
    ax2.set_title("one step, blue: start, red: end")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--nodes", type=int, default=25)
    ap.add_argument("--method", default="hermite-simpson", choices=list(optimize.METHODS))
    ap.add_argument("--free", action="store_true",
                    help="the floating model, its heel strike the model's own impact map (optimize.MultiPhase)")
    args = ap.parse_args()
    start = time.perf_counter()
    if args.free:
        rf = solve_free(build_free(), args.nodes, args.method)
        print(f"{rf.message}: integral of torque squared {rf.objective:.6g} N^2 m^2 s in {rf.iterations} "
              f"iterations, {time.perf_counter() - start:.2f} s with the build (solve {rf.solve_seconds:.3f} s); "
              f"foot_b's impulse {rf.impulses[0]['foot_b'].round(3)} N s")
        return
    model = build()
    r = solve(model, args.nodes, args.method)
    print(f"{r.message}: integral of torque squared {r.objective:.6g} N^2 m^2 s in {r.iterations} iterations, "
          f"{time.perf_counter() - start:.2f} s with the build (solve {r.solve_seconds:.3f} s)")
    figure(r, os.path.join(args.out_dir, "five_link_biped.png"))


if __name__ == "__main__":
    main()
