"""Trajectory optimisation (rodgen.optimize): the NLP's derivatives against central differences, closed-form
optima, a swing-up resimulated with the compiled integrator, and errors for bad problem statements."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import rodgen
from _num import central_jacobian
from rodgen.model.loader import load_dict

pytest.importorskip("casadi")
from rodgen import optimize  # noqa: E402
from rodgen.optimize import OptimizeError, Problem  # noqa: E402

#: a uniform rod on a hinge without gravity: I = m L^2 / 3 = 1, so phi'' = tau (a double integrator)
BAR = {"name": "bar", "gravity": [0, 0], "parameters": {"m": 3.0, "L": 1.0},
       "links": [{"name": "bar", "coordinate": "phi",
                  "segments": [{"name": "rod", "length": "L", "rod": {"mass": "m"}}]}]}
PENDULUM = {"name": "pend", "gravity": [0, "-g"], "parameters": {"m": 1.0, "L": 1.0, "g": 9.81},
            "links": [{"name": "arm", "coordinate": "phi", "initial": -1.5,
                       "segments": [{"name": "rod", "length": "L", "rod": {"mass": "m"}}]}]}


@pytest.fixture(scope="module")
def bar(build_dir: Path) -> object:
    return rodgen.build(load_dict(BAR), build_dir=build_dir)


@pytest.fixture(scope="module")
def pendulum(build_dir: Path) -> object:
    return rodgen.build(load_dict(PENDULUM), build_dir=build_dir)


@pytest.fixture(scope="module")
def double_pendulum(build_dir: Path) -> object:
    return rodgen.build(rodgen.load(Path(__file__).resolve().parents[1] / "examples" / "double_pendulum.yaml"),
                        build_dir=build_dir)


@pytest.mark.parametrize("method", ["trapezoidal", "hermite-simpson", "backward-euler"])
@pytest.mark.parametrize("free", [False, True])
def test_nlp_derivatives_match_central_differences(double_pendulum: object, build_dir: Path, method: str,
                                                   free: bool) -> None:
    """The sparse constraint Jacobian (collocation blocks from the model's RHS Jacobian and M^-1 B, the
    duration's column, path constraints, periodicity) and the objective's gradient, at random points."""
    pr = Problem(double_pendulum, nodes=4, method=method, duration=(0.5, 2.0) if free else 1.3,
                 objective="tau_upper**2 + 0.5*tau_lower**2 + m2*sin(th_lower)*th_upper_dot**2",
                 terminal="duration + cos(th_upper)*th_lower_dot" if free else "th_upper**2",
                 path=[("sin(th_upper) + L1*th_lower_dot*tau_lower", -1, 1), ("th_lower**2", -math.inf, 4)],
                 periodic=["th_lower", "th_upper_dot"], shift={"th_lower": 0.3},
                 boundary=[("(th_upper_end - th_upper_start)/duration + tau_lower_end*th_lower_start", 0, 1),
                           ("th_lower_dot_end**2", -1, 1)])
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    rng = np.random.default_rng(7 + free)
    for _ in range(3):
        x = rng.uniform(-1.5, 1.5, nlp.n)
        if free:
            x[-1] = rng.uniform(0.6, 1.8)
        J = nlp.jacobian(x).toarray()
        Jfd = central_jacobian(nlp.constraints, x)
        assert np.max(np.abs(J - Jfd)) < 1e-6 * max(1.0, np.max(np.abs(Jfd)))
        # every nonzero of the differences is in the pattern
        rows, cols = nlp.jacobian_structure()
        pattern = np.zeros_like(J, dtype=bool)
        pattern[rows, cols] = True
        assert not np.any(np.abs(Jfd[~pattern]) > 1e-8)
        g = nlp.gradient(x)
        gfd = central_jacobian(lambda y: np.array([nlp.objective(y)]), x)[0]
        assert np.max(np.abs(g - gfd)) < 1e-6 * max(1.0, np.max(np.abs(gfd)))


def test_defects_are_the_trapezoidal_rule(pendulum: object, build_dir: Path) -> None:
    """The constraint function itself, against the trapezoidal defect written out with the model's rhs."""
    nlp = optimize.compile_problem(Problem(pendulum, nodes=3, method="trapezoidal", duration=0.8), build_dir=build_dir)
    x = np.random.default_rng(3).normal(size=nlp.n)
    Z = x.reshape(3, 3)
    f = [pendulum.rhs(0.0, z[:2], z[2:]) for z in Z]
    h = 0.4
    expected = np.concatenate([Z[k + 1, :2] - Z[k, :2] - h / 2 * (f[k] + f[k + 1]) for k in range(2)])
    assert np.allclose(nlp.constraints(x), expected, rtol=1e-13, atol=1e-13)


def test_defects_and_objective_are_backward_euler(pendulum: object, build_dir: Path) -> None:
    """Backward Euler (opty's transcription): the defects y_b - y_a - h f_b written out with the model's rhs, and
    the objective h times the integrand at every node but the first."""
    nlp = optimize.compile_problem(Problem(pendulum, nodes=4, method="backward-euler", duration=0.9,
                                           objective="tau_arm**2 + phi_dot**2"), build_dir=build_dir)
    x = np.random.default_rng(5).normal(size=nlp.n)
    Z = x.reshape(4, 3)
    f = [pendulum.rhs(0.0, z[:2], z[2:]) for z in Z]
    h = 0.3
    expected = np.concatenate([Z[k + 1, :2] - Z[k, :2] - h * f[k + 1] for k in range(3)])
    assert np.allclose(nlp.constraints(x), expected, rtol=1e-13, atol=1e-13)
    assert nlp.objective(x) == pytest.approx(h * float(np.sum(Z[1:, 2]**2 + Z[1:, 1]**2)), rel=1e-13)


def test_minimum_energy_double_integrator_backward_euler(bar: object, build_dir: Path) -> None:
    """min h sum_{j>=1} tau_j^2, phi: 0 -> 1 rest to rest in 1 s under backward Euler: v_k = h sum_{j<=k} tau_j,
    so v_N = 0 is sum tau_j = 0 and phi_N = 1 is h^2 sum_j (N - j + 1) tau_j = 1, a least-norm problem solved
    here by its normal equations; the optimum approaches the continuous one (12) as the spacing shrinks."""
    costs = []
    for nodes in (11, 21):
        r = Problem(bar, nodes=nodes, duration=1.0, method="backward-euler", objective="tau_bar**2",
                    initial={"phi": 0, "phi_dot": 0}, final={"phi": 1, "phi_dot": 0}).solve(
                        options={"tol": 1e-12}, build_dir=build_dir)
        assert r.success, r.message
        n = nodes - 1
        h = 1.0 / n
        A = np.vstack([np.ones(n), h**2 * (n - np.arange(1, n + 1) + 1)])
        tau = A.T @ np.linalg.solve(A @ A.T, [0.0, 1.0])
        assert r.objective == pytest.approx(h * float(tau @ tau), rel=1e-8)
        np.testing.assert_allclose(r.u[1:, 0], tau, rtol=1e-6, atol=1e-6)
        costs.append(r.objective)
    assert abs(costs[1] - 12.0) < abs(costs[0] - 12.0) < 0.2


def test_minimum_energy_double_integrator_hermite_simpson(bar: object, build_dir: Path) -> None:
    """min int tau^2 with phi: 0 -> 1, rest to rest in 1 s: tau = 6 - 12 t, cost 12 (cubic states: exact for
    Hermite-Simpson up to the solver's tolerance)."""
    r = Problem(bar, nodes=11, duration=1.0, objective="tau_bar**2", initial={"phi": 0, "phi_dot": 0},
                final={"phi": 1, "phi_dot": 0}).solve(options={"tol": 1e-10}, build_dir=build_dir)
    assert r.success, r.message
    assert r.objective == pytest.approx(12.0, rel=1e-8)
    assert np.max(np.abs(r.u[:, 0] - (6 - 12 * r.t))) < 1e-6
    assert np.max(np.abs(r.q[:, 0] - (3 * r.t**2 - 2 * r.t**3))) < 1e-8
    assert r.constraint_violation < 1e-9 and r.iterations > 0 and r.solve_seconds > 0
    # the transcription's quadratic input sampled between the points: through the points, and the line here
    tab = r.inputs_table(samples=5)
    assert len(tab.t) == 5 * 10 + 1
    np.testing.assert_allclose(tab(r.t[3]), r.u[3], atol=1e-12)
    np.testing.assert_allclose(tab(0.537), 6 - 12 * 0.537, atol=1e-6)


def test_minimum_energy_double_integrator_trapezoidal_converges(bar: object, build_dir: Path) -> None:
    """The trapezoidal optimum approaches the closed form at second order in the spacing."""
    errors = []
    for nodes in (11, 21, 41):
        r = Problem(bar, nodes=nodes, duration=1.0, method="trapezoidal", objective="tau_bar**2",
                    initial={"phi": 0, "phi_dot": 0}, final={"phi": 1, "phi_dot": 0}).solve(
                        options={"tol": 1e-12}, build_dir=build_dir)
        assert r.success
        errors.append(r.objective - 12.0)
        inner = slice(1, -1)
        assert np.max(np.abs(r.u[inner, 0] - (6 - 12 * r.t[inner]))) < 25.0 / (nodes - 1)**2
    assert all(e > 0 for e in errors)
    assert 3.5 < errors[0] / errors[1] < 4.5 and 3.5 < errors[1] / errors[2] < 4.5


def test_free_duration_minimum_time_double_integrator(bar: object, build_dir: Path) -> None:
    """Minimum time with |tau| <= 1 from rest to rest over a distance 1: bang-bang, T = 2."""
    r = Problem(bar, nodes=41, duration=(0.5, 5.0), method="trapezoidal", terminal="duration",
                bounds={"tau_bar": (-1, 1)}, initial={"phi": 0, "phi_dot": 0},
                final={"phi": 1, "phi_dot": 0}).solve(build_dir=build_dir)
    assert r.success, r.message
    assert r.duration == pytest.approx(2.0, rel=1e-3)
    assert r.duration_multipliers is not None


def test_average_speed_boundary_constraint(bar: object, build_dir: Path) -> None:
    """Rest to rest over a unit distance at an average speed of 0.5 with a free duration: T = 2, and the
    minimum energy 12 d^2 / T^3 = 1.5 (exact for Hermite-Simpson)."""
    r = Problem(bar, nodes=11, duration=(0.5, 5.0), objective="tau_bar**2",
                initial={"phi": 0, "phi_dot": 0}, final={"phi_dot": 0},
                boundary=[("(phi_end - phi_start)/duration", 0.5, 0.5), ("phi_end", 1, 1)]).solve(
                    options={"tol": 1e-10}, build_dir=build_dir)
    assert r.success, r.message
    assert r.duration == pytest.approx(2.0, rel=1e-8) and r.q[-1, 0] == pytest.approx(1.0, abs=1e-9)
    assert r.objective == pytest.approx(1.5, rel=1e-7)
    assert r.boundary_multipliers.shape == (2,)


def test_pendulum_swing_up_ends_upright_and_resimulates(pendulum: object, build_dir: Path) -> None:
    """A torque-limited swing-up (hanging at phi = -pi/2 to upright at pi/2): the solution ends upright, and the
    compiled integrator driven by the solution's inputs follows it to the collocation's accuracy."""
    pr = Problem(pendulum, nodes=41, duration=2.0, objective="tau_arm**2", bounds={"tau_arm": (-8, 8)},
                 initial={"phi": -math.pi / 2, "phi_dot": 0}, final={"phi": math.pi / 2, "phi_dot": 0})
    r = pr.solve(build_dir=build_dir)
    assert r.success, r.message
    assert r.q[-1, 0] == pytest.approx(math.pi / 2, abs=1e-9) and abs(r.qd[-1, 0]) < 1e-9
    assert np.all(np.abs(r.u) <= 8 + 1e-6)
    # the dynamics hold along the solution: the simulation from its first state under its inputs
    assert r.simulate_check() < 1e-3
    sim = r.simulate()
    assert sim.q[-1, 0] == pytest.approx(math.pi / 2, abs=1e-3)
    # energy: the work of the torque is the gain in potential energy (m g L/2 (1 - (-1)) = 9.81)
    power = r.u[:, 0] * r.qd[:, 0]
    w = float(np.sum((power[1:] + power[:-1]) * np.diff(r.t)) / 2)
    assert w == pytest.approx(9.81, rel=1e-3)
    # plotted and animated through its SimulationResult, whose energies are the model's
    res = r.to_result()
    assert res.potential[-1] - res.potential[0] == pytest.approx(9.81, rel=1e-9)
    rodgen.plot(r, build_dir / "swing.png")
    assert rodgen.animate(pendulum, r, build_dir / "swing.gif", max_frames=10) > 0
    assert (build_dir / "swing.png").stat().st_size > 0 and (build_dir / "swing.gif").stat().st_size > 0
    # a warm start from the solution converges in fewer iterations, to the same optimum
    r2 = pr.solve(guess=r, build_dir=build_dir)
    assert r2.success and r2.iterations < r.iterations
    assert r2.objective == pytest.approx(r.objective, rel=1e-6)


def test_limited_memory_low_rank_part_is_factored_with_the_system(double_pendulum: object, build_dir: Path,
                                                                  capfd: pytest.CaptureFixture) -> None:
    """With the limited-memory Hessian the collocation tells IPOPT to put the approximation's low-rank part into
    the factored system (limited_memory_aug_solver=extended) unless the options say otherwise; both ways are the
    same Newton steps: the same optimum in the same iterations on the double pendulum's swing-up."""
    pr = Problem(double_pendulum, nodes=31, duration=2.0, method="trapezoidal",
                 objective="tau_upper**2 + tau_lower**2", bounds={"tau_upper": (-20, 20), "tau_lower": (-20, 20)},
                 initial={"th_upper": -math.pi / 2, "th_lower": 0, "th_upper_dot": 0, "th_lower_dot": 0},
                 final={"th_upper": math.pi / 2, "th_lower": 0, "th_upper_dot": 0, "th_lower_dot": 0})
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    shown = {"print_level": 5, "print_user_options": "yes", "tol": 1e-9}
    capfd.readouterr()
    default = nlp.solve(None, shown)
    out = capfd.readouterr().out
    assert re.search(r"limited_memory_aug_solver = extended", out), out[:2000]
    other = nlp.solve(None, {**shown, "limited_memory_aug_solver": "sherman-morrison"})
    out = capfd.readouterr().out
    assert re.search(r"limited_memory_aug_solver = sherman-morrison", out), out[:2000]
    assert default.success and other.success
    assert default.objective == pytest.approx(other.objective, rel=1e-8)
    assert default.iterations == other.iterations
    np.testing.assert_allclose(default.x, other.x, rtol=0, atol=1e-6)


def test_guess_from_a_simulation(pendulum: object, build_dir: Path) -> None:
    sim = pendulum.simulate([-1.5, 0.0], 2.0, 0.01)
    pr = Problem(pendulum, nodes=21, duration=2.0, method="trapezoidal", objective="tau_arm**2",
                 initial={"phi": -1.5, "phi_dot": 0}, final={"phi": -1.2, "phi_dot": 0})
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    x = nlp.guess(sim)
    Z = x.reshape(nlp.points, -1)
    # the simulation's motion on the mesh; the last node moved onto its fixed final value
    assert np.allclose(Z[:-1, 0], np.interp(np.linspace(0, 2, nlp.points), sim.t, sim.q[:, 0])[:-1])
    assert Z[-1, 0] == -1.2
    assert pr.solve(guess=sim, build_dir=build_dir).success


@pytest.mark.parametrize("change, where, text", [
    ({"objective": "tau_arm**2 + velocity"}, "objective", "unknown name 'velocity'"),
    ({"objective": "tau_arm.real"}, "objective", "not plain arithmetic"),
    ({"terminal": "tau_arm"}, "terminal", "unknown name 'tau_arm'"),
    ({"path": [("phi_dott", 0, 1)]}, "path[0]", "did you mean 'phi_dot'"),
    ({"path": [("phi", 2, 1)]}, "path[0]", "above the upper bound"),
    ({"path": [("phi", -math.inf, math.inf)]}, "path[0]", "no bound"),
    ({"bounds": {"phi": (1, -1)}}, "bounds['phi']", "above the upper bound"),
    ({"bounds": {"theta": (1, 2)}}, "bounds['theta']", "unknown name 'theta'"),
    ({"bounds": {"tau_arm": (-1, 1)}, "initial": {"tau_arm": 2}}, "initial['tau_arm']", "outside the bounds"),
    ({"final": {"phi": float("nan")}}, "final['phi']", "NaN"),
    ({"duration": (2.0, 1.0)}, "duration", "above the upper bound"),
    ({"duration": -1.0}, "duration", "positive"),
    ({"duration": (0.0, 1.0)}, "duration", "positive lower"),
    ({"nodes": 1}, "nodes", "at least 2"),
    ({"method": "euler"}, "method", "unknown method"),
    ({"hessian": "bfgs"}, "hessian", "unknown Hessian"),
    ({"periodic": ["tau_arm"]}, "periodic[0]", "unknown name"),
    ({"shift": {"phi": 1.0}}, "shift['phi']", "not periodic"),
    ({"periodic": True, "initial": {"phi": 0}, "final": {"phi": 1}}, "periodic['phi']", "fixed to"),
    ({"parameters": {"mass": 2}}, "parameters['mass']", "unknown parameter"),
    ({"boundary": [("phi_end - phi", 0, 1)]}, "boundary[0]", "unknown name 'phi'"),
])
def test_bad_statements_name_the_place(pendulum: object, change: dict, where: str, text: str) -> None:
    kwargs = dict(nodes=5, duration=1.0, objective="tau_arm**2")
    kwargs.update(change)
    with pytest.raises(OptimizeError) as info:
        Problem(pendulum, **kwargs).check()
    assert info.value.where == where and text in str(info.value), str(info.value)


def test_refuses_what_it_cannot_do(pendulum: object) -> None:
    with pytest.raises(OptimizeError, match="compiled model"):
        Problem(load_dict(PENDULUM)).check()
    with pytest.raises(OptimizeError, match="options\\['max_iter'\\].*number"):
        Problem(pendulum, nodes=3).solve(options={"max_iter": [1]})
    with pytest.raises(OptimizeError, match="IPOPT refused the option 'no_such_option'"):
        Problem(pendulum, nodes=3).solve(options={"no_such_option": 1.0})


def test_exact_hessian_needs_a_small_model_built_from_its_model(pendulum: object, build_dir: Path) -> None:
    from rodgen.toolchain import load_module
    bare = load_module(pendulum.path)       # a library loaded by its path does not know its model
    with pytest.raises(OptimizeError, match="hessian: the exact Hessian derives"):
        optimize.compile_problem(Problem(bare, nodes=3, hessian="exact"), build_dir=build_dir)
    with pytest.raises(rodgen.RodgenError, match="without the Jacobian of its right-hand side"):
        optimize.compile_problem(Problem(bare, nodes=3), build_dir=build_dir)
    with pytest.raises(OptimizeError, match="Hessian"):
        optimize.compile_problem(Problem(pendulum, nodes=3), build_dir=build_dir).hessian(
            np.zeros(9), 1.0, np.zeros(4))


def test_missing_solver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    monkeypatch.setitem(sys.modules, "casadi", None)
    from rodgen.optimize.build import ipopt_paths
    with pytest.raises(OptimizeError, match=r"rodgen\[optimize\]"):
        ipopt_paths()


def test_periodic_rotation_with_a_shift(pendulum: object, build_dir: Path) -> None:
    """A steady rotation: one turn per period (shift 2 pi), rates periodic, least torque squared. At the
    solution the periodicity holds, and the resimulated motion repeats."""
    pr = Problem(pendulum, nodes=31, duration=1.5, objective="tau_arm**2", initial={"phi": -math.pi / 2},
                 periodic=True, shift={"phi": 2 * math.pi}, bounds={"tau_arm": (-30, 30)})
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    x0 = nlp.guess()
    Z = x0.reshape(nlp.points, 3)
    Z[:, 0] = -math.pi / 2 + 2 * math.pi * np.linspace(0, 1, nlp.points)   # a guess that turns once
    Z[:, 1] = 2 * math.pi / 1.5
    r = nlp.solve(Z.ravel())
    assert r.success, r.message
    assert r.q[-1, 0] - r.q[0, 0] == pytest.approx(2 * math.pi, abs=1e-9)
    assert r.qd[-1, 0] == pytest.approx(r.qd[0, 0], abs=1e-9)
    assert r.periodic_multipliers.shape == (2,)
    sim = r.simulate()
    assert sim.q[-1, 0] - sim.q[0, 0] == pytest.approx(2 * math.pi, abs=1e-3)
    # the optimum is no worse than the uniform rotation's cost, whose torque only holds gravity:
    # tau = m g L/2 cos(phi), int tau^2 = (g/2)^2 * T/2
    assert r.objective < (9.81 / 2) ** 2 * 1.5 / 2


@pytest.mark.parametrize("method, free, hessian", [
    (method, free, "exact") for method in ("trapezoidal", "hermite-simpson", "backward-euler") for free in (False, True)
] + [("hermite-simpson", True, "differences"), ("backward-euler", False, "differences"),
      ("trapezoidal", True, "forward-differences")])
def test_exact_hessian_matches_central_differences(double_pendulum: object, build_dir: Path, method: str,
                                                   free: bool, hessian: str) -> None:
    """The Hessian of the Lagrangian (exact, or the points' blocks by differences in the C) against central
    differences of its gradient sigma grad f + J^T lam (both exact first derivatives of the compiled NLP), at
    random points and multipliers; boundary constraints between the first and the last node included."""
    pr = Problem(double_pendulum, nodes=3, method=method, duration=(0.5, 2.0) if free else 1.3,
                 objective="tau_upper**2 + 0.5*tau_lower**2 + m2*sin(th_lower)*th_upper_dot**2",
                 terminal="duration**2*cos(th_upper) + th_lower_dot**2" if free else "th_upper**2*th_lower",
                 path=[("sin(th_upper) + L1*th_lower_dot*tau_lower", -1, 1)],
                 boundary=[("(th_upper_end - th_upper_start)/duration", -2, 2),
                           ("th_lower_end*sin(th_upper_start) + tau_upper_end**2", -3, 3)],
                 periodic=["th_lower"], hessian=hessian)
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    assert nlp.nnz_hessian > 0
    rng = np.random.default_rng(11 + free)
    for _ in range(2):
        x = rng.uniform(-1.2, 1.2, nlp.n)
        if free:
            x[-1] = rng.uniform(0.6, 1.8)
        lam = rng.normal(size=nlp.m)
        sigma = 0.7
        H = nlp.hessian(x, sigma, lam).toarray()
        Hfd = central_jacobian(lambda y: sigma * nlp.gradient(y) + nlp.jacobian(y).T @ lam, x)
        assert np.max(np.abs(H - Hfd)) < 1e-6 * max(1.0, np.max(np.abs(Hfd))), np.max(np.abs(H - Hfd))


@pytest.mark.parametrize("hessian", ["exact", "differences", "forward-differences"])
def test_hessian_of_a_model_without_inputs(build_dir: Path, hessian: str) -> None:
    """A passive pendulum (no inputs: B is n x 0) with a free duration and a boundary row: the Hessian against
    central differences of the exact gradient."""
    free = rodgen.build(load_dict({**PENDULUM, "name": "passive", "links": [
        {**PENDULUM["links"][0], "joint": {"actuated": False}}]}), build_dir=build_dir)
    nlp = optimize.compile_problem(Problem(free, nodes=3, duration=(0.5, 3.0), hessian=hessian,
                                           objective="phi**2*phi_dot", terminal="duration*phi",
                                           boundary=[("phi_end*phi_start/duration", 0, 1)]), build_dir=build_dir)
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, nlp.n)
    x[-1] = 1.2
    lam = rng.normal(size=nlp.m)
    H = nlp.hessian(x, 0.7, lam).toarray()
    Hfd = central_jacobian(lambda y: 0.7 * nlp.gradient(y) + nlp.jacobian(y).T @ lam, x)
    assert np.max(np.abs(H - Hfd)) < 1e-6 * max(1.0, np.max(np.abs(Hfd)))


def test_exact_hessian_solves_the_swing_up(pendulum: object, build_dir: Path) -> None:
    """The same optimum with the exact Hessian as with the limited-memory one, in fewer iterations."""
    kwargs = dict(nodes=41, duration=2.0, objective="tau_arm**2", bounds={"tau_arm": (-8, 8)},
                  initial={"phi": -math.pi / 2, "phi_dot": 0}, final={"phi": math.pi / 2, "phi_dot": 0})
    lbfgs = Problem(pendulum, **kwargs).solve(options={"tol": 1e-10}, build_dir=build_dir)
    exact = Problem(pendulum, hessian="exact", **kwargs).solve(options={"tol": 1e-10}, build_dir=build_dir)
    diff = Problem(pendulum, hessian="differences", **kwargs).solve(options={"tol": 1e-10}, build_dir=build_dir)
    fwd = Problem(pendulum, hessian="forward-differences", **kwargs).solve(options={"tol": 1e-10},
                                                                          build_dir=build_dir)
    assert lbfgs.success and exact.success and diff.success and fwd.success
    assert exact.objective == pytest.approx(lbfgs.objective, rel=1e-7)
    assert diff.objective == pytest.approx(lbfgs.objective, rel=1e-7)
    assert fwd.objective == pytest.approx(lbfgs.objective, rel=1e-7)
    assert exact.iterations < lbfgs.iterations and diff.iterations < lbfgs.iterations
    assert fwd.iterations < lbfgs.iterations


def test_same_optimum_as_casadi_on_the_same_transcription(pendulum: object, build_dir: Path) -> None:
    """An independent anchor: the trapezoidal swing-up written in CasADi (the pendulum's closed form
    phi'' = (tau - m g L/2 cos phi) / (m L^2 / 3), CasADi's own derivatives) and solved by the same IPOPT from
    the same start reaches the same optimum."""
    ca = pytest.importorskip("casadi")
    N, T, g = 21, 2.0, 9.81
    res = Problem(pendulum, nodes=N, duration=T, method="trapezoidal", objective="tau_arm**2", hessian="exact",
                  bounds={"tau_arm": (-8, 8)}, initial={"phi": -math.pi / 2, "phi_dot": 0},
                  final={"phi": math.pi / 2, "phi_dot": 0}).solve(options={"tol": 1e-10}, build_dir=build_dir)
    h = T / (N - 1)
    X = ca.SX.sym("X", 3, N)

    def f(z: object) -> object:
        return ca.vertcat(z[1], (z[2] - g / 2 * ca.cos(z[0])) * 3)

    defects = [X[:2, k + 1] - X[:2, k] - h / 2 * (f(X[:, k]) + f(X[:, k + 1])) for k in range(N - 1)]
    J = h / 2 * sum(X[2, k]**2 + X[2, k + 1]**2 for k in range(N - 1))
    solver = ca.nlpsol("s", "ipopt", {"x": ca.vec(X), "f": J, "g": ca.vertcat(*defects)},
                       {"ipopt": {"tol": 1e-10, "print_level": 0, "sb": "yes"}, "print_time": False})
    lo, hi = np.full((3, N), -np.inf), np.full((3, N), np.inf)
    lo[2], hi[2] = -8, 8
    lo[:2, 0] = hi[:2, 0] = [-math.pi / 2, 0]
    lo[:2, -1] = hi[:2, -1] = [math.pi / 2, 0]
    guess = np.zeros((3, N))
    guess[0] = np.linspace(-math.pi / 2, math.pi / 2, N)
    sol = solver(x0=guess.T.ravel(), lbx=lo.T.ravel(), ubx=hi.T.ravel(), lbg=0, ubg=0)
    Z = np.array(sol["x"]).reshape(N, 3)
    assert res.objective == pytest.approx(float(sol["f"]), rel=1e-8)
    assert np.allclose(res.u[:, 0], Z[:, 2], atol=1e-6) and np.allclose(res.q[:, 0], Z[:, 0], atol=1e-7)


def test_passive_model_energy_closed_form(build_dir: Path) -> None:
    """A model without inputs: the rate at the bottom that brings a passive rod pendulum to rest at the
    horizontal is sqrt(3 g / L) (energy: I w^2 / 2 = m g L / 2 with I = m L^2 / 3)."""
    data = {**PENDULUM, "name": "passive",
            "links": [{**PENDULUM["links"][0], "joint": {"actuated": False}}]}
    cm = rodgen.build(load_dict(data), build_dir=build_dir)
    assert cm.nu == 0
    r = Problem(cm, nodes=31, duration=(0.1, 3.0), terminal="duration", initial={"phi": -math.pi / 2},
                final={"phi": 0, "phi_dot": 0}, bounds={"phi_dot": (0, math.inf)}).solve(build_dir=build_dir)
    assert r.success, r.message
    assert r.qd[0, 0] == pytest.approx(math.sqrt(3 * 9.81), rel=1e-6)
    assert r.u.shape == (len(r.t), 0) and r.simulate_check() < 1e-5


def test_models_with_constraint_blocks_are_refused(build_dir: Path) -> None:
    fourbar = rodgen.build(rodgen.load(Path(__file__).resolve().parents[1] / "examples" / "fourbar.yaml"),
                           build_dir=build_dir)
    with pytest.raises(OptimizeError, match="model: .*loops, limits or joint friction \\('close'\\)"):
        Problem(fourbar).check()


def test_a_compiled_problem_is_found_without_deriving(pendulum: object, build_dir: Path) -> None:
    """The second compile of the same problem reuses the library through the cache's index, without SymPy."""
    from unittest import mock
    pr = Problem(pendulum, nodes=7, objective="tau_arm**2 + phi_dot**4", hessian="exact")
    first = optimize.compile_problem(pr, build_dir=build_dir)
    with mock.patch("rodgen.optimize.derive.derive_problem", side_effect=AssertionError("derived again")):
        second = optimize.compile_problem(pr, build_dir=build_dir)
    assert second.library == first.library
    changed = optimize.compile_problem(Problem(pendulum, nodes=7, objective="tau_arm**2 + phi_dot**2",
                                               hessian="exact"), build_dir=build_dir)
    assert changed.library != first.library


def test_a_compiled_problem_is_keyed_by_the_cpu_it_is_built_for(pendulum: object,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The index key that finds a compiled problem without deriving holds what the library's own key holds: the
    flags and the CPU a native build is for, so a cache shared with another CPU (or a portable build) never finds
    this machine's native library."""
    from rodgen.optimize.solve import quick_key
    from rodgen.toolchain import compiler as compiler_mod
    valid = Problem(pendulum, nodes=7, objective="tau_arm**2").check()
    monkeypatch.setenv("RODGEN_ARCH", "native")
    native = quick_key(valid, None)
    assert quick_key(valid, None) == native
    monkeypatch.setenv("RODGEN_ARCH", "portable")
    assert quick_key(valid, None) != native
    monkeypatch.setenv("RODGEN_ARCH", "native")
    real = compiler_mod.target_identity

    def other_cpu(compiler: tuple[str, ...], arch: object) -> str:
        return real(compiler, arch) + "\n-march=another-cpu"  # type: ignore[arg-type]

    monkeypatch.setattr(compiler_mod, "target_identity", other_cpu)
    assert quick_key(valid, None) != native


@pytest.mark.parametrize("method, tol", [("hermite-simpson", 5e-4), ("trapezoidal", 3e-2)])
def test_prescribed_motion_gives_the_inverse_dynamics(pendulum: object, build_dir: Path, method: str,
                                                      tol: float) -> None:
    """The prescribed-kinematics problem solved as an optimisation: the motion held by a path constraint in
    the time t, phi = -pi/2 + 0.5 sin(2 t). The collocation determines each interval's quadrature of the
    input (trapezoidal: the mean of its ends; Hermite-Simpson: Simpson's weights), not the points' inputs
    one by one (they ring about it); those means are the inverse dynamics' tau = I phi'' + m g L/2 cos(phi),
    I = m L^2 / 3 (closed form), to the collocation's accuracy, and so are the model's own inverse dynamics."""
    r = Problem(pendulum, nodes=41, duration=2.0, method=method, objective="tau_arm**2",
                path=[("phi - (-pi/2 + 0.5*sin(2*t))", 0, 0)], initial={"phi_dot": 1.0}).solve(
                    options={"tol": 1e-10}, build_dir=build_dir)
    assert r.success, r.message
    t = r.t
    phi, phidd = -math.pi / 2 + 0.5 * np.sin(2 * t), -2.0 * np.sin(2 * t)
    assert np.allclose(r.q[:, 0], phi, atol=1e-9)
    assert np.max(np.abs(r.qd[:, 0] - np.cos(2 * t))) < tol
    tau = phidd / 3 + 9.81 / 2 * np.cos(phi)

    def means(x: np.ndarray) -> np.ndarray:
        if method == "trapezoidal":
            return (x[1:] + x[:-1]) / 2
        return (x[0:-1:2] + 4 * x[1::2] + x[2::2]) / 6

    assert np.max(np.abs(means(r.u[:, 0]) - means(tau))) < tol
    Q = pendulum.inverse_dynamics(r.q, r.qd, phidd[:, None])
    assert np.max(np.abs(Q[:, 0] - tau)) < 1e-12


def test_time_needs_a_fixed_duration(pendulum: object) -> None:
    with pytest.raises(OptimizeError, match="objective: .*time t, which needs a fixed duration"):
        Problem(pendulum, duration=(1, 2), objective="(phi - t)**2").check()


COMPASS = {"name": "compass_pinned", "gravity": ["g*sin(gamma)", "-g*cos(gamma)"],
           "parameters": {"g": 9.81, "m": 5.0, "m_H": 10.0, "a": 0.5, "b": 0.5, "gamma": math.radians(3.0)},
           "links": [
               {"name": "stance", "coordinate": "s", "angle": "absolute", "offset": "pi/2",
                "joint": {"actuated": False},
                "segments": [{"name": "stance_s", "length": "a + b",
                              "masses": [{"mass": "m", "offset": "a", "name": "mass_s"},
                                         {"mass": "m_H", "fraction": 1, "name": "hip"}]}]},
               {"name": "swing", "parent": "stance", "coordinate": "w", "angle": "absolute", "offset": "-pi/2",
                "joint": {"actuated": False},
                "segments": [{"name": "swing_s", "length": "a + b",
                              "masses": [{"mass": "m", "offset": "b", "name": "mass_w"}]}]}]}


def _heel_strike(m: float, m_hip: float, a: float, b: float) -> list[str]:
    """The compass gait's heel strike as two equations in the names of the problem: the angular momentum of
    the walker about the new stance foot, and that of the trailing leg about the hip, are the same before
    (the last node, ``*_end``) and after (the first node, ``*_start``, legs relabelled)."""
    import sympy as sp
    n = {k: sp.Symbol(k) for k in (f"{v}_{e}" for e in ("start", "end") for v in ("s", "w", "s_dot", "w_dot"))}
    l = a + b

    def points(end: str, origin: object) -> dict:
        s, w, sd, wd = (n[f"{v}_{end}"] for v in ("s", "w", "s_dot", "w_dot"))
        f1, f2 = s + sp.pi / 2, w - sp.pi / 2      # the legs' directions (stance: foot to hip, swing: hip to foot)
        e, de = (lambda q: sp.Matrix([sp.cos(q), sp.sin(q)])), (lambda q: sp.Matrix([-sp.sin(q), sp.cos(q)]))
        hip, vhip = origin + l * e(f1), l * de(f1) * sd
        return {"p1": (origin + a * e(f1), a * de(f1) * sd), "hip": (hip, vhip),
                "p2": (hip + b * e(f2), vhip + b * de(f2) * wd), "foot2": hip + l * e(f2)}

    def cross(r: object, v: object) -> object:
        return r[0] * v[1] - r[1] * v[0]

    pre = points("end", sp.zeros(2, 1))
    c, hip = pre["foot2"], pre["hip"][0]
    post = points("start", c)

    def total(P: dict) -> object:
        return sum(mass * cross(P[k][0] - c, P[k][1]) for k, mass in (("hip", m_hip), ("p1", m), ("p2", m)))

    trailing = m * cross(pre["p1"][0] - hip, pre["p1"][1]) - m * cross(post["p2"][0] - hip, post["p2"][1])
    return [str(sp.trigsimp(sp.expand(total(pre) - total(post)))), str(sp.trigsimp(sp.expand(trailing)))]


def test_passive_compass_gait_period_one_gait_with_the_heel_strike(build_dir: Path) -> None:
    """A periodic gait with an impact: the passive compass gait (Goswami's walker, 3 degrees) pinned at its
    stance foot, one step by collocation, the heel strike and the legs' relabelling as boundary constraints
    between the last and the first node. The gait is the period-one fixed point of the independent SciPy
    walker of tests/_compass_reference.py (its own Lagrangian and impact law, Newton on its step map)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _compass_reference import Walker, fixed_point, step
    x_ref, _ = fixed_point(Walker(), np.array([-0.26, 1.1, 0.35]))
    T_ref = step(Walker(), x_ref)[1]
    cm = rodgen.build(load_dict(COMPASS), build_dir=build_dir)
    strike = _heel_strike(5.0, 10.0, 0.5, 0.5)
    boundary = [("s_start - w_end", 0, 0), ("w_start - s_end", 0, 0),   # the legs swap
                ("w_end + s_end", 0, 0),                                # both feet on the slope
                (strike[0], 0, 0), (strike[1], 0, 0)]
    pr = Problem(cm, nodes=41, duration=(0.3, 1.5), boundary=boundary, bounds={"s": (-1, 1), "w": (-1, 1)})
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    Z = np.zeros((nlp.points, 4))        # a guess: the legs swing past each other at constant rates
    Z[:, 0] = np.linspace(-0.2, 0.2, nlp.points)
    Z[:, 1], Z[:, 2], Z[:, 3] = -Z[:, 0], 0.5, -0.5
    r = nlp.solve(np.append(Z.ravel(), 0.7), options={"tol": 1e-10})
    assert r.success, r.message
    # the reference's angles from the slope normal are -s, -w (and its rates -s', -w')
    np.testing.assert_allclose([r.q[0, 0], r.q[0, 1], r.qd[0, 0], r.qd[0, 1]], -x_ref, atol=1e-6)
    assert r.duration == pytest.approx(T_ref, abs=1e-6)
    assert r.simulate_check() < 1e-4
