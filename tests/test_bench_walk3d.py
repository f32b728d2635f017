"""The MuJoCo twin of the 3D biped that benchmarks/bench_walk3d.py runs against rodgen is the same mechanism.

At a random state (a random pelvis orientation, random joint angles and velocities), MuJoCo's mass matrix
and forward dynamics of the MJCF (examples/spatial/biped12_gait.mjcf), turned into rodgen's coordinates by
the benchmark's map (the quaternion's order; the free joint's linear velocity in the world frame against
rodgen's in the pelvis frame), equal rodgen's compiled ones: two independent implementations (MuJoCo's CRB
and its own kinematics from the MJCF, rodgen's generated code from the YAML).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen

ROOT = Path(__file__).resolve().parent.parent
SPATIAL = ROOT / "examples" / "spatial"


def _module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def twin(build_dir: Path) -> tuple[Any, ...]:
    mujoco = pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bench = _module("bench_walk3d_under_test", ROOT / "benchmarks" / "bench_walk3d.py")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    G = _module("example_biped12_gait_twin", SPATIAL / "biped12_gait.py")
    robot = rodgen.build(rodgen.load(SPATIAL / "biped12.yaml"), build_dir=build_dir)
    mm = mujoco.MjModel.from_xml_string(G.mjcf(robot))
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT     # free flight: no contact forces
    return mujoco, bench, G, robot, mm


def _state(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quat = rng.standard_normal(4)
    q = np.r_[rng.standard_normal(3), quat / np.linalg.norm(quat), 0.8 * rng.standard_normal(12)]
    return q, rng.standard_normal(18)


def _velocity_map(bench: Any, q: np.ndarray) -> np.ndarray:
    """T with qvel = T v (the benchmark's map, column by column)."""
    return np.column_stack([bench.mujoco_qvel(q, e) for e in np.eye(18)])


@pytest.mark.parametrize("seed", [0, 1])
def test_mass_matrix_equals_rodgen(twin: tuple[Any, ...], seed: int) -> None:
    """Equal kinetic energy for every velocity: M_rodgen = T^T M_mujoco T, to 1e-9 relative."""
    mujoco, bench, G, robot, mm = twin
    q, _ = _state(seed)
    d = mujoco.MjData(mm)
    d.qpos[:] = G.mujoco_qpos(q)
    mujoco.mj_forward(mm, d)
    M = np.zeros((mm.nv, mm.nv))
    mujoco.mj_fullM(mm, d, M)
    T = _velocity_map(bench, q)
    assert not np.allclose(T[:3, :3], np.eye(3))         # the frames differ at this orientation
    expected = robot.mass_matrix(q)
    np.testing.assert_allclose(T.T @ M @ T, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_dynamics_equals_rodgen(twin: tuple[Any, ...], seed: int) -> None:
    """With velocities and joint torques: MuJoCo's qacc is d/dt of qvel = [R v_lin, omega, qd], so rodgen's
    acceleration is [R^T a_lin - omega x v_lin, alpha, qdd]; equal to 1e-8 relative."""
    mujoco, bench, G, robot, mm = twin
    q, v = _state(seed)
    u = 20.0 * np.random.default_rng(seed + 10).standard_normal(12)
    d = mujoco.MjData(mm)
    d.qpos[:] = G.mujoco_qpos(q)
    d.qvel[:] = bench.mujoco_qvel(q, v)
    d.ctrl[:] = u
    mujoco.mj_forward(mm, d)
    R = bench.quat_matrix(q[3:7])
    a_mj = np.asarray(d.qacc, float)
    a = np.r_[R.T @ a_mj[:3] - np.cross(v[3:6], v[:3]), a_mj[3:]]
    expected = robot.forward_dynamics(q, v, u)
    np.testing.assert_allclose(a, expected, rtol=0, atol=1e-8 * np.abs(expected).max())
