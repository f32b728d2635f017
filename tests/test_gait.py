"""rodgen.gait on the passive compass gait: the Poincaré map's Jacobian (flow, event with its saltation
term, impact) against central differences of the simulated stride map; the limit cycle's multipliers
against those of the independent walker of tests/_compass_reference.py (its own Lagrangian, SciPy
integration, momentum-law impact, Jacobian by differences), all inside the unit circle."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen import gait
from rodgen.errors import RodgenError

DT = 1e-3


@pytest.fixture(scope="module")
def walker(build_dir: Path) -> Any:
    sys.path.insert(0, str(EXAMPLES))
    import compass_gait as cg  # the section's state and the arming gap of the example
    robot = rodgen.build(rodgen.load(EXAMPLES / "compass_gait.yaml"), build_dir=build_dir)

    def lift(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The example's section state y(z) and dy/dz."""
        return cg.state(robot, z), cg.section_jacobian(robot, z)

    def P(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return cg.poincare(robot, z, DT)

    return robot, P, lift, cg


def test_poincare_jacobian_is_the_difference_of_the_simulated_stride_map(walker: Any) -> None:
    robot, P, _, _ = walker
    z = np.array([0.2187, -1.0918, -0.3772])
    _, DP = P(z)
    h = 1e-6
    num = np.zeros((3, 3))
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        num[:, j] = (P(z + e)[0] - P(z - e)[0]) / (2 * h)
    assert np.abs(DP - num).max() <= 1e-6 * np.abs(num).max()
    # without the saltation term (the event time held fixed) the Jacobian is another matrix
    y0, S = walker[2](z)
    s = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, arm_gap=walker[3].ARM_GAP)
    E = walker[3].RELABEL
    assert np.abs(E @ s.impact @ s.flow @ S - num).max() > 1e-2
    assert s.active_after == ["foot_b"]


def test_compass_gait_limit_cycle_is_stable_with_the_reference_multipliers(walker: Any) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _compass_reference import Walker, fixed_point
    _, P, _, _ = walker
    lc = gait.fixed_point(P, [0.2187, -1.0918, -0.3772])
    assert lc.residual < 1e-10 and lc.stable
    assert np.all(np.abs(lc.multipliers) < 1.0)
    x, eig = fixed_point(Walker(), np.array([-0.26, 1.1, 0.35]))
    gamma = np.deg2rad(3.0)
    np.testing.assert_allclose(lc.z, [-(x[0] + gamma), -x[2], -x[3]], atol=1e-6)
    np.testing.assert_allclose(np.sort_complex(lc.multipliers), np.sort_complex(eig), atol=1e-4)
    assert not gait.LimitCycle(lc.z, 0.0, 0, np.diag([1.2, 0.5]), gait.multipliers(np.diag([1.2, 0.5]))).stable


def test_bad_strides_are_named(walker: Any) -> None:
    robot, _, lift, cg = walker
    y0, _ = lift(np.array([0.2187, -1.0918, -0.3772]))
    with pytest.raises(ValueError, match="no constraint block 'foot_c'"):
        gait.stride(robot, y0, ["foot_a"], "foot_c", DT)
    with pytest.raises(RodgenError, match="no touchdown"):
        gait.stride(robot, y0, ["foot_a"], "foot_b", DT, t_max=0.05, arm_gap=cg.ARM_GAP)
