"""Trajectory optimisation with contacts held (``Problem(contacts=[...])``): the NLP's derivatives against
central differences, the contact forces against the runtime's ``constrained_dynamics``, a stance held on
the ground against the same problem written in reduced coordinates (a fixed-base double pendulum pinned at
the foot), and errors for bad contact names."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import rodgen
from _num import central_jacobian, check_nlp_jacobian
from rodgen.model.loader import load_dict

pytest.importorskip("casadi")
from rodgen import optimize  # noqa: E402
from rodgen.optimize import OptimizeError, Problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the stance leg pinned at the foot (the origin), the swing leg hanging from the hip: the compass gait with
#: its stance foot held, in reduced coordinates (absolute angles phi = pi/2 + th_a, psi = th_b - pi/2)
STANCE = {"name": "stance", "gravity": [0, "-g"], "parameters": {"g": 9.81, "m": 5.0, "m_H": 10.0, "a": 0.5,
                                                                  "b": 0.5},
          "links": [{"name": "st", "coordinate": "phi", "joint": {"actuated": False},
                     "segments": [{"name": "st_s", "length": "a + b",
                                   "masses": [{"mass": "m", "offset": "a", "name": "ms"},
                                              {"mass": "m_H", "offset": "a + b", "name": "hip"}]}]},
                    {"name": "sw", "parent": "st", "coordinate": "psi",
                     "segments": [{"name": "sw_s", "length": "a + b",
                                   "masses": [{"mass": "m", "offset": "b", "name": "msw"}]}]}]}


@pytest.fixture(scope="module")
def walker(build_dir: Path) -> object:
    """The compass gait (floating hip, two point feet on a 3 degree slope) with its hip actuated."""
    d = yaml.safe_load((ROOT / "examples" / "compass_gait.yaml").read_text())
    d["links"][1]["joint"] = {"actuated": True}
    return rodgen.build(load_dict(d), build_dir=build_dir)


@pytest.mark.parametrize("method", ["trapezoidal", "hermite-simpson"])
def test_contact_phase_derivatives_match_central_differences(walker: object, build_dir: Path, method: str) -> None:
    """Defects of the constrained dynamics, path constraints and an integrand in the contact forces (chained
    through dlambda/dz), the friction cone, the gap and velocity rows at the first node, the held point's position
    (as at the first node) and velocity at every later point in place of the base's defects, a free duration."""
    pr = Problem(walker, nodes=4, method=method, duration=(0.3, 1.0), contacts=["foot_a"],
                 objective="tau_leg_b**2 + 0.01*fn_foot_a**2 + ft_foot_a*th_b",
                 path=[("fn_foot_a*sin(th_a) + ft_foot_a*x_dot", -100, 100), ("th_b - th_a", -1, 1)])
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    npath = 2 + 3                                   # the user's two, then fn >= 0 and the friction cone
    assert nlp.m == (4 - 1) * nlp.nset * 8 + nlp.points * npath + 1 + 2
    assert nlp.problem.hold_rows == (0, 1) and nlp.problem.hold_columns == (0, 1)     # foot_a's rows; x, y
    rng = np.random.default_rng(1)
    for _ in range(2):
        x = nlp.guess() + 0.1 * rng.normal(size=nlp.n)
        x[nlp.points * nlp.nz] = 0.7
        check_nlp_jacobian(nlp, x)
        gn = central_jacobian(lambda y: np.array([nlp.objective(y)]), x)[0]
        assert np.abs(nlp.gradient(x) - gn).max() <= 1e-6 * max(1.0, np.abs(gn).max())
        # the forces at the points are the runtime's constrained dynamics (an independent call)
        lam = nlp.contact_forces(x)
        Z = x[:nlp.points * nlp.nz].reshape(nlp.points, nlp.nz)
        for j in range(nlp.points):
            _, ref = walker.constrained_dynamics(Z[j, :4], Z[j, 4:8], Z[j, 8:], ["foot_a"])
            np.testing.assert_allclose(lam[j], ref, rtol=1e-10, atol=1e-9)
        # the rows at the first node: foot_a's gap and its velocity J qd (tangential, normal)
        g = nlp.constraints(x)
        gap = walker.constraint_position(Z[0, :4])[1]
        vel = walker.constraint_jacobian(Z[0, :4])[:2] @ Z[0, 4:8]
        np.testing.assert_allclose(g[-3:], [gap, *vel], rtol=1e-12, atol=1e-12)
        # at every later point: foot_a's position minus the first node's and its velocity, in place of the
        # defects of x and y (q rows 0, 1; qd rows 4, 5) of the set ending there (Hermite-Simpson's second set:
        # the midpoint's)
        step = 2 if method == "hermite-simpson" else 1
        c0 = walker.constraint_position(Z[0, :4])[:2]
        for ks in range(3 * nlp.nset):
            zb = Z[(ks // nlp.nset) * step + (step if ks % nlp.nset == 0 else 1)]
            rows = g[ks * 8:][:8]
            np.testing.assert_allclose(rows[:2], walker.constraint_position(zb[:4])[:2] - c0, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(rows[4:6], walker.constraint_jacobian(zb[:4])[:2] @ zb[4:8], rtol=1e-12,
                                       atol=1e-12)


@pytest.mark.parametrize("hessian,method", [("differences", "trapezoidal"), ("forward-differences", "trapezoidal"),
                                            ("differences", "hermite-simpson")])
def test_contact_phase_hessian_by_differences(walker: object, build_dir: Path, hessian: str, method: str) -> None:
    """hessian='differences' with contacts held: the Lagrangian's Hessian (the points' blocks from the
    constrained dynamics' derivatives, an integrand and path rows in the forces chained through dlambda/dz,
    the gap and velocity rows at the first node, the held rows at every later point, a free duration) against
    central differences of its exact gradient sigma grad f + J^T lam."""
    pr = Problem(walker, nodes=3, method=method, duration=(0.3, 1.0), contacts=["foot_a"],
                 objective="tau_leg_b**2 + 0.01*fn_foot_a**2 + ft_foot_a*th_b",
                 path=[("fn_foot_a*sin(th_a) + ft_foot_a*x_dot", -100, 100)], hessian=hessian)
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    rng = np.random.default_rng(3)
    x = nlp.guess() + 0.1 * rng.normal(size=nlp.n)
    x[nlp.points * nlp.nz] = 0.7
    lam = rng.normal(size=nlp.m)
    H = nlp.hessian(x, 0.7, lam).toarray()
    Hn = central_jacobian(lambda y: 0.7 * nlp.gradient(y) + nlp.jacobian(y).T @ lam, x)
    assert np.abs(H - Hn).max() <= 1e-6 * max(1.0, np.abs(Hn).max()), np.abs(H - Hn).max()


@pytest.mark.parametrize("hessian", ["limited-memory", "differences"])
def test_stance_held_on_the_ground_is_the_pinned_double_pendulum(walker: object, build_dir: Path,
                                                                 hessian: str) -> None:
    """Rest to rest in 1 s with the hip torque, the stance foot held (its height y at the start from the gap
    row at the first node): the optimum (cost, torques) is that
    of the same motion of the double pendulum pinned at the foot, written without contacts; the forces
    reported are the runtime's constrained dynamics at the solution's nodes, inside the friction cone."""
    stance = rodgen.build(load_dict(STANCE), build_dir=build_dir)
    a0, b0, a1, b1 = 0.02, -0.1, 0.0, 0.1
    opts = {"tol": 1e-10}
    held = Problem(walker, nodes=11, duration=1.0, contacts=["foot_a"], objective="tau_leg_b**2", hessian=hessian,
                   parameters={"mu": 10.0}, bounds={"x": (-1.0, 1.0), "y": (0.5, 1.5)},
                   initial={"x": -np.sin(a0), "th_a": a0, "th_b": b0, "th_a_dot": 0.0,
                            "th_b_dot": 0.0},
                   final={"th_a": a1, "th_b": b1, "th_a_dot": 0.0, "th_b_dot": 0.0}).solve(options=opts,
                                                                                         build_dir=build_dir)
    pinned = Problem(stance, nodes=11, duration=1.0, objective="tau_sw**2",
                     initial={"phi": np.pi / 2 + a0, "psi": b0 - np.pi / 2, "phi_dot": 0.0, "psi_dot": 0.0},
                     final={"phi": np.pi / 2 + a1, "psi": b1 - np.pi / 2, "phi_dot": 0.0, "psi_dot": 0.0}
                     ).solve(options=opts, build_dir=build_dir)
    assert held.success and pinned.success
    assert abs(held.objective - pinned.objective) <= 1e-7 * pinned.objective
    np.testing.assert_allclose(held.u[:, 0], pinned.u[:, 0], atol=1e-5 * np.abs(pinned.u).max())
    np.testing.assert_allclose(held.q[:, 2], pinned.q[:, 0] - np.pi / 2, atol=1e-7)
    assert held.q[0, 1] == pytest.approx(np.cos(a0), abs=1e-9)       # the foot on the ground at the start
    forces = held.contact_forces["foot_a"]
    assert forces.shape == (len(held.t), 2)
    p = walker.parameter_vector({"mu": 10.0})
    for j in held.node_index:
        _, ref = walker.constrained_dynamics(held.q[j], held.qd[j], held.u[j], ["foot_a"], p)
        np.testing.assert_allclose(forces[j], ref[:2], rtol=1e-9, atol=1e-7)
    assert np.all(forces[:, 1] >= -1e-8) and np.all(np.abs(forces[:, 0]) <= 10.0 * forces[:, 1] + 1e-6)


def test_held_foot_stays_put_at_every_point(walker: object, build_dir: Path) -> None:
    """The stance foot held on a coarse mesh (4 Hermite-Simpson nodes over 1.2 s) while the hip is raised as
    high as the hip torque allows: held at the acceleration level only (J qdd + Jdot qd = 0), this optimum let
    the foot drift 9e-3 m at the nodes and 1.2e-2 m at the midpoints, moving at up to 6e-2 m/s. Now its position
    (as at the start) and velocity hold at every node and midpoint, measured with the model's own
    constraint_position and constraint_jacobian at the solution, and the hip's height is the stance leg's
    (the foot on the ground, the leg of length 1)."""
    a0 = 0.3
    r = Problem(walker, nodes=4, duration=1.2, method="hermite-simpson", contacts=["foot_a"],
                objective="tau_leg_b**2", terminal="-10*y", parameters={"mu": 10.0},
                bounds={"x": (-1.0, 1.0), "y": (0.5, 1.5), "tau_leg_b": (-20.0, 20.0)},
                initial={"x": -np.sin(a0), "th_a": a0, "th_b": -a0, "th_a_dot": -1.0, "th_b_dot": 0.0}
                ).solve(options={"tol": 1e-10}, build_dir=build_dir)
    assert r.success
    foot = walker.constraint_position(r.q)[:, :2]
    np.testing.assert_allclose(foot, np.tile(foot[0], (len(r.t), 1)), rtol=0, atol=1e-9)
    assert abs(foot[0, 1]) <= 1e-9                                   # on the ground
    rate = np.einsum("prn,pn->pr", walker.constraint_jacobian(r.q)[:, :2], r.qd)
    assert np.abs(rate).max() <= 1e-9
    np.testing.assert_allclose(r.q[:, 1], np.cos(r.q[:, 2]) + foot[0, 1], atol=1e-9)


def test_bad_contacts_are_named(walker: object, build_dir: Path) -> None:
    with pytest.raises(OptimizeError, match=r"contacts\[1\]: unknown contact 'foot_c' \(did you mean 'foot_b'"):
        Problem(walker, contacts=["foot_b", "foot_c"]).check()
    with pytest.raises(OptimizeError, match=r"contacts\[1\]: the contact 'foot_a' is named twice"):
        Problem(walker, contacts=["foot_a", "foot_a"]).check()
    with pytest.raises(OptimizeError, match="objective: unknown name 'fn_foot_b'"):
        Problem(walker, contacts=["foot_a"], objective="fn_foot_b").check()
    with pytest.raises(OptimizeError, match="hessian: the exact Hessian is not derived for phases with contacts.*"
                                            "use hessian='differences'"):
        Problem(walker, contacts=["foot_a"], hessian="exact").check()
    with pytest.raises(OptimizeError, match="initial: the initial coordinates put the contact 'foot_a' 0.499 off"):
        Problem(walker, contacts=["foot_a"], initial={"x": 0.0, "y": 1.5, "th_a": 0.0, "th_b": 0.0}).check()
    pendulum = rodgen.build(load_dict({"name": "pend", "gravity": [0, "-g"], "parameters": {"g": 9.81},
                                       "links": [{"name": "arm", "coordinate": "phi",
                                                  "segments": [{"name": "rod", "length": 1.0,
                                                                "rod": {"mass": 1.0}}]}]}), build_dir=build_dir)
    with pytest.raises(OptimizeError, match="contacts: the model 'pend' has no contacts"):
        Problem(pendulum, contacts=["foot"]).check()


@pytest.mark.slow   # builds a spatial tree's constrained derivatives (half a minute to a minute and a half);
#                     the planar contact tests guard the same driver path in the default run
def test_spatial_contact_forces_and_friction_cone(build_dir: Path) -> None:
    """A spatial tree's 3D contact (one of two held): forces ft1_, ft2_, fn_ in the expressions, the friction cone
    mu^2 fn^2 - ft1^2 - ft2^2 >= 0 per point (its value from the runtime's constrained_dynamics), the
    derivatives against central differences."""
    from test_spatial_pinocchio import random_tree
    model, _ = random_tree(20, 6)           # test_constrained_derivatives' model (one build in a session)
    model.contact("ca", "L2")
    model.contact("cb", "L5")
    robot = rodgen.build(model, build_dir=build_dir)
    pr = Problem(robot, nodes=3, method="trapezoidal", duration=0.5, contacts=["cb"],
                 objective="ft1_cb**2 + ft2_cb*fn_cb", path=[("fn_cb - ft2_cb", -50, 50)])
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    assert nlp.npath == 3                            # the user's, fn >= 0, the cone
    x = nlp.guess() + 0.3 * np.random.default_rng(0).normal(size=nlp.n)
    J = nlp.jacobian(x).toarray()
    Jn = central_jacobian(nlp.constraints, x)
    assert np.abs(J - Jn).max() <= 1e-6 * max(1.0, np.abs(Jn).max())
    gn = central_jacobian(lambda y: np.array([nlp.objective(y)]), x)[0]
    assert np.abs(nlp.gradient(x) - gn).max() <= 1e-6 * max(1.0, np.abs(gn).max())
    g = nlp.constraints(x)
    nd = (3 - 1) * 2 * robot.nq
    mu = robot.constraint_friction()[1]
    Z = x[:nlp.points * nlp.nz].reshape(nlp.points, nlp.nz)
    for j in range(nlp.points):
        _, lam = robot.constrained_dynamics(Z[j, :10], Z[j, 10:20], Z[j, 20:], ["cb"])
        assert np.all(lam[:3] == 0.0)
        ft1, ft2, fn = lam[3:]
        np.testing.assert_allclose(g[nd + 3 * j:nd + 3 * j + 3],
                                   [fn - ft2, fn, mu ** 2 * fn ** 2 - ft1 ** 2 - ft2 ** 2], rtol=1e-9, atol=1e-8)
