"""Robots read from URDF files have Pinocchio's dynamics: the compiled model's mass matrix (crba), forward
dynamics (aba; crba and rnea for mimic joints, which aba does not take) and link frames (forward kinematics)
agree to 1e-10 at seeded random states, for robots of the example-robot-data package; the symbolic chain the
code stage prints (rodgen.symbolic.numeric.ChainModel) agrees too."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

import rodgen
from _robots import pin_configuration, robot_file
from rodgen.model.urdf import read_urdf
from rodgen.symbolic.numeric import ChainModel

pin = pytest.importorskip("pinocchio")

TOL = 1e-10

PANDA = "panda_description/urdf/panda.urdf"
CASES = {
    # the 7-joint arm, the fingers held at 2 cm (Pinocchio: buildReducedModel)
    "panda_arm": (PANDA, {"panda_finger_joint1": 0.02}),
    # the arm with its fingers: finger_joint2 mimics finger_joint1 (a coupling; Pinocchio: mimic=True)
    "panda_mimic": (PANDA, None),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", None),
    # the KUKA iiwa is not among example-robot-data 6's robots: another 7-joint arm
    "xarm7": ("xarm_description/urdf/xarm7.urdf", None),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", None),
    # revolute joints whose <limit> gives effort and velocity only (lower = upper = 0): no position limits
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", None),
}


def _pinocchio(path: Path, lock: Optional[dict[str, float]]) -> Any:
    if lock is None:
        return pin.buildModelFromUrdf(str(path), mimic=True)
    full = pin.buildModelFromUrdf(str(path))
    robot = read_urdf(path)
    held = dict(lock)
    for name, (master, mult, off) in robot.mimics.items():
        if master in lock:
            held[name] = mult * lock[master] + off
    q0 = pin.neutral(full)
    for name, value in held.items():
        q0[full.idx_qs[full.getJointId(name)]] = value
    return pin.buildReducedModel(full, [full.getJointId(n) for n in held], q0)


def _states(vm: Any, rng: np.random.Generator, n: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    coords = vm.independent_coordinates()
    lo, hi = [], []
    for c in coords:
        lk = vm.link_named(c.link)
        lim = lk.joint.limits
        lo.append(vm.value(lim[0]) if lim and lim[0] is not None else -np.pi)
        hi.append(vm.value(lim[1]) if lim and lim[1] is not None else np.pi)
    return [(rng.uniform(lo, hi), rng.normal(size=len(coords)), rng.normal(size=len(coords))) for _ in range(n)]


@pytest.mark.parametrize("case", list(CASES))
def test_mass_matrix_and_forward_dynamics_match_pinocchio(case: str, build_dir: Path) -> None:
    relative, lock = CASES[case]
    path = robot_file(relative)
    model = rodgen.from_urdf(path, lock=lock)
    eqs = rodgen.derive(model)
    robot = rodgen.build(model, build_dir=build_dir)
    coords = list(robot.coordinates)
    assert coords == [str(s) for s in eqs.q]
    chain = ChainModel(eqs)
    pm = _pinocchio(path, lock)
    pd = pm.createData()
    assert pm.nv == len(coords) == robot.nv
    order = [pm.idx_vs[pm.getJointId(n)] for n in coords]      # Pinocchio's order of the same joints
    mimic = any(j.shortname() == "JointModelMimic" for j in pm.joints)
    links = [lk.name for lk in read_urdf(path).links]
    rng = np.random.default_rng(sum(map(ord, case)))
    for q, qd, u in _states(eqs.model, rng, 4):
        pq = pin_configuration(coords, pm, q)
        pv = np.zeros(pm.nv)
        pu = np.zeros(pm.nv)
        pv[order], pu[order] = qd, u
        Mp = pin.crba(pm, pd, pq)
        Mp = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(order, order)]
        for M in (robot.mass_matrix(q), chain.mass_matrix(q)):
            assert np.abs(M - Mp).max() <= TOL * max(1.0, np.abs(Mp).max()), case
        if mimic:       # Pinocchio's aba takes no mimic joint: its M and nonlinear effects
            ref = np.linalg.solve(Mp, pu[order] - pin.nonLinearEffects(pm, pd, pq, pv)[order])
        else:
            ref = pin.aba(pm, pd, pq, pv, pu)[order]
        scale = max(1.0, np.abs(ref).max())
        assert np.abs(robot.forward_dynamics(q, qd, u) - ref).max() <= TOL * scale, case
        qdd = np.linalg.solve(chain.mass_matrix(q), chain.input_map(q) @ u - chain.bias(q, qd))
        assert np.abs(qdd - ref).max() <= TOL * scale, case
        # every link frame where Pinocchio puts it
        pin.framesForwardKinematics(pm, pd, pq)
        frames = robot.frames(q)
        for name in links:
            place = pd.oMf[pm.getFrameId(name, pin.FrameType.BODY)]
            pos, rot = frames[f"{name}.joint"]
            np.testing.assert_allclose(pos, place.translation, atol=TOL, err_msg=name)
            np.testing.assert_allclose(rot, place.rotation, atol=TOL, err_msg=name)
    if not mimic:
        assert eqs.articulated is not None, eqs.articulated_reason


def test_load_reads_urdf_by_its_suffix() -> None:
    path = robot_file("ur_description/urdf/ur5_robot.urdf")
    model = rodgen.load(path)
    assert isinstance(model, rodgen.SpatialModel)
    vm = model.validate()
    assert [c.name for c in vm.coordinates()] == ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                                                  "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
    assert [i.name for i in vm.inputs()][0] == "tau_shoulder_pan_joint"
    assert vm.source == str(path)
    # limits, effort and velocity are kept with the model
    joint = vm.link_named("shoulder_link").joint
    urdf = read_urdf(path).joint("shoulder_pan_joint").limit
    assert urdf is not None
    assert [vm.value(x) for x in joint.limits] == [urdf.lower, urdf.upper]
    assert vm.value(joint.effort) == urdf.effort and vm.value(joint.velocity) == urdf.velocity


def test_mapping_options() -> None:
    path = robot_file(PANDA)
    free = rodgen.from_urdf(path, mimic=False).validate()
    assert [c.name for c in free.independent_coordinates()][-2:] == ["panda_finger_joint1", "panda_finger_joint2"]
    coupled = rodgen.from_urdf(path).validate()
    assert dict(coupled.couplings)["panda_finger_joint2"].text == "panda_finger_joint1"
    assert "F_panda_finger_joint2" not in [i.name for i in coupled.inputs()]
    pendulum = rodgen.from_urdf(robot_file(CASES["double_pendulum"][0])).validate()
    assert [lk.joint.limits for lk in pendulum.links if lk.joint.coordinates] == [None, None]
    held = rodgen.from_urdf(path, lock={"panda_finger_joint1": 0.01}).validate()
    assert len(held.coordinates()) == 7 and not held.couplings
    # the exact rotations: the Panda's rpy of ±pi/2 are kept as pi/2, so that cos(pi/2) is 0, not 6e-17
    assert [x.text for x in coupled.link_named("panda_link2").joint.rpy] == ["-pi/2", "0.0", "0.0"]
    with pytest.raises(rodgen.ModelError, match="lock: 'elbow' is not a joint of the file"):
        rodgen.from_urdf(path, lock={"elbow": 0.0})
    with pytest.raises(rodgen.ModelError, match="lock: joint 'panda_finger_joint2' mimics 'panda_finger_joint1'"):
        rodgen.from_urdf(path, lock={"panda_finger_joint2": 0.0})
    with pytest.raises(rodgen.ModelError, match="lock: joint 'panda_joint8' is fixed already"):
        rodgen.from_urdf(path, lock={"panda_joint8": 0.0})


def test_names_that_are_not_identifiers_are_rewritten(tmp_path: Path) -> None:
    body = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
    (tmp_path / "r.urdf").write_text(f"""<robot name="my-robot">
      <link name="base link"/><link name="arm.1">{body}</link><link name="2nd">{body}</link>
      <joint name="joint-1" type="continuous"><parent link="base link"/><child link="arm.1"/></joint>
      <joint name="joint 1" type="continuous"><parent link="arm.1"/><child link="2nd"/>
        <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/></joint></robot>""")
    vm = rodgen.load(tmp_path / "r.urdf").validate()
    assert vm.name == "my_robot"
    assert [lk.name for lk in vm.links] == ["base_link", "arm_1", "link_2nd"]
    assert [c.name for c in vm.coordinates()] == ["joint_1", "joint_1_2"]
