"""Kelly's five-link biped (examples/five_link_biped.py): the model against Kelly's equations of motion
written independently (a Lagrangian of his kinematics in CasADi), the NLP's Jacobian against central
differences, the gait of least torque squared against the same NLP written and differentiated by CasADi,
and the solution's step conditions, knee limits and resimulation."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("casadi")
import casadi as ca  # noqa: E402

from rodgen import optimize  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import five_link_biped as flb  # noqa: E402


@pytest.fixture(scope="module")
def biped(build_dir: Path) -> Any:
    return flb.build(build_dir)


def kelly_dynamics(p: dict[str, float]) -> ca.Function:
    """q'' of Kelly's biped from his kinematics (Derive_Equations.m: absolute angles, CoMs G1..G5, the
    torque u_k between link k and its parent, u1 = 0), by Lagrange's equations in CasADi."""
    q, dq, u = ca.SX.sym("q", 5), ca.SX.sym("dq", 5), ca.SX.sym("u", 4)
    pts = flb.kelly_points(p)
    m = [p["m_tibia"], p["m_femur"], p["m_torso"], p["m_femur"], p["m_tibia"]]
    inertia = [p["I_tibia"], p["I_femur"], p["I_torso"], p["I_femur"], p["I_tibia"]]

    def point(coeffs: dict[int, float]) -> Any:
        return ca.vertcat(sum(-flb.SIGN[k] * c * ca.sin(q[k]) for k, c in coeffs.items()),
                          sum(flb.SIGN[k] * c * ca.cos(q[k]) for k, c in coeffs.items()))

    T = V = 0
    for i in range(5):
        G = point(pts[f"G{i + 1}"])
        v = ca.jtimes(G, q, dq)
        T += 0.5 * m[i] * ca.dot(v, v) + 0.5 * inertia[i] * dq[i] ** 2
        V += m[i] * p["g"] * G[1]
    M = ca.jacobian(ca.gradient(T, dq), dq)
    # d/dt dT/dqd - dT/dq + dV/dq = B u; the parent of link 4 (swing femur) is the torso (3)
    bias = ca.jtimes(ca.gradient(T, dq), q, dq) - ca.gradient(T, q) + ca.gradient(V, q)
    B = ca.SX.zeros(5, 4)
    for j, (child, parent) in enumerate(((1, 0), (2, 1), (3, 2), (4, 3))):
        B[child, j], B[parent, j] = 1, -1
    return ca.Function("qdd", [q, dq, u], [ca.solve(M, B @ u - bias)])


def test_model_matches_kelly_equations_of_motion(biped: Any) -> None:
    """rodgen's accelerations of the YAML model equal those of Kelly's kinematics by Lagrange (CasADi) at
    random states and torques: the CoM convention (distances from the joint nearer the shoulders), the
    inertias and the joint torques between parent and child are Kelly's."""
    f = kelly_dynamics(dict(biped.parameters))
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd, u = rng.uniform(-1, 1, 5), rng.uniform(-3, 3, 5), rng.uniform(-50, 50, 4)
        ours = np.asarray(biped.rhs(0.0, np.concatenate([q, qd]), u=u))[5:]
        np.testing.assert_allclose(ours, np.asarray(f(q, qd, u)).ravel(), rtol=1e-10, atol=1e-9)


def test_biped_nlp_jacobian_matches_central_differences(biped: Any, build_dir: Path) -> None:
    """The constraint Jacobian of the biped's NLP (defects, knee limits, the heel strike and the step
    conditions between the last and the first node) and the objective's gradient against central
    differences at random points."""
    nlp = optimize.compile_problem(flb.problem(biped, nodes=5), build_dir=build_dir)
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = flb.guess(nlp) + rng.normal(0, 0.2, nlp.n)
        J = nlp.jacobian(x).toarray()
        h = 1e-6
        fd = np.empty_like(J)
        for k in range(nlp.n):
            e = np.zeros(nlp.n)
            e[k] = h
            fd[:, k] = (nlp.constraints(x + e) - nlp.constraints(x - e)) / (2 * h)
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))
        g = np.array([(nlp.objective(x + h * e) - nlp.objective(x - h * e)) / (2 * h) for e in np.eye(nlp.n)])
        np.testing.assert_allclose(nlp.gradient(x), g, rtol=1e-6, atol=1e-5)


def casadi_gait(p: dict[str, float], nodes: int, x0: np.ndarray) -> tuple[float, np.ndarray]:
    """The same trapezoidal NLP as rodgen's (variables [q, qd, u] per node), Kelly's dynamics and CasADi's
    derivatives, the step constraints' text evaluated as CasADi expressions; (objective, x)."""
    f = kelly_dynamics(p)
    nz = 14
    X = ca.SX.sym("x", nodes * nz)
    Z = [X[k * nz:(k + 1) * nz] for k in range(nodes)]
    h = flb.STEP_TIME / (nodes - 1)
    acc = [f(z[:5], z[5:10], z[10:]) for z in Z]
    g, lbg, ubg = [], [], []
    J = 0
    for k in range(nodes - 1):
        a, b = Z[k], Z[k + 1]
        g += [b[:5] - a[:5] - h / 2 * (a[5:10] + b[5:10]), b[5:10] - a[5:10] - h / 2 * (acc[k] + acc[k + 1])]
        lbg += [0.0] * 10
        ubg += [0.0] * 10
        J += h / 2 * (ca.sumsqr(a[10:]) + ca.sumsqr(b[10:]))
    for z in Z:
        g += [z[0] - z[1], z[4] - z[3]]
        lbg += [-ca.inf, -ca.inf]
        ubg += [0.0, 0.0]
    env: dict[str, Any] = {"sin": ca.sin, "cos": ca.cos}
    for i in range(5):
        for end, z in (("start", Z[0]), ("end", Z[-1])):
            env[f"q{i + 1}_{end}"], env[f"q{i + 1}_dot_{end}"] = z[i], z[5 + i]
    for text, lo, hi in flb.step_constraints_for(p):
        g.append(eval(text, {"__builtins__": {}}, env))  # noqa: S307 -- our own arithmetic text
        lbg.append(lo)
        ubg.append(hi)
    lo1 = [-math.pi / 2] * 5 + [-10.0] * 5 + [-100.0] * 4
    solver = ca.nlpsol("s", "ipopt", {"x": X, "f": J, "g": ca.vertcat(*g)},
                       {"ipopt": {"print_level": 0, "tol": 1e-10}, "print_time": False})
    r = solver(x0=x0, lbx=lo1 * nodes, ubx=[-v for v in lo1] * nodes, lbg=lbg, ubg=ubg)
    assert solver.stats()["success"], solver.stats()["return_status"]
    return float(r["f"]), np.asarray(r["x"]).ravel()


@pytest.fixture(scope="module")
def gait(biped: Any, build_dir: Path) -> Any:
    nlp = optimize.compile_problem(flb.problem(biped, nodes=25, method="trapezoidal"), build_dir=build_dir)
    return nlp, nlp.solve(flb.guess(nlp), options={"tol": 1e-10})


def test_gait_matches_the_same_nlp_in_casadi(biped: Any, gait: Any) -> None:
    """Kelly's gait of least torque squared (25 trapezoidal nodes) reaches the optimum of the same NLP built
    from Kelly's own equations of motion with CasADi, from the same guess."""
    nlp, r = gait
    assert r.success, r.message
    J, x = casadi_gait(dict(biped.parameters), 25, flb.guess(nlp))
    assert abs(r.objective - J) < 1e-7 * J
    np.testing.assert_allclose(np.hstack([r.q, r.qd, r.u]).ravel(), x, atol=1e-5)


@pytest.fixture(scope="module")
def free(build_dir: Path) -> Any:
    return flb.build_free(build_dir)


def test_gait_through_the_models_own_impact_map_is_kellys(free: Any, gait: Any, build_dir: Path) -> None:
    """The same gait stated on the floating model (examples/five_link_biped_free.yaml: the hip free, two
    point feet) as multi-phase collocation, foot_a held and foot_b's heel strike by rodgen's impact map
    (``Periodic``: the legs relabelled, the hip a step ahead), reaches the optimum of Kelly's hand-written
    step constraints on the pinned model (the same 25 trapezoidal nodes, the same guess): the generated map
    gives Kelly's five momentum balances, the held foot his pinned ankle. The heel strike's impulse pushes
    and lies in a cone of mu = 0.6; the old stance foot leaves the ground upwards."""
    nlp, ref = gait
    mp = flb.multiphase(free, nodes=25, method="trapezoidal").compile(build_dir=build_dir)
    r = mp.solve(flb.free_guess(mp), options={"tol": 1e-10})
    assert r.success, r.message
    assert abs(r.objective - ref.objective) < 1e-7 * ref.objective, (r.objective, ref.objective)
    ph, order = r.phases[0], [2, 1, 0, 3, 4]                   # the floating model's q3, q2, q1, q4, q5
    np.testing.assert_allclose(ph.q[:, 2:], ref.q[:, order], atol=1e-6)
    np.testing.assert_allclose(ph.qd[:, 2:], ref.qd[:, order], atol=1e-5)
    # the pinned model's torques act on the child against the parent up the stance leg, the floating one's
    # down from the torso: the stance leg's two change sign
    np.testing.assert_allclose(ph.u, ref.u[:, [1, 0, 2, 3]] * [-1, -1, 1, 1], atol=1e-4)
    ft, fn = r.impulses[0]["foot_b"]
    assert fn > 0 and abs(ft) < 0.6 * fn
    assert free.constraint_jacobian(ph.q[0])[1] @ ph.qd[0] > 0   # foot_a's vertical velocity after the strike


def test_gait_step_conditions_and_knees(biped: Any, gait: Any) -> None:
    """At the optimum: the legs swap through the heel strike, the swing foot lands 0.5 m ahead on the ground
    moving down and leaves moving up, the knees do not hyperextend, the post-impact rates conserve Kelly's
    five angular momenta (his impact map solved here with NumPy)."""
    _, r = gait
    p = dict(biped.parameters)
    q0, qf, qd0, qdf = r.q[0], r.q[-1], r.qd[0], r.qd[-1]
    np.testing.assert_allclose(q0, qf[::-1], atol=1e-9)
    pts = flb.kelly_points(p)

    def foot(q: np.ndarray) -> np.ndarray:
        return np.array([sum(-flb.SIGN[k] * c * math.sin(q[k]) for k, c in pts["P5"].items()),
                         sum(flb.SIGN[k] * c * math.cos(q[k]) for k, c in pts["P5"].items())])

    np.testing.assert_allclose(foot(qf), [flb.STEP_LENGTH, 0.0], atol=1e-9)
    assert np.all(r.q[:, 0] <= r.q[:, 1] + 1e-7) and np.all(r.q[:, 4] <= r.q[:, 3] + 1e-7)
    # the impact map: A(q+) qd+ = b(q-, qd-), five momentum balances linear in the post-impact rates
    balances = [((0, 1, 2, 3, 4), "P5", (0, 1, 2, 3, 4), None), ((0, 1, 2, 3), "P4", (1, 2, 3, 4), "P1"),
                ((0, 1, 2), "P2", (2, 3, 4), "P2"), ((0, 1), "P2", (3, 4), "P2"), ((0,), "P1", (4,), "P4")]
    A, b = np.zeros((5, 5)), np.zeros(5)
    for row, (before, ob, after, oa) in enumerate(balances):
        for (i, j), c in flb.momentum(p, before, pts[ob]).items():
            b[row] += c * math.cos(qf[i] - qf[j]) * qdf[j]
        for (i, j), c in flb.momentum(p, after, pts[oa] if oa else {}).items():
            A[row, j] += c * math.cos(q0[i] - q0[j])
    np.testing.assert_allclose(qd0, np.linalg.solve(A, b), atol=1e-8)


def test_hermite_simpson_gait_resimulated_interval_by_interval(biped: Any, build_dir: Path) -> None:
    """The example's Hermite-Simpson gait: each interval replayed by the compiled RK4 integrator from its
    first node under the solution's inputs reaches the next node to the collocation's accuracy, and the
    error falls by more than 4 when the mesh is halved (the open-loop walker is unstable, so the whole step
    replayed at once drifts further); the optimum moves by less than 1e-5 relative."""
    from rodgen.runtime import InputTable
    out = []
    for nodes in (25, 49):
        r = flb.solve(biped, nodes, build_dir=build_dir, options={"tol": 1e-10})
        assert r.success, r.message
        err = 0.0
        for k in range(0, len(r.t) - 2, 2):         # node to node (the midpoints in between)
            h = r.t[k + 2] - r.t[k]
            sim = biped.simulate(np.concatenate([r.q[k], r.qd[k]]), h, h / 40,
                                 u=InputTable(r.t[k:k + 3] - r.t[k], r.u[k:k + 3]))
            err = max(err, float(np.abs(np.concatenate([sim.q[-1] - r.q[k + 2], sim.qd[-1] - r.qd[k + 2]])).max()))
        out.append((r.objective, err))
    (J25, e25), (J49, e49) = out
    assert e25 < 1e-3 and e49 < e25 / 4, out
    assert abs(J49 - J25) < 1e-5 * J49, out


def test_gait_stance_foot_force_within_a_friction_cone(biped: Any, build_dir: Path) -> None:
    """The ground's force on the stance foot along the example's gait (Kelly's contactForces: the robot's
    mass times its CoM's acceleration minus its weight, the CoM from Kelly's kinematics in CasADi, the
    accelerations from the compiled model under the solution's torques) pushes up everywhere and stays
    inside a friction cone of mu = 0.5: the pinned stance foot neither pulls on the ground nor slips."""
    r = flb.solve(biped, 25, build_dir=build_dir)
    p = dict(biped.parameters)
    pts = flb.kelly_points(p)
    q, dq, ddq = ca.SX.sym("q", 5), ca.SX.sym("dq", 5), ca.SX.sym("ddq", 5)
    masses = [p["m_tibia"], p["m_femur"], p["m_torso"], p["m_femur"], p["m_tibia"]]
    mG = 0
    for i, mi in enumerate(masses):
        c = pts[f"G{i + 1}"]
        mG += mi * ca.vertcat(sum(-flb.SIGN[k] * v * ca.sin(q[k]) for k, v in c.items()),
                              sum(flb.SIGN[k] * v * ca.cos(q[k]) for k, v in c.items()))
    v = ca.jtimes(mG, q, dq)
    force = ca.Function("F", [q, dq, ddq], [ca.jtimes(v, q, dq) + ca.jtimes(v, dq, ddq)
                                            + ca.vertcat(0, sum(masses) * p["g"])])
    F = np.array([np.asarray(force(r.q[k], r.qd[k], np.asarray(biped.rhs(0.0, np.concatenate([r.q[k], r.qd[k]]),
                                                                         u=r.u[k]))[5:])).ravel()
                  for k in range(len(r.t))])
    assert F[:, 1].min() > 100.0, F[:, 1].min()
    assert np.abs(F[:, 0] / F[:, 1]).max() < 0.5


def test_problem_expressions_may_be_longer_than_a_model_files(biped: Any) -> None:
    """A boundary constraint of a few thousand characters (the heel strike's) is accepted, one beyond
    MAX_EXPRESSION_LENGTH is an OptimizeError naming it."""
    from rodgen.model.expr import MAX_LENGTH
    from rodgen.optimize.problem import MAX_EXPRESSION_LENGTH
    longest = max(len(text) for text, _, _ in flb.step_constraints(biped))
    assert MAX_LENGTH < longest < MAX_EXPRESSION_LENGTH
    flb.problem(biped).check()
    text = flb._balanced(["q1_end"] * (MAX_EXPRESSION_LENGTH // 8))
    with pytest.raises(optimize.OptimizeError, match=rf"boundary\[0\]: expression longer than {MAX_EXPRESSION_LENGTH}"):
        optimize.Problem(biped, boundary=[(text, 0, 0)]).check()
