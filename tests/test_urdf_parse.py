"""Reading URDF files: what rodgen reads agrees with Pinocchio's own parse of the same file (joint placements,
axes, limits, masses and inertias of the bodies, forward kinematics of every link frame), and bad files give
ModelErrors naming the file, the line and the element."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _robots import robot_file
from rodgen.errors import ModelError
from rodgen.examples import chain_urdf
from rodgen.model.urdf import UrdfRobot, moving_bodies, read_urdf, read_urdf_bytes, rpy_matrix

pin = pytest.importorskip("pinocchio")

DATA = Path(__file__).parent / "data" / "urdf"

ROBOTS = [
    "panda_description/urdf/panda.urdf",             # fixed joints, a prismatic finger and its mimic
    "ur_description/urdf/ur5_robot.urdf",
    "xarm_description/urdf/xarm7.urdf",
    "z1_description/urdf/z1.urdf",
    "kinova_description/robots/kinova.urdf",
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf",   # continuous joints
    "talos_data/robots/talos_left_arm.urdf",
    "solo_description/robots/solo12.urdf",           # a tree: four legs on one trunk
    "baxter_description/urdf/baxter.urdf",
]


def _homogeneous(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _pin_q(robot: UrdfRobot, pm: "pin.Model", q: np.ndarray) -> np.ndarray:
    """Pinocchio's configuration for rodgen's coordinates (a continuous joint is (cos, sin) there)."""
    out = pin.neutral(pm)
    for name, value in zip(robot.coordinates(), q):
        jid = pm.getJointId(name)
        k = pm.idx_qs[jid]
        if pm.nqs[jid] == 2:
            out[k:k + 2] = np.cos(value), np.sin(value)
        else:
            out[k] = value
    return out


def _random_q(robot: UrdfRobot, rng: np.random.Generator) -> np.ndarray:
    out = []
    for name in robot.coordinates():
        lim = robot.joint(name).limit
        if lim is None or lim.lower is None or lim.upper is None:
            out.append(rng.uniform(-np.pi, np.pi))
        else:
            out.append(rng.uniform(lim.lower, lim.upper))
    return np.array(out)


def _composite(robot: UrdfRobot, joint: str) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and central inertia of the links a moving joint carries (its child link and
    the links welded to it), in the joint's frame: what Pinocchio keeps as the joint's body."""
    place = robot.placements(np.zeros(len(robot.coordinates())))
    R0, p0 = place[robot.joint(joint).child]
    carrier = moving_bodies(robot)
    parts = []
    for lk in robot.links:
        if carrier[lk.name] == joint and lk.inertial is not None:
            R, p = place[lk.name]
            Rr, pr = R0.T @ R, R0.T @ (p - p0)
            parts.append((lk.inertial.mass, pr + Rr @ np.array(lk.inertial.com),
                          Rr @ np.array(lk.inertial.inertia) @ Rr.T))
    mass = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, Ic in parts:
        d = c - com
        inertia += Ic + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


@pytest.mark.parametrize("relative", ROBOTS, ids=lambda r: Path(r).stem)
def test_parse_agrees_with_pinocchio(relative: str) -> None:
    path = robot_file(relative)
    robot = read_urdf(path)
    pm = pin.buildModelFromUrdf(str(path), mimic=True)
    pd = pm.createData()
    coords = robot.coordinates()
    # the same independent joints (Pinocchio keeps mimic joints as joints without coordinates of their own)
    mimic = set(robot.mimics)
    assert sorted(coords) == sorted(n for n in list(pm.names)[1:] if n not in mimic)
    assert pm.nv == len(coords)
    zero = robot.placements(np.zeros(len(coords)))
    body_of = moving_bodies(robot)
    for j in robot.joints:
        if not j.moving:
            continue
        jid = pm.getJointId(j.name)
        # placement of the joint in its parent joint's frame
        parent = robot.link(j.parent).name
        frame_above = robot.joint(body_of[parent]).child if body_of[parent] else robot.root
        Ra, pa = zero[frame_above]
        Rc, pc = zero[j.child]
        expected = np.linalg.inv(_homogeneous(Ra, pa)) @ _homogeneous(Rc, pc)
        np.testing.assert_allclose(pm.jointPlacements[jid].homogeneous, expected, atol=1e-12, err_msg=j.name)
        # the body the joint moves: mass, centre of mass and inertia
        mass, com, inertia = _composite(robot, j.name)
        body = pm.inertias[jid]
        assert body.mass == pytest.approx(mass, rel=1e-12, abs=1e-15), j.name
        np.testing.assert_allclose(body.lever, com, atol=1e-12, err_msg=j.name)
        np.testing.assert_allclose(body.inertia, inertia, atol=1e-12, err_msg=j.name)
        if j.name in mimic:
            continue
        # the axis: the joint's own column of its Jacobian in its frame
        iv = pm.idx_vs[jid]
        q0 = pin.neutral(pm)
        pin.computeJointJacobians(pm, pd, q0)
        col = pin.getJointJacobian(pm, pd, jid, pin.ReferenceFrame.LOCAL)[:, iv]
        lin, ang = (col[:3], col[3:]) if j.type == "prismatic" else (col[3:], col[:3])
        np.testing.assert_allclose(lin, j.axis, atol=1e-12, err_msg=j.name)
        np.testing.assert_allclose(ang, 0.0, atol=1e-12, err_msg=j.name)
        # limits
        lim = j.limit
        if j.type != "continuous":
            assert lim is not None
            assert pm.lowerPositionLimit[pm.idx_qs[jid]] == lim.lower, j.name
            assert pm.upperPositionLimit[pm.idx_qs[jid]] == lim.upper, j.name
        if lim is not None and lim.effort is not None:
            assert pm.effortLimit[iv] == lim.effort, j.name
        if lim is not None and lim.velocity is not None:
            assert pm.velocityLimit[iv] == lim.velocity, j.name
    # forward kinematics of every link frame at random configurations
    rng = np.random.default_rng(1200 + len(coords))
    for _ in range(5):
        q = _random_q(robot, rng)
        pin.framesForwardKinematics(pm, pd, _pin_q(robot, pm, q))
        ours = robot.placements(q)
        for lk in robot.links:
            fid = pm.getFrameId(lk.name, pin.FrameType.BODY)
            np.testing.assert_allclose(pd.oMf[fid].homogeneous, _homogeneous(*ours[lk.name]), atol=1e-12,
                                       err_msg=lk.name)


@pytest.mark.parametrize("relative", ROBOTS[:4], ids=lambda r: Path(r).stem)
def test_mass_matrix_of_the_parse_agrees_with_pinocchio(relative: str) -> None:
    """The reader's own mass matrix (used to refuse singular models) is Pinocchio's crba."""
    path = robot_file(relative)
    robot = read_urdf(path)
    pm = pin.buildModelFromUrdf(str(path), mimic=True)
    pd = pm.createData()
    rng = np.random.default_rng(77)
    for _ in range(3):
        q = _random_q(robot, rng)
        M = pin.crba(pm, pd, _pin_q(robot, pm, q))
        M = np.triu(M) + np.triu(M, 1).T
        # Pinocchio orders coordinates by its own traversal
        order = [pm.idx_vs[pm.getJointId(n)] for n in robot.coordinates()]
        np.testing.assert_allclose(robot.mass_matrix(q), M[np.ix_(order, order)], atol=1e-12)


def test_rpy_is_fixed_axis_roll_pitch_yaw() -> None:
    r, p, y = 0.3, -0.7, 1.9
    np.testing.assert_allclose(rpy_matrix((r, p, y)), pin.rpy.rpyToMatrix(r, p, y), atol=1e-15)


def test_mimic_relation_and_chains() -> None:
    body = '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    text = f"""<robot name="m">
      <link name="a"/>
      <link name="b">{body}</link>
      <link name="c">{body}</link>
      <link name="d">{body}</link>
      <joint name="j1" type="continuous"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="continuous"><parent link="b"/><child link="c"/>
        <mimic joint="j1" multiplier="2" offset="0.5"/></joint>
      <joint name="j3" type="prismatic"><parent link="c"/><child link="d"/>
        <limit lower="0" upper="1" effort="1" velocity="1"/><mimic joint="j2" multiplier="-3" offset="1"/></joint>
    </robot>"""
    robot = read_urdf_bytes(text, source="m.urdf")
    assert robot.coordinates() == ["j1"]
    # j3 = -3 (2 j1 + 0.5) + 1 = -6 j1 - 0.5
    assert robot.mimics == {"j2": ("j1", 2.0, 0.5), "j3": ("j1", -6.0, -0.5)}
    assert robot.displacements([0.25]) == {"j1": 0.25, "j2": 1.0, "j3": -2.0}


BAD = [
    ("missing_inertial.urdf", "line 5, link 'middle'", "has no <inertial>, moves with joint 'j1' and carries the "
                                                         "moving joint 'j2'"),
    ("zero_mass_children.urdf", "joint 'shoulder'", "the mass matrix is singular: joint 'shoulder' moves no inertia"
                                                    " (no link at or below its child link has mass)"),
    ("unknown_type.urdf", "line 5, joint 'elbow'", "unknown joint type 'hinge' (supported: revolute, continuous, "
                                                   "prismatic, fixed, floating, planar)"),
    ("cycle.urdf", "robot", "the joints form a cycle"),
    ("loop.urdf", "joint 'j_b'", "link 'coupler' is the child of both joint 'j_a' and joint 'j_b'"),
    ("floating_below.urdf", "line 7, joint 'drone'", "a floating joint joins the world (the root link 'base') to "
                                                      "the robot's base; joint 'drone' joins 'trunk' and 'pod'"),
    ("planar_axis.urdf", "line 5, joint 'table'", "rodgen's planar joint (x, y, theta in the joint frame's xy "
                                                   "plane, as Pinocchio's) needs <axis xyz=\"0 0 1\">"),
    ("unknown_link.urdf", "joint 'shoulder'", "the child link 'forearm' is not a link of the file"),
    ("bad_number.urdf", "link 'arm', <inertial>", "<mass value=\"1,5\">: '1,5' is not a number"),
    ("bad_vector.urdf", "joint 'shoulder'", "<origin xyz=\"0 0.1\">: expected 3 numbers, got 2"),
    ("two_roots.urdf", "robot", "several root links ('base', 'stray')"),
    ("mimic_unknown.urdf", "joint 'shoulder'", "<mimic joint='elbow'> names no joint of the file"),
    ("no_limit.urdf", "joint 'shoulder'", "a revolute joint needs a <limit>"),
    ("not_xml.urdf", "line 4", "not well-formed XML"),
]


@pytest.mark.parametrize("name, where, message", BAD, ids=[b[0] for b in BAD])
def test_bad_files_name_the_problem(name: str, where: str, message: str) -> None:
    path = DATA / name
    with pytest.raises(ModelError) as info:
        read_urdf(path)
    err = info.value
    assert err.source == str(path)
    assert where in (err.where or ""), str(err)
    assert message in err.detail, str(err)


def test_cycle_names_its_joints() -> None:
    with pytest.raises(ModelError, match=r"'b' \(joint 'ab'\) -> 'c' \(joint 'bc'\) -> 'a' \(joint 'ca'\) -> 'b'"):
        read_urdf(DATA / "cycle.urdf")


def test_massless_link_on_purpose_is_accepted() -> None:
    """An explicit <inertial> of mass 0 on an intermediate link is fine when the masses below make M regular."""
    text = (DATA / "missing_inertial.urdf").read_text().replace(
        '<link name="middle"/>',
        '<link name="middle"><inertial><mass value="0"/>'
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
    robot = read_urdf_bytes(text, source="massless.urdf")
    assert robot.coordinates() == ["j1", "j2"]


def test_bad_inertia_and_limits() -> None:
    base = """<robot name="r"><link name="a"/><link name="b"><inertial><mass value="{m}"/>
      <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="j" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="{axis}"/>
      <limit lower="{lo}" upper="1" effort="1" velocity="1"/></joint></robot>"""
    ok = dict(m=1, ixx=1, axis="1 0 0", lo=0)
    read_urdf_bytes(base.format(**ok))
    cases = [(dict(m=-1), "the mass must not be negative"),
             (dict(ixx=-2), "not positive semi-definite"),
             (dict(ixx="nan"), "'nan' is not a finite number"),
             (dict(axis="0 0 0"), "the axis has zero length"),
             (dict(lo=2), "the lower limit 2.0 is above the upper limit 1.0")]
    for change, message in cases:
        with pytest.raises(ModelError, match=message):
            read_urdf_bytes(base.format(**{**ok, **change}), source="r.urdf")


def test_entities_are_refused() -> None:
    text = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "1">]><robot name="r"><link name="a"/></robot>'
    with pytest.raises(ModelError, match="entity declarations are not accepted"):
        read_urdf_bytes(text, source="r.urdf")


def test_errors_of_the_spatial_model_name_the_urdf_element(tmp_path: Path) -> None:
    """A check of the spatial model (here the triangle inequality of the moments of inertia, which the file's
    reader leaves to it) names the line and link of the URDF file."""
    import rodgen
    text = """<robot name="r">
  <link name="base"/>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.5"/></inertial>
  </link>
  <joint name="j" type="continuous"><parent link="base"/><child link="arm"/></joint>
</robot>"""
    path = tmp_path / "r.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        rodgen.from_urdf(path)
    assert info.value.where == "line 3, link 'arm', <inertial>"
    assert "triangle inequality" in info.value.detail


def test_a_robot_of_400_links_loads_in_seconds(tmp_path: Path) -> None:
    """400 links loaded (read, checked: the numeric mass matrix at four configurations, mapped, validated)
    well within a guard of 20 s (it took 75 s when the check solved an eigenproblem per leading block); the
    reader's mass matrix of the chain is Pinocchio's crba. benchmarks/bench_urdf_load.py measures the growth."""
    import time

    import rodgen
    path = tmp_path / "chain.urdf"
    path.write_text(chain_urdf(400))
    start = time.perf_counter()
    model = rodgen.from_urdf(path)
    seconds = time.perf_counter() - start
    assert len(model.validate().coordinates()) == 400
    assert seconds < 20.0, f"loading 400 links took {seconds:.1f} s"
    robot = read_urdf(path, check=False)
    pm = pin.buildModelFromXML(path.read_text())
    q = np.random.default_rng(3).uniform(-2, 2, 400)
    # pin.Data(pm), not pm.createData(): Pinocchio's Data of 400 joints takes seconds to construct and
    # createData's copy of it as long again (3 s and 8 s here)
    M = pin.crba(pm, pin.Data(pm), q)
    M = np.triu(M) + np.triu(M, 1).T
    np.testing.assert_allclose(robot.mass_matrix(q), M, rtol=1e-10, atol=1e-10 * np.abs(M).max())


def test_a_joint_that_moves_no_inertia_is_named_in_a_long_chain(tmp_path: Path) -> None:
    """The singular check finds the first coordinate whose pivot vanishes: a joint about the axis of a
    massless tip that carries only a point on its axis, deep in a chain of 60 links."""
    text = chain_urdf(60).replace("</robot>", "")
    text += ('<link name="tip"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1"/><inertia ixx="0" '
             'ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
             '<joint name="spin" type="continuous"><parent link="l59"/><child link="tip"/>'
             '<origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/></joint></robot>')
    path = tmp_path / "chain.urdf"
    path.write_text(text)
    with pytest.raises(ModelError, match="joint 'spin' moves no inertia"):
        read_urdf(path)
