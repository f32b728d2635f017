"""The state-transition matrix of a simulation (rodgen.runtime.sensitivity.state_transition), propagated
through the RK4 stages with the RHS Jacobian: its states are those of the compiled RK4 run, its matrices
central differences of the compiled run's final state (by the initial state and by a constant input)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.runtime.sensitivity import rk4_grid, state_transition

H = 1e-6


def _final(robot: object, y0: np.ndarray, t_end: float, dt: float, u: np.ndarray) -> np.ndarray:
    res = robot.simulate(y0, t_end, dt, u=u)  # type: ignore[attr-defined]
    return np.concatenate([res.q[-1], res.qd[-1]])


@pytest.mark.parametrize("example", ["two_link_masses.yaml", "spatial/arm3.yaml"])
def test_transition_matrix_is_the_difference_of_the_simulated_final_state(example: str, build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / example), build_dir=build_dir)
    n, nu = robot.nv, robot.nu
    rng = np.random.default_rng(2)
    y0 = np.concatenate([robot.initial_state()[:n] + 0.3 * rng.normal(size=n), rng.normal(size=n)])
    u = rng.normal(size=nu)
    t_end, dt = 0.4037, 0.01         # the last step shorter than dt, as the C grid has it
    tr = state_transition(robot, y0, t_end, dt, u)
    assert np.allclose(tr.t, robot.simulate(y0, t_end, dt, u=u).t, atol=1e-15, rtol=0)
    final = _final(robot, y0, t_end, dt, u)
    assert np.abs(tr.y[-1] - final).max() <= 1e-12 * max(1.0, np.abs(final).max())
    num = np.zeros((2 * n, 2 * n))
    for k in range(2 * n):
        e = np.zeros(2 * n)
        e[k] = H
        num[:, k] = (_final(robot, y0 + e, t_end, dt, u) - _final(robot, y0 - e, t_end, dt, u)) / (2 * H)
    assert np.abs(tr.phi - num).max() <= 1e-6 * max(1.0, np.abs(num).max())
    num_u = np.zeros((2 * n, nu))
    for k in range(nu):
        e = np.zeros(nu)
        e[k] = H
        num_u[:, k] = (_final(robot, y0, t_end, dt, u + e) - _final(robot, y0, t_end, dt, u - e)) / (2 * H)
    assert tr.du.shape == (2 * n, nu)
    assert np.abs(tr.du - num_u).max() <= 1e-6 * max(1.0, np.abs(num_u).max())


def test_grid_and_bad_input() -> None:
    assert np.allclose(rk4_grid(0.0, 0.25, 0.1), [0.0, 0.1, 0.2, 0.25])
    assert np.allclose(rk4_grid(0.0, 0.3, 0.1), [0.0, 0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="t_end > t0"):
        rk4_grid(1.0, 0.5, 0.1)
