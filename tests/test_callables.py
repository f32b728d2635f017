"""One rule for input functions (u(t, q, qd), or u(t, y) with two arguments) in simulate, ode and solve;
wrong functions and arguments fail at once with messages that name the model's names."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
from conftest import EXAMPLES
from rodgen.runtime.callables import arity
from rodgen.runtime.solve import solve

KP, KD = 30.0, 4.0
TARGET = np.array([0.4, -0.3])


@pytest.fixture(scope="module")
def robot(build_dir: Path) -> "rodgen.runtime.CompiledModel":
    return rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)


def pd3(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    return KP * (TARGET - q) - KD * qd + 0.5 * np.sin(t)


def pd2(t: float, y: np.ndarray) -> np.ndarray:
    return pd3(t, y[:2], y[2:])


def test_both_forms_give_the_same_run_and_match_scipy(robot) -> None:
    y0 = np.array([-1.0, 0.5, 0.0, 0.0])
    a = robot.simulate(y0, 2.0, 1e-3, u=pd3)
    b = robot.simulate(y0, 2.0, 1e-3, u=pd2)
    assert a.ok and b.ok
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.u, b.u)
    # an independent integrator on the same law, through ode() in both forms
    for law in (pd3, pd2):
        ref = solve_ivp(robot.ode(u=law), (0, 2.0), y0, method="DOP853", rtol=1e-11, atol=1e-12, t_eval=a.t)
        np.testing.assert_allclose(a.q, ref.y[:2].T, atol=1e-8)
    c = solve(robot, y0, 2.0, dt=1e-3, u=pd3, method="DOP853", rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(c.q, a.q, atol=1e-8)
    np.testing.assert_allclose(c.u, a.u, atol=1e-5)      # KD times the rates: RK4 at 1 ms


@pytest.mark.parametrize("bad", [lambda t: np.zeros(2), lambda t, q, qd, extra: np.zeros(2)])
def test_a_function_of_the_wrong_signature_raises_at_once(robot, bad) -> None:
    y0 = robot.initial_state()
    for call in (lambda: robot.simulate(y0, 1.0, 1e-3, u=bad), lambda: robot.ode(u=bad),
                 lambda: solve(robot, y0, 1.0, dt=1e-2, u=bad)):
        with pytest.raises(TypeError, match=r"must take \(t, q, qd\) \(or \(t, y\) with y = \[q, qd\]\)"):
            call()


def test_a_wrong_result_raises_before_the_run(robot) -> None:
    y0 = robot.initial_state()
    calls = []

    def three(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        calls.append(t)
        return np.zeros(3)
    with pytest.raises(ValueError, match=r"returned 3 values; the model 'double_pendulum' has 2 inputs "
                                         r"\(tau_upper, tau_lower\)"):
        robot.simulate(y0, 1.0, 1e-3, u=three)
    assert calls == [0.0]        # checked once at the start, never integrated
    with pytest.raises(TypeError, match=r"the input function u at t = 0 returned \['a', 'b'\], not numbers"):
        robot.simulate(y0, 1.0, 1e-3, u=lambda t, q, qd: ["a", "b"])
    with pytest.raises(ValueError, match="not finite"):
        robot.simulate(y0, 1.0, 1e-3, u=lambda t, q, qd: [np.nan, 0.0])

    def late(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        if t > 0.5:
            raise RuntimeError("no torque after 0.5 s")
        return np.zeros(2)
    # a function that raises is left to the run: it ends there with the message and the samples so far
    res = robot.simulate(y0, 1.0, 1e-3, u=late)
    assert res.status.value == "failed" and "no torque after 0.5 s" in res.message
    assert 0.49 < res.t[-1] <= 0.5


def test_arity_rule() -> None:
    assert arity(lambda t, q, qd: 0) == 3
    assert arity(lambda t, y: 0) == 2
    assert arity(lambda *args: 0) == 3
    assert arity(lambda t, q, qd=None: 0) == 3
    with pytest.raises(TypeError):
        arity(lambda t, *, q: 0)


def test_lists_take_the_one_state_path(robot, monkeypatch: pytest.MonkeyPatch) -> None:
    q, qd, u = [0.3, 0.7], [0.1, -0.2], [0.5, 0.25]
    want = robot.forward_dynamics(np.array(q), np.array(qd), np.array(u))

    def checked_path(*args: object) -> None:
        raise AssertionError("a list went through the checked path")
    monkeypatch.setattr(robot, "_rows", checked_path)
    np.testing.assert_array_equal(robot.forward_dynamics(q, qd, u), want)
    np.testing.assert_array_equal(robot.forward_dynamics(tuple(q), qd, u), want)
    np.testing.assert_array_equal(robot.mass_matrix(q), robot.mass_matrix(np.array(q)))
    np.testing.assert_array_equal(robot.rhs(0.0, q + qd, u), np.r_[qd, want])
    np.testing.assert_array_equal(robot.inverse_dynamics(q, qd, list(want)),
                                  robot.inverse_dynamics(np.array(q), np.array(qd), want))


def test_messages_name_the_model_names(robot) -> None:
    with pytest.raises(ValueError, match=r"Input 'q' has length 3; the model 'double_pendulum' expects 2 coordinates "
                                         r"\(in the order of .coordinates: th_upper, th_lower\)"):
        robot.mass_matrix([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"expects 2 inputs \(in the order of .inputs: tau_upper, tau_lower\)"):
        robot.forward_dynamics([0, 0], [0, 0], [1.0])
    with pytest.raises(TypeError, match=r"Input 'qd' of the model 'double_pendulum' holds an entry that is not a "
                                        r"number"):
        robot.forward_dynamics([0, 0], [0, "fast"], [0, 0])
    with pytest.raises(ValueError, match=r"Input 'y0' has length 3; .* \(th_upper, th_lower\)"):
        robot.simulate([0, 0, 0], 1.0, 1e-3)
