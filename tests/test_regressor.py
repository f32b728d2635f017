"""The identification regressor: M q̈ + h + G = Y(q, q̇, q̈) θ, its base parameters, identification.

References: the compiled inverse dynamics (a separate routine: Newton-Euler recursion compiled to C;
the spatial one is tested against Pinocchio in test_spatial_pinocchio.py), the closed-form number of
base parameters of a two-link planar arm under gravity (Gautier & Khalil: ZZ1R, MX1R, MY1, ZZ2, MX2,
MY2, i.e. 6), and the masses of the model the data were simulated with.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.runtime.identification import base_parameters, least_squares
from rodgen.symbolic.regressor import numeric_regressor, regressor

TOL = 1e-10


def check_against_inverse_dynamics(model: Any, build_dir: Any, seed: int) -> None:
    reg = regressor(model)
    Y = numeric_regressor(reg)
    robot = rodgen.build(model, build_dir=build_dir)
    assert len(reg.q) == robot.nq and len(reg.names) == len(reg.values)
    rng = np.random.default_rng(seed)
    theta = np.array(reg.values)
    for _ in range(5):
        q = robot.initial_state()[: robot.nq] + 0.5 * rng.standard_normal(robot.nq)
        qd, qdd = rng.standard_normal((2, robot.nq))
        tau = robot.inverse_dynamics(q, qd, qdd)
        y = Y(q, qd, qdd)
        assert y.shape == (robot.nq, theta.size)
        assert np.abs(y @ theta - tau).max() <= TOL * max(1.0, np.abs(tau).max())


def test_planar_regressor_gives_the_inverse_dynamics(build_dir: Any) -> None:
    check_against_inverse_dynamics(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir, 1)


def test_spatial_regressor_gives_the_inverse_dynamics(build_dir: Any) -> None:
    """arm3: bodies with full tensors (one rotated by rpy), a rod and a point mass."""
    model = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    model.links[1].joint.damping = 0.0       # the inverse dynamics compared with has no damping term then
    reg = regressor(model)
    assert [n for n in reg.names if n.startswith("base.")] == [
        "base.body0.m", "base.body0.mx", "base.body0.my", "base.body0.mz", "base.body0.Ixx", "base.body0.Ixy",
        "base.body0.Ixz", "base.body0.Iyy", "base.body0.Iyz", "base.body0.Izz"]
    # m c and the inertia about the frame origin (parallel axis): closed form for the base body
    base = dict(zip(reg.names, reg.values))
    assert base["base.body0.mz"] == pytest.approx(4.0 * 0.08)
    assert base["base.body0.Ixx"] == pytest.approx(0.02 + 4.0 * 0.08 ** 2)
    assert base["base.body0.Izz"] == pytest.approx(0.012)
    check_against_inverse_dynamics(model, build_dir, 2)


def two_link_arm(gravity: bool = True) -> rodgen.Model:
    """A 2R arm in a vertical plane with masses everywhere a link can carry one."""
    m = rodgen.Model("arm2_ident", gravity=(0.0, -9.81) if gravity else (0.0, 0.0))
    a = m.link("a", angle="relative", initial=-1.2)
    a.rigid("a_seg", 0.8, rod=rodgen.Rod(mass=1.5, inertia=0.02),
            masses=[rodgen.PointMass(0.3, fraction=0.0), rodgen.PointMass(0.4, fraction=1.0),
                    rodgen.PointMass(0.2, fraction=0.5, lateral=0.1)])
    b = m.link("b", parent="a", angle="relative", initial=0.4)
    b.rigid("b_seg", 0.6, rod=rodgen.Rod(mass=0.9, inertia=0.01),
            masses=[rodgen.PointMass(0.5, fraction=0.0), rodgen.PointMass(0.25, fraction=0.7, lateral=-0.05)])
    return m


def test_base_parameters_of_a_two_link_arm_match_the_closed_form_count() -> None:
    reg = regressor(two_link_arm())
    assert len(reg.names) == 9     # 2 rods x (m, I) + 5 point masses
    base = base_parameters(numeric_regressor(reg), 2, names=reg.names)
    assert base.count == 6
    # the point mass at link a's joint never moves: not identifiable; the mass at a's end and the one at
    # b's joint sit at the same point: only their sum is
    names = reg.names
    assert names.index("a_seg.mass0.m") in base.dependent
    i_end, i_joint = names.index("a_seg.mass1.m"), names.index("b_seg.mass0.m")
    assert (i_end in base.dependent) != (i_joint in base.dependent)


def test_base_parameters_reproduce_the_torques() -> None:
    reg = regressor(two_link_arm())
    Y = numeric_regressor(reg)
    base = base_parameters(Y, 2)
    rng = np.random.default_rng(7)
    theta = np.array(reg.values)
    for _ in range(3):
        q, qd, qdd = rng.standard_normal((3, 2))
        y = Y(q, qd, qdd)
        np.testing.assert_allclose(y[:, base.independent] @ base.of(theta), y @ theta, rtol=0, atol=1e-10)


def test_identification_recovers_the_masses_from_noise_free_data(build_dir: Any) -> None:
    """Torques of a double pendulum with masses m1 = 1.37, m2 = 0.61 along a simulated trajectory."""
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    robot = rodgen.build(model, build_dir=build_dir)
    p = robot.parameter_vector(m1=1.37, m2=0.61)
    rng = np.random.default_rng(3)
    states, torques = [], []
    for _ in range(40):
        q, qd, qdd = rng.standard_normal((3, 2))
        states.append((q, qd, qdd))
        torques.append(robot.inverse_dynamics(q, qd, qdd, p))
    reg = regressor(model)
    Y = numeric_regressor(reg)
    base = base_parameters(Y, 2, names=reg.names)
    assert base.count == 4 and not base.dependent        # uniform rods: every mass and inertia identifiable
    est = least_squares(Y, states, torques, base)
    theta = dict(zip([reg.names[k] for k in base.independent], est))
    assert theta["upper_rod.rod0.m"] == pytest.approx(1.37, abs=1e-6)
    assert theta["lower_rod.rod0.m"] == pytest.approx(0.61, abs=1e-6)
    assert theta["lower_rod.rod0.I"] == pytest.approx(0.61 * 0.7 ** 2 / 12, abs=1e-6)


def test_identify_masses_example(tmp_path: Any) -> None:
    """The example script: exact masses from noise-free data, close ones from noisy data."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("example_identify_masses", EXAMPLES / "identify_masses.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.run(str(tmp_path), build_dir=str(tmp_path / "build"))
    assert out["noise-free.m1"] == pytest.approx(1.37, abs=1e-6)
    assert out["noise-free.m2"] == pytest.approx(0.61, abs=1e-6)
    assert out["noisy.m1"] == pytest.approx(1.37, rel=0.02) and out["noisy.m2"] == pytest.approx(0.61, rel=0.02)


def test_spatial_regressor_matches_pinocchio_on_ur5() -> None:
    """UR5 from its URDF: each moving link's ten columns are Pinocchio's computeJointTorqueRegressor block of
    its joint (Pinocchio orders the inertia xx, xy, yy, xz, yz, zz; rodgen xx, xy, xz, yy, yz, zz); the
    fixed base link's columns are zero."""
    pin = pytest.importorskip("pinocchio")
    from _robots import pin_configuration, robot_file

    path = robot_file("ur_description/urdf/ur5_robot.urdf")
    model = rodgen.from_urdf(path)
    reg = regressor(model)
    Y = numeric_regressor(reg)
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    coords = [c.name for c in model.validate().independent_coordinates()]
    links = ["shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link", "wrist_2_link", "wrist_3_link"]
    order = [0, 1, 2, 3, 4, 5, 7, 6, 8, 9]          # Pinocchio's column k is rodgen's order[k]
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-np.pi, np.pi, 6), rng.standard_normal(6), rng.standard_normal(6)
        Yr = Y(q, qd, qdd)
        Yp = pin.computeJointTorqueRegressor(pm, pd, pin_configuration(coords, pm, q), qd, qdd)
        for j, link in enumerate(links):
            k = reg.names.index(f"{link}.body0.m")
            np.testing.assert_allclose(Yr[:, k:k + 10][:, order], Yp[:, 10 * j:10 * j + 10], rtol=0, atol=1e-10)
        k = reg.names.index("base_link.body0.m")
        assert np.abs(Yr[:, k:k + 10]).max() == 0.0


def test_regressor_refuses_what_it_cannot_take() -> None:
    from rodgen.errors import ModelError
    with pytest.raises(ModelError, match="takes a model"):
        regressor(rodgen.load(EXAMPLES / "double_pendulum.yaml").validate())
    m = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    m.links[0].bodies[0].mass = -1.0
    with pytest.raises(ModelError, match="base.body0"):
        regressor(m)


@pytest.mark.parametrize("path", ["double_pendulum.yaml", "spatial/arm3.yaml"])
def test_generated_regressor_routine(build_dir: Any, path: str) -> None:
    """<prefix>_regressor in C (CodegenOptions(regressor=True)): Y theta is the compiled inverse dynamics (a
    separate routine; arm3 without its joint damping) and Y the symbolic regressor evaluated in NumPy."""
    from rodgen.codegen import CodegenOptions
    model = rodgen.load(EXAMPLES / path)
    if path.startswith("spatial"):
        model.links[1].joint.damping = 0.0
    robot = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(regressor=True))
    reg = regressor(model)
    assert robot.theta_names == reg.names
    Yn = numeric_regressor(reg)
    rng = np.random.default_rng(4)
    Q, QD, QDD = rng.standard_normal((3, 5, robot.nq))
    Y = robot.regressor(Q, QD, QDD)
    assert Y.shape == (5, robot.nq, len(reg.names))
    for k in range(5):
        tau = robot.inverse_dynamics(Q[k], QD[k], QDD[k])
        assert np.abs(Y[k] @ np.array(reg.values) - tau).max() <= TOL * max(1.0, np.abs(tau).max())
        np.testing.assert_allclose(robot.regressor(Q[k], QD[k], QDD[k]), Yn(Q[k], QD[k], QDD[k]), rtol=0, atol=1e-12)


def test_regressor_is_opt_in(build_dir: Any) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    assert robot.theta_names == []
    with pytest.raises(TypeError, match="regressor=True"):
        robot.regressor([0.0, 0.0], [0.0, 0.0], [0.0, 0.0])


def test_base_parameters_of_a_compiled_model(build_dir: Any) -> None:
    """base_parameters(robot) on the generated routine: the count of the NumPy regressor's and the closed
    form's, and its combinations reproduce Y theta (which columns are picked among equal ones may differ)."""
    from rodgen.codegen import CodegenOptions
    model = two_link_arm()
    robot = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(regressor=True))
    reg = regressor(model)
    a = base_parameters(robot)
    b = base_parameters(numeric_regressor(reg), 2, names=reg.names)
    assert a.count == b.count == 6 and a.names == reg.names
    theta = np.array(reg.values)
    rng = np.random.default_rng(9)
    for _ in range(3):
        q, qd, qdd = rng.standard_normal((3, 2))
        y = robot.regressor(q, qd, qdd)
        np.testing.assert_allclose(y[:, a.independent] @ a.of(theta), y @ theta, rtol=0, atol=1e-10)


def test_generate_writes_the_regressor_routine() -> None:
    """generate() takes Equations with the regressor attached (the code stage derives nothing of its own)."""
    from rodgen.codegen import CodegenOptions, generate
    from rodgen.errors import CodegenError
    from rodgen.symbolic.regressor import attach_regressor
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    eqs = attach_regressor(rodgen.derive(model, "recursive"), model)
    files = generate(eqs, options=CodegenOptions(regressor=True))
    text = "".join(files.values()) if hasattr(files, "values") else str(files)
    assert "double_pendulum_regressor(" in text and "double_pendulum_theta_list(" in text
    with pytest.raises(CodegenError, match="regressor"):      # without it: a clear error
        generate(model, options=CodegenOptions(regressor=True))
