"""∂y(T)/∂p through the RK4 stages with the generated parameter_partials (CodegenOptions(
parameter_derivatives=True)): against central differences in p of the simulated final state, and against
the closed form of a rod pendulum's small oscillation (θ(T) = -π/2 + ε cos(ωT), ω² = 3g/(2L), the mass
dropping out); builds without the option keep their table and say what is missing."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.codegen.options import CodegenOptions
from rodgen.errors import CodegenError
from rodgen.runtime.sensitivity import state_transition

OPTS = CodegenOptions(parameter_derivatives=True)

ROD = """
name: rod_pendulum
gravity: [0, -g]
parameters:
  g: 9.81
  m: 1.3
  L: 0.5
links:
  - name: arm
    initial: -pi/2
    segments:
      - {name: arm_rod, length: L, rod: {mass: m}}
"""


def test_parameter_sensitivity_is_the_difference_of_the_simulated_final_state(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), codegen=OPTS, build_dir=build_dir)
    y0 = np.array([-1.0, 0.5, 0.3, -0.2])
    T, dt = 1.0, 1e-3
    tr = state_transition(robot, y0, T, dt, parameters=True)
    p0 = np.array([robot.parameters[nm] for nm in robot.parameters])
    assert tr.dp is not None and tr.dp.shape == (4, p0.size)
    num = np.zeros_like(tr.dp)
    for k in range(p0.size):
        h = 1e-6 * max(1.0, abs(p0[k]))
        e = np.zeros(p0.size)
        e[k] = h
        yp = robot.simulate(y0, T, dt, p=p0 + e)
        ym = robot.simulate(y0, T, dt, p=p0 - e)
        num[:, k] = (np.r_[yp.q[-1], yp.qd[-1]] - np.r_[ym.q[-1], ym.qd[-1]]) / (2 * h)
    np.testing.assert_allclose(tr.dp, num, atol=1e-7 * np.abs(num).max())
    # the partials themselves against central differences of the inverse dynamics in p
    q, qd, qdd = y0[:2], y0[2:], np.array([0.7, -1.1])
    dg = robot.parameter_partials(q, qd, qdd)
    for k in range(p0.size):
        e = np.zeros(p0.size)
        e[k] = 1e-6
        d = (robot.inverse_dynamics(q, qd, qdd, p0 + e) - robot.inverse_dynamics(q, qd, qdd, p0 - e)) / 2e-6
        np.testing.assert_allclose(dg[:, k], d, atol=1e-8)


def test_rod_pendulum_matches_the_closed_form(build_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "rod_pendulum.yaml"
    path.write_text(ROD)
    robot = rodgen.build(rodgen.load(path), codegen=OPTS, build_dir=build_dir)
    g, L = robot.parameters["g"], robot.parameters["L"]
    eps, T = 1e-4, 1.3
    w = np.sqrt(1.5 * g / L)
    tr = state_transition(robot, [-np.pi / 2 + eps, 0.0], T, 1e-3, parameters=True)
    assert tr.dp is not None
    names = list(robot.parameters)
    # θ = -π/2 + ε cos(ωT): ∂θ/∂ω = -ε T sin(ωT), ∂ω/∂L = -ω/(2L), ∂ω/∂g = ω/(2g); ∂θ/∂m = 0
    dtheta_dw = -eps * T * np.sin(w * T)
    dthetad_dw = -eps * (np.sin(w * T) + w * T * np.cos(w * T))
    expect = {"L": -w / (2 * L), "g": w / (2 * g), "m": 0.0}
    for nm, dw in expect.items():
        k = names.index(nm)
        assert tr.dp[0, k] == pytest.approx(dtheta_dw * dw, rel=1e-6, abs=1e-12)
        assert tr.dp[1, k] == pytest.approx(dthetad_dw * dw, rel=1e-6, abs=1e-12)


def test_without_the_option_the_build_says_what_is_missing(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    with pytest.raises(TypeError, match="parameter_derivatives=True"):
        state_transition(robot, [-1.0, 0.5, 0.0, 0.0], 0.1, 1e-2, parameters=True)
    assert state_transition(robot, [-1.0, 0.5, 0.0, 0.0], 0.1, 1e-2).dp is None
    with pytest.raises(CodegenError, match="parameter_derivatives must be True or False"):
        CodegenOptions(parameter_derivatives="yes")  # type: ignore[arg-type]
    with pytest.raises(CodegenError, match="real='double'"):
        CodegenOptions(parameter_derivatives=True, real="float")
