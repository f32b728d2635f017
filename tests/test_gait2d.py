"""gait2d's human (examples/gait2d.yaml) and opty's human-gait problem on it (examples/gait2d_walk.py).

The model: its contact law against gait2d's formula evaluated by hand on hand-computed point kinematics,
and energy conservation with the contact reduced to its linear part (a spring y^2/2 at each point).
The optimum of the gait problem (backward Euler, 40 nodes): the collocation equations evaluated with the
compiled model's rhs, each interval resimulated with the compiled integrator, the half-cycle symmetry,
the average speed, and the objective recomputed from the trajectories."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen

pytest.importorskip("casadi")
from rodgen import optimize  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
POINTS = ["hip", "trunk_com", "r_knee", "r_ankle", "r_heel", "r_toe", "l_knee", "l_ankle", "l_heel", "l_toe"]


def _walk() -> Any:
    spec = importlib.util.spec_from_file_location("gait2d_walk", ROOT / "examples" / "gait2d_walk.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def human(build_dir: Path) -> Any:
    return rodgen.build(rodgen.load(ROOT / "examples" / "gait2d.yaml"), build_dir=build_dir)


def _points_by_hand(q: np.ndarray, p: dict[str, float]) -> dict[str, np.ndarray]:
    """gait2d's kinematics: frame angles summed from the trunk's, a frame's y axis from the distal joint to
    the proximal one, heel and toe at (hx, fy), (tx, fy) in the foot's frame."""
    qax, qay, qa, qb, qc, qd, qe, qf, qg = q

    def axes(th: float) -> tuple[np.ndarray, np.ndarray]:
        return np.array([math.cos(th), math.sin(th)]), np.array([-math.sin(th), math.cos(th)])

    hip = np.array([qax, qay])
    xa, ya_ = axes(qa)
    out = {"hip": hip, "trunk_com": hip + p["xa"] * xa + p["ya"] * ya_}
    for side, (t, s, f), (lt, ls, hx, tx, fy) in (("r", (qb, qc, qd), ("lb", "lc", "hxd", "txd", "fyd")),
                                                  ("l", (qe, qf, qg), ("le", "lf", "hxg", "txg", "fyg"))):
        _, yb = axes(qa + t)
        knee = hip - p[lt] * yb
        _, yc = axes(qa + t + s)
        ankle = knee - p[ls] * yc
        xd, yd = axes(qa + t + s + f)
        out.update({f"{side}_knee": knee, f"{side}_ankle": ankle, f"{side}_heel": ankle + p[hx] * xd + p[fy] * yd,
                    f"{side}_toe": ankle + p[tx] * xd + p[fy] * yd})
    return out


def test_contact_forces_are_gait2ds_law(human: Any) -> None:
    """At a state where the right heel is 4 mm under the ground and slides, and every other point is above
    it (pulled down by gait2d's -y term only), each element's force is gait2d's formula on positions and
    velocities computed by hand (velocities by central differences along the motion)."""
    p = dict(human.parameters)
    q = np.array([0.1, 0.93, 0.05, 0.2, -0.3, 0.1, -0.25, -0.1, 0.35])
    qd = np.array([1.2, -0.3, 0.4, -1.0, 0.5, 2.0, 1.5, -0.7, 0.3])
    q[1] -= _points_by_hand(q, p)["r_heel"][1] + 0.004        # the heel 4 mm deep
    pos = _points_by_hand(q, p)
    eps = 1e-6
    vel = {k: (_points_by_hand(q + eps * qd, p)[k] - _points_by_hand(q - eps * qd, p)[k]) / (2 * eps) for k in pos}
    assert pos["r_heel"][1] == pytest.approx(-0.004, abs=1e-12)
    assert all(pos[k][1] > 0 for k in POINTS if k != "r_heel")
    forces = human.contact_forces(q, qd)
    for k in POINTS:
        y, (vx, vy) = pos[k][1], vel[k]
        d = max(0.0, -y)
        fy = (p["kc"] * d**3 - y) * (1 - p["cc"] * vy)
        fx = -p["mu"] * fy * (2 / (1 + math.exp(-vx / p["vs"])) - 1)
        np.testing.assert_allclose(forces[f"contact_{k}"], [fx, fy], rtol=1e-8, atol=1e-9, err_msg=k)
    # the heel pushes up (kc d^3 = 3.2 N against the damping of its sinking)
    assert forces["contact_r_heel"][1] > 3.0


def test_energy_is_conserved_with_the_linear_contact(human: Any) -> None:
    """With kc = cc = mu = 0 gait2d's contact keeps its -y term: a spring of unit stiffness at each of the ten
    points. Without torques, kinetic + gravity + sum y^2/2 stays constant along a simulated motion."""
    p = human.parameter_vector(kc=0.0, cc=0.0, mu=0.0)
    pd = dict(zip(human.parameters, p))
    y0 = np.r_[0.0, 1.0, 0.1, 0.3, -0.4, 0.2, -0.2, -0.1, -0.1, 0.5, -0.2, 0.3, -1.0, 1.0, 0.5, 0.8, -0.5, 0.2]
    sim = human.simulate(y0, 1.0, 1e-4, p=p)
    kin, pot = human.energy(sim.q, sim.qd, p=p)
    springs = np.array([sum(0.5 * _points_by_hand(q, pd)[k][1] ** 2 for k in POINTS) for q in sim.q])
    total = kin + pot + springs
    assert np.ptp(kin) > 10.0                                   # the motion exchanges energy
    assert np.max(np.abs(total - total[0])) < 1e-6 * np.ptp(kin)


@pytest.mark.slow
def test_walk_at_1_2_m_s(human: Any, build_dir: Path) -> None:
    walk = _walk()
    speed, nodes = 1.2, 40
    nlp = optimize.compile_problem(walk.problem(human, speed=speed, nodes=nodes), build_dir=build_dir)
    res = nlp.solve(walk.stride_guess(nlp, speed=speed), {"tol": 1e-8, "max_iter": 3000})
    assert res.success, res.message
    T, h = res.duration, res.duration / (nodes - 1)
    assert 0.039 <= T <= 3.9
    # the average speed and the half-cycle symmetry
    assert (res.q[-1, 0] - res.q[0, 0]) / T == pytest.approx(speed, rel=1e-8)
    assert res.q[0, 0] == 0.0
    for a, b in (("qb", "qe"), ("qc", "qf"), ("qd", "qg")):
        i, j = walk.COORDINATES.index(a), walk.COORDINATES.index(b)
        for arr in (res.q, res.qd):
            assert arr[0, i] == pytest.approx(arr[-1, j], abs=1e-8)
            assert arr[0, j] == pytest.approx(arr[-1, i], abs=1e-8)
    for k in (1, 2):
        assert res.q[0, k] == pytest.approx(res.q[-1, k], abs=1e-8)
    np.testing.assert_allclose(res.qd[0, :3], res.qd[-1, :3], atol=1e-8)
    # the objective: h times the squared torques at every node but the first
    assert res.objective == pytest.approx(h * np.sum(res.u[1:] ** 2), rel=1e-10)
    # backward Euler's equations, with the compiled rhs: y_k+1 = y_k + h f(y_k+1, u_k+1)
    y = np.hstack([res.q, res.qd])
    f = np.array([human.rhs(0.0, y[k], res.u[k]) for k in range(nodes)])
    scale = np.max(np.abs(y), axis=0) + 1.0
    assert np.max(np.abs(y[1:] - y[:-1] - h * f[1:]) / scale) < 1e-7
    # each interval resimulated with the compiled integrator under its input: within backward Euler's local
    # error, h^2/2 max|y''| (y'' estimated from the change of f between the nodes, which the stiff contact
    # exceeds within an interval: up to 2.3 times here; a wrong defect would be off by O(h), 1/h = 130 times)
    ydd = np.diff(f, axis=0) / h
    err = []
    for k in range(nodes - 1):
        sim = human.simulate(y[k], h, h / 200, u=res.u[k + 1])
        err.append(np.abs(np.r_[sim.q[-1], sim.qd[-1]] - y[k + 1]))
    bound = 0.5 * h**2 * np.max(np.abs(ydd), axis=0)
    assert np.all(np.max(err, axis=0) <= 3.0 * bound)
