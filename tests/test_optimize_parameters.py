"""Model parameters as variables of a trajectory optimisation (``Problem(free_parameters=...)``): the NLP's
blocks by the parameters against central differences, the pendulum length that makes a given period against
its closed form (the complete elliptic integral), and errors for what is not supported."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import rodgen
from _num import central_jacobian, check_nlp_jacobian
from rodgen.codegen import CodegenOptions
from rodgen.model.loader import load_dict

pytest.importorskip("casadi")
from rodgen import optimize  # noqa: E402
from rodgen.optimize import OptimizeError, Problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: a point mass m on a massless arm of length L, swinging freely under gravity
SWING = {"name": "swing", "gravity": [0, "-g"], "parameters": {"m": 1.0, "L": 1.0, "g": 9.81},
         "links": [{"name": "arm", "coordinate": "phi", "joint": {"actuated": False},
                    "segments": [{"name": "arm_s", "length": "L", "masses": [{"mass": "m", "offset": "L"}]}]}]}
WITH_PARTIALS = CodegenOptions(parameter_derivatives=True)


@pytest.fixture(scope="module")
def double_pendulum(build_dir: Path) -> object:
    return rodgen.build(rodgen.load(ROOT / "examples" / "double_pendulum.yaml"), build_dir=build_dir,
                        codegen=WITH_PARTIALS)


@pytest.mark.parametrize("method, free", [("hermite-simpson", True), ("backward-euler", False)])
def test_parameter_blocks_match_central_differences(double_pendulum: object, build_dir: Path, method: str,
                                                    free: bool) -> None:
    """The constraint Jacobian's and the objective gradient's columns of two free parameters (the defects
    through dqdd/dp = -M^-1 dg/dp from the model's parameter_partials, path, boundary, integrand and terminal
    terms that read them) at random points, and the parameters' bounds."""
    pr = Problem(double_pendulum, nodes=4, method=method, duration=(0.5, 2.0) if free else 1.3,
                 objective="tau_upper**2 + m2*sin(th_lower)*th_upper_dot**2 + L2**2*tau_lower",
                 terminal="L1*duration + cos(th_upper)*th_lower_dot",
                 path=[("sin(th_upper) + L1*th_lower_dot*tau_lower", -1, 1)],
                 boundary=[("(th_upper_end - th_upper_start)*m2/duration", 0, 1)],
                 free_parameters={"m2": (0.2, 3.0), "L1": (0.5, 2.0)})
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    xl, xu, _, _ = nlp.bounds()
    np.testing.assert_array_equal(xl[-2:], [0.2, 0.5])
    np.testing.assert_array_equal(xu[-2:], [3.0, 2.0])
    np.testing.assert_array_equal(nlp.guess()[-2:], [0.8, 1.0])      # the model's values
    rng = np.random.default_rng(5)
    for _ in range(2):
        x = rng.uniform(-1.2, 1.2, nlp.n)
        x[-2:] = rng.uniform(0.6, 1.5, 2)
        if free:
            x[-3] = rng.uniform(0.6, 1.8)
        Jn = check_nlp_jacobian(nlp, x, outside_atol=1e-8)
        assert np.abs(Jn[:, -2:]).max() > 1e-3                     # the parameters' columns are not empty
        gn = central_jacobian(lambda y: np.array([nlp.objective(y)]), x)[0]
        assert np.abs(nlp.gradient(x) - gn).max() <= 1e-6 * max(1.0, np.abs(gn).max())


@pytest.mark.parametrize("hessian", ["exact", "differences"])
def test_hessian_with_free_parameters_matches_central_differences(double_pendulum: object, build_dir: Path,
                                                                   hessian: str) -> None:
    """The Hessian of the Lagrangian with two free parameters (their rows by differences of the exact
    gradient, the points' blocks exact or by differences) against central differences of sigma grad f +
    J^T lam, with a free duration, path, boundary and terminal terms that read the parameters."""
    pr = Problem(double_pendulum, nodes=3, method="trapezoidal", duration=(0.5, 2.0),
                 objective="tau_upper**2 + m2*sin(th_lower)*th_upper_dot**2 + L2**2*tau_lower",
                 terminal="L1*duration**2 + cos(th_upper)*th_lower_dot",
                 path=[("sin(th_upper) + L1*th_lower_dot*tau_lower", -1, 1)],
                 boundary=[("(th_upper_end - th_upper_start)*m2/duration", 0, 1)],
                 free_parameters={"m2": (0.2, 3.0), "L1": (0.5, 2.0)}, hessian=hessian)
    nlp = optimize.compile_problem(pr, build_dir=build_dir)
    rng = np.random.default_rng(9)
    x = rng.uniform(-1.2, 1.2, nlp.n)
    x[-2:] = rng.uniform(0.6, 1.5, 2)
    x[-3] = rng.uniform(0.6, 1.8)
    lam = rng.normal(size=nlp.m)
    H = nlp.hessian(x, 0.7, lam).toarray()
    Hn = central_jacobian(lambda y: 0.7 * nlp.gradient(y) + nlp.jacobian(y).T @ lam, x)
    assert np.abs(H - Hn).max() <= 1e-6 * max(1.0, np.abs(Hn).max()), np.abs(H - Hn).max()
    assert np.abs(Hn[-2:, :]).max() > 1e-3


def test_pendulum_length_for_a_given_period(build_dir: Path) -> None:
    """A free swing from rest 1 rad to one side of hanging (phi = -pi/2) to rest 1 rad to the other in 0.9 s,
    the arm's length free: half the period 2 pi sqrt(L/g) (2/pi) K(sin^2(1/2)) of the nonlinear pendulum, so
    L = g (T / (2 K))^2."""
    from scipy.special import ellipk
    swing = rodgen.build(load_dict(SWING), build_dir=build_dir, codegen=WITH_PARTIALS)
    half, amp = 0.9, 1.0
    res = Problem(swing, nodes=31, duration=half, method="hermite-simpson",
                  initial={"phi": -math.pi / 2 + amp, "phi_dot": 0.0},
                  final={"phi": -math.pi / 2 - amp, "phi_dot": 0.0},
                  free_parameters={"L": (0.3, 1.5)}).solve(options={"tol": 1e-12}, build_dir=build_dir)
    assert res.success, res.message
    expected = 9.81 * (half / (2.0 * ellipk(math.sin(amp / 2) ** 2))) ** 2
    assert res.parameters["L"] == pytest.approx(expected, rel=1e-6)
    # the same with the Hessian by differences
    again = Problem(swing, nodes=31, duration=half, method="hermite-simpson", hessian="differences",
                    initial={"phi": -math.pi / 2 + amp, "phi_dot": 0.0},
                    final={"phi": -math.pi / 2 - amp, "phi_dot": 0.0},
                    free_parameters={"L": (0.3, 1.5)}).solve(options={"tol": 1e-12}, build_dir=build_dir)
    # (the defects fix L only to about 1e-9 here: IPOPT's two ways of solving with the limited-memory Hessian end
    # 1.7e-9 apart, both feasible to 1e-15)
    assert again.success and again.parameters["L"] == pytest.approx(res.parameters["L"], rel=1e-8)
    # the solution's parameter drives its resimulation: the arm swings to the other side at the end
    sim = res.simulate()
    assert sim.q[-1, 0] == pytest.approx(-math.pi / 2 - amp, abs=1e-4)


def test_free_parameters_refuse_what_they_cannot_do(double_pendulum: object, build_dir: Path) -> None:
    plain = rodgen.build(load_dict(SWING), build_dir=build_dir)
    with pytest.raises(OptimizeError, match=r"free_parameters: free parameters need the model's derivatives by "
                                            r"its parameters: build .*parameter_derivatives=True"):
        Problem(plain, free_parameters={"L": (0.5, 2.0)}).check()
    with pytest.raises(OptimizeError, match=r"free_parameters\['L12'\]: unknown parameter 'L12' \(did you mean"):
        Problem(double_pendulum, free_parameters={"L12": (0.5, 2.0)}).check()
    with pytest.raises(OptimizeError, match=r"free_parameters\['L1'\]: the lower bound 2 is above"):
        Problem(double_pendulum, free_parameters={"L1": (2.0, 0.5)}).check()
    with pytest.raises(OptimizeError, match="free_parameters: expected a mapping of parameter names"):
        Problem(double_pendulum, free_parameters=["L1"]).check()  # type: ignore[arg-type]
