"""Numbers that were silently wrong or crashed on unusual but valid input: parameter overrides of spatial and
URDF models (against a model rebuilt with the changed value), constants far from 1 in the generated C
(against SymPy's own evaluation), exactly singular configurations (the singular-M status), the length checks
of the Cython Simulation, and the rows of simulate_batch against simulate."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.errors import ModelError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


# -------------------------------------------------------------------------------------------------------------
# parameter overrides of spatial and URDF models
# -------------------------------------------------------------------------------------------------------------


def _arm3(**defaults: float) -> rodgen.SpatialModel:
    m = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    for p in m.parameters:
        if p.name in defaults:
            p.value = defaults.pop(p.name)
    assert not defaults
    return m


def test_spatial_parameter_override_equals_a_rebuilt_model(build_dir: Path) -> None:
    arm = rodgen.build(_arm3(), build_dir=build_dir)
    heavy = rodgen.build(_arm3(m_load=1.7, l_fore=0.5), build_dir=build_dir)
    y0 = np.array([0.3, 0.8, -0.6, 0.1, -0.2, 0.4])
    p = {"m_load": 1.7, "l_fore": 0.5}
    # the defaults given explicitly give the defaults' run, the changed values the rebuilt model's run
    same = arm.simulate(y0, 0.2, 1e-3, p=dict(arm.parameters))
    base = arm.simulate(y0, 0.2, 1e-3)
    assert np.array_equal(same.q, base.q)
    over = arm.simulate(y0, 0.2, 1e-3, p=p)
    ref = heavy.simulate(y0, 0.2, 1e-3)
    assert np.allclose(over.q, ref.q, rtol=1e-12, atol=1e-12)
    assert np.abs(over.q[-1] - base.q[-1]).max() > 1e-3            # the override changed the motion
    q, qd = y0[:3], y0[3:]
    assert np.allclose(arm.forward_dynamics(q, qd, p=p), heavy.forward_dynamics(q, qd), rtol=1e-12, atol=1e-12)


def test_spatial_parameter_override_keeps_the_sign_rules(build_dir: Path) -> None:
    arm = rodgen.build(_arm3(), build_dir=build_dir)
    with pytest.raises(ModelError, match=r"link 'base'.*bodies\[0\]\.mass.*m_base = -1"):
        arm.simulate(np.zeros(6), 0.01, 1e-3, p={"m_base": -1.0})
    with pytest.raises(ModelError, match=r"fore_tube.*length.*l_fore = 0"):
        arm.simulate(np.zeros(6), 0.01, 1e-3, p={"l_fore": 0.0})


def test_urdf_model_takes_its_empty_parameter_vector(build_dir: Path) -> None:
    from _robots import robot_file
    robot = rodgen.build(rodgen.from_urdf(robot_file(
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf")), build_dir=build_dir)
    y0 = np.array([0.4, -0.3, 0.0, 0.0])
    a = robot.simulate(y0, 0.05, 1e-3, p={})
    b = robot.simulate(y0, 0.05, 1e-3)
    assert np.array_equal(a.q, b.q)

