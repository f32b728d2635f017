"""FMU export of floating bases and spatial (3-row) point contacts, through FMPy (FMI 2.0 and 3.0): the states
[q (nq), qd (nv)] with a free joint's quaternion. Co-Simulation against rodgen's own simulate() (solo12 dropped
onto its four feet under the compiled PD law); a free body sliding on a contact at its centre of mass against
the closed-form stop at |v0| / (mu g), in Co-Simulation and through CVode in Model Exchange (touch-down, slide,
stick as events); a point mass lifting off when its push exceeds its weight (closed form); a tumbling free body
in flight conserving energy, momentum and its quaternion's norm; the quaternion put back onto the unit sphere
at the event update; a spherical pendulum in both interfaces; the refusals (directional derivatives on the tangent
space)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.model.spatial import SpatialModel

fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402
from test_fmu import compile_alone  # noqa: E402
from test_fmu3 import VERSIONS, Instance  # noqa: E402

MU, MASS, G = 0.5, 2.0, 9.81
INERTIA = (1.0, 0.1, 0.0, 1.5, 0.2, 2.0)     # ixx, ixy, ixz, iyy, iyz, izz about the centre of mass: a tumbler
PUCK = (1.0, 0.0, 0.0, 1.5, 0.0, 2.0)        # a principal axis vertical: the puck spins steadily about it


def rot(quat: np.ndarray) -> np.ndarray:
    """The rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def yaw_quat(a: float) -> np.ndarray:
    return np.array([0.0, 0.0, np.sin(a / 2), np.cos(a / 2)])


def states(robot: Any, y: np.ndarray) -> dict[str, float]:
    """The FMU's start values of the state y = [q (nq), qd (nv)], by the FMU's names."""
    names = [f"q.{c}" for c in robot.coordinates] + [f"qd.{c}" for c in rodgen.fmu.velocity_names(robot)]
    return dict(zip(names, (float(x) for x in y)))


def columns(res: Any, robot: Any) -> np.ndarray:
    return np.column_stack([res[k] for k in states(robot, np.zeros(robot.nq + robot.nv))])


@pytest.fixture(scope="module")
def puck(build_dir: Path) -> Any:
    """A free body (nq 7 with the quaternion, nv 6) with one 3-row contact at its centre of mass."""
    m = SpatialModel("puck_fmu")
    m.link("body", joint="free").body(MASS, (0, 0, 0), PUCK)
    m.contact("foot", "body", friction=MU)
    return rodgen.build(m, build_dir=build_dir)


SLIDE = dict(contacts={"foot": "slide"}, on_slip="slide", event_tol=1e-13)   # starts sliding on the ground
DROP = dict(on_slip="slide", event_tol=1e-13)                                 # starts in the air


@pytest.fixture(scope="module")
def puck_fmus(puck: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fmu_puck")
    return {v: rodgen.export_fmu(puck, tmp / f"puck_{v}.fmu", kind="both", fmi_version=v, **SLIDE) for v in VERSIONS}


@pytest.fixture(scope="module")
def drop_fmus(puck: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fmu_drop")
    return {v: rodgen.export_fmu(puck, tmp / f"drop_{v}.fmu", kind="me", fmi_version=v, **DROP) for v in VERSIONS}


YAW, SPIN, V0 = 0.7, 1.3, np.array([0.6, 0.8, 0.0])


def sliding_start() -> np.ndarray:
    """On the ground, turned by YAW, spinning at SPIN about the vertical, its centre moving at V0 (world)."""
    return np.r_[0.0, 0.0, 0.0, yaw_quat(YAW), rot(yaw_quat(YAW)).T @ V0, 0.0, 0.0, SPIN]


def test_floating_fmu_validates_and_names_its_states(puck: Any, puck_fmus: dict[str, Path], tmp_path: Path) -> None:
    """The states are the free joint's seven coordinates and six velocities, each with its derivative; three
    force outputs a contact, two event indicators."""
    for version, fmu in puck_fmus.items():
        assert validate_fmu(str(fmu)) == []
        md = read_model_description(str(fmu))
        by = {v.name: v for v in md.modelVariables}
        q = [f"q.body_{c}" for c in ("x", "y", "z", "qx", "qy", "qz", "qw")]
        qd = [f"qd.body_{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz")]
        assert [v.name for v in md.modelVariables[:13]] == q + qd
        assert len(md.derivatives) == 13
        assert all(by[f"der({s})"].derivative is by[s] for s in q + qd)
        assert by["q.body_qw"].start == "1.0"
        assert [v.name for v in md.modelVariables if v.name.startswith("force.")] == \
            ["force.foot.t1", "force.foot.t2", "force.foot.n"]
        assert (md.numberOfEventIndicators if version == "2.0" else len(md.eventIndicators)) == 2
        assert not md.modelExchange.providesDirectionalDerivative
    compile_alone(puck_fmus["3.0"], tmp_path)


@pytest.mark.parametrize("version", VERSIONS)
def test_co_simulation_slides_to_the_closed_form_stop(puck: Any, puck_fmus: dict[str, Path], version: str) -> None:
    """Co-Simulation is the hybrid simulator's run (robot.simulate to 1e-12, the contact forces too), and that
    is the closed form: the centre decelerates at mu g against V0 and stops after |V0| / (mu g) at
    |V0|^2 / (2 mu g) along V0; the yaw grows at the constant spin; the normal force carries the weight."""
    y0, dt, t_end = sliding_start(), 1e-3, 0.3
    forces = ["force.foot.t1", "force.foot.t2", "force.foot.n"]
    res = simulate_fmu(str(puck_fmus[version]), stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values=states(puck, y0) | {"fmu.max_step": dt},
                       output=list(states(puck, y0)) + forces)
    ref = puck.simulate(y0, t_end, dt, **SLIDE)
    assert ref.ok, ref.message
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    got = columns(res, puck)
    assert np.abs(got - np.column_stack([ref.q, ref.qd])[rows]).max() < 1e-12
    assert np.abs(np.column_stack([res[f] for f in forces]) - ref.lam[rows]).max() < 1e-9
    speed, vhat = np.linalg.norm(V0), V0 / np.linalg.norm(V0)
    t = res["time"]
    s = np.where(t < speed / (MU * G), speed * t - 0.5 * MU * G * t ** 2, speed ** 2 / (2 * MU * G))
    assert t[-1] > speed / (MU * G) + 0.05
    assert np.abs(got[:, :3] - np.outer(s, vhat)).max() < 1e-8
    psi = 2 * np.arctan2(got[:, 5], got[:, 6])
    assert np.abs(psi - (YAW + SPIN * t)).max() < 1e-9
    assert np.abs(np.linalg.norm(got[:, 3:7], axis=1) - 1.0).max() < 1e-14
    assert np.abs(res["force.foot.n"][1:] - MASS * G).max() < 1e-9


@pytest.mark.parametrize("version", VERSIONS)
def test_model_exchange_drops_slides_and_stops(puck: Any, drop_fmus: dict[str, Path], version: str) -> None:
    """Model Exchange through CVode, the hybrid simulator's own event indicators: dropped from h with V0, the puck
    touches down at sqrt(2 h / g) in a Coulomb impact (the normal impulse m sqrt(2 g h) takes the vertical
    velocity, the tangential impulse, mu times that and too small to stop the puck, takes mu sqrt(2 g h) off
    its speed), slides and sticks at the closed form's time and place."""
    h = 0.05
    t_touch = np.sqrt(2 * h / G)
    y0 = sliding_start()
    y0[2] = h
    res = simulate_fmu(str(drop_fmus[version]), fmi_type="ModelExchange", stop_time=0.6, relative_tolerance=1e-10,
                       output_interval=1e-3, record_events=True, start_values=states(puck, y0),
                       output=list(states(puck, y0)) + ["force.foot.n"])
    got = columns(res, puck)
    t = res["time"]
    events = t[np.flatnonzero(np.diff(t) == 0)]
    speed = np.linalg.norm(V0) - MU * np.sqrt(2 * G * h)
    vhat = V0 / np.linalg.norm(V0)
    t_stop = t_touch + speed / (MU * G)
    assert abs(events[0] - t_touch) < 1e-7
    assert any(abs(e - t_stop) < 1e-6 for e in events)
    x_stop = V0 * t_touch + vhat * speed ** 2 / (2 * MU * G)
    assert np.abs(got[-1, :3] - x_stop).max() < 1e-6
    assert np.abs(got[-1, 7:10]).max() < 1e-7
    psi = 2 * np.arctan2(got[:, 5], got[:, 6])
    assert np.abs(psi - (YAW + SPIN * t)).max() < 1e-6
    assert np.abs(np.linalg.norm(got[:, 3:7], axis=1) - 1.0).max() < 1e-8
    assert abs(res["force.foot.n"][-1] - MASS * G) < 1e-6


def test_fmu_state_of_a_floating_hybrid_run(puck: Any, puck_fmus: dict[str, Path]) -> None:
    """The FMU state carries the 13 states and the sliding contact's phase: taken while sliding, the run through
    the stick repeats exactly after setting it back, and in a fresh instance from its serialized bytes."""
    names = list(states(puck, sliding_start())) + ["force.foot.t1", "force.foot.t2"]
    a = Instance(puck_fmus["3.0"]).start(states(puck, sliding_start()) | {"fmu.max_step": 1e-3})
    a.run(0.0, 50, 1e-3, names)
    state = a.fmu.getFMUState()
    blob = a.fmu.serializeFMUState(state)
    first = a.run(0.05, 250, 1e-3, names)
    assert np.abs(first[0, -2:]).max() > 1.0 and np.abs(first[-1, 7:13] - [0, 0, 0, 0, 0, SPIN]).max() < 1e-8
    a.fmu.setFMUState(state)
    assert np.array_equal(a.run(0.05, 250, 1e-3, names), first)
    b = Instance(puck_fmus["3.0"]).start({})
    b.fmu.setFMUState(b.fmu.deserializeFMUState(blob))
    assert np.array_equal(b.run(0.05, 250, 1e-3, names), first)


def test_point_mass_lifts_off_when_pushed_up(build_dir: Path, tmp_path: Path) -> None:
    """A point mass on three prismatic joints standing on a 3-row contact: pushed up by 2 m g from t1 on, the
    contact lifts off at t1 (its normal force would pull) and the mass rises by g (t - t1)^2 / 2."""
    m = SpatialModel("slider3_fmu")
    m.link("x", joint="prismatic", axis=(1, 0, 0))
    m.link("y", "x", joint="prismatic", axis=(0, 1, 0))
    m.link("z", "y", joint="prismatic", axis=(0, 0, 1)).body(MASS)
    m.contact("foot", "z", friction=MU)
    robot = rodgen.build(m, build_dir=build_dir)
    fmu = rodgen.export_fmu(robot, tmp_path / "slider.fmu", fmi_version="3.0", contacts=["foot"])
    assert validate_fmu(str(fmu)) == []
    inst = Instance(fmu).start({"fmu.max_step": 1e-3})
    names = [f"q.{c}" for c in robot.coordinates] + ["force.foot.n"]
    standing = inst.run(0.0, 100, 1e-3, names)
    assert np.abs(standing[:, :3]).max() < 1e-12 and np.abs(standing[:, 3] - MASS * G).max() < 1e-9
    u = [v.name for v in inst.md.modelVariables if v.causality == "input"]
    inst.set({u[2]: 2 * MASS * G})
    rising = inst.run(0.1, 100, 1e-3, names)
    t = 1e-3 * np.arange(1, 101)
    assert np.abs(rising[:, 2] - 0.5 * G * t ** 2).max() < 1e-12
    assert np.abs(rising[:, 3]).max() == 0.0 and np.abs(rising[:, :2]).max() < 1e-12


@pytest.fixture(scope="module")
def tumbler(build_dir: Path) -> Any:
    m = SpatialModel("tumbler_fmu")
    m.link("body", joint="free").body(MASS, (0, 0, 0), INERTIA)
    return rodgen.build(m, build_dir=build_dir)


def momenta(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The linear momentum and the angular momentum about the centre of mass, in the world's axes, of states
    [x, y, z, quat, v (body), w (body)] (rows)."""
    Ic = np.array([[INERTIA[0], INERTIA[1], INERTIA[2]], [INERTIA[1], INERTIA[3], INERTIA[4]],
                   [INERTIA[2], INERTIA[4], INERTIA[5]]])
    R = np.array([rot(q / np.linalg.norm(q)) for q in y[:, 3:7]])
    return MASS * np.einsum("nij,nj->ni", R, y[:, 7:10]), np.einsum("nij,jk,nk->ni", R, Ic, y[:, 10:13])


@pytest.mark.parametrize("version", VERSIONS)
def test_free_flight_conserves_energy_and_momenta(tumbler: Any, tmp_path: Path, version: str) -> None:
    """A tumbling free body (an inertia with products) thrown upward: through CVode (Model Exchange) and in
    Co-Simulation the energy, the angular momentum about the centre and the horizontal momentum stay, the vertical
    momentum falls by m g t, the quaternion stays of norm 1 (the exact flow keeps the norm; the solver's error
    moves it by its tolerance)."""
    fmu = rodgen.export_fmu(tumbler, tmp_path / "tumbler.fmu", kind="both", fmi_version=version)
    assert validate_fmu(str(fmu)) == []
    quat = np.array([0.3, -0.2, 0.4, 0.8])
    y0 = np.r_[0.0, 0.0, 1.0, quat / np.linalg.norm(quat), 0.5, -0.3, 2.0, 3.0, -2.0, 5.0]
    names = list(states(tumbler, y0))
    for kind, tol in (("ModelExchange", 1e-7), ("CoSimulation", 1e-9)):
        res = simulate_fmu(str(fmu), fmi_type=kind, stop_time=1.0, step_size=1e-3, relative_tolerance=1e-11,
                           output_interval=1e-3, start_values=states(tumbler, y0), output=names + ["energy.total"])
        y, t = columns(res, tumbler), res["time"]
        p, L = momenta(y)
        e = res["energy.total"]
        assert np.abs(e - e[0]).max() < tol * abs(e[0]), kind
        assert np.abs(L - L[0]).max() < tol * np.abs(L[0]).max(), kind
        assert np.abs(p[:, :2] - p[0, :2]).max() < tol and np.abs(p[:, 2] - (p[0, 2] - MASS * G * t)).max() < tol
        assert np.abs(np.linalg.norm(y[:, 3:7], axis=1) - 1.0).max() < tol, kind
        assert np.ptp(y[:, 12]) > 0.1      # it does tumble: the body's angular velocity changes


def test_model_exchange_evaluates_on_the_unit_sphere(tumbler: Any, tmp_path: Path) -> None:
    """States set with a quaternion off the unit sphere: the derivatives are those at the normalised quaternion
    (the accelerations of the model there, the quaternion's rate 1/2 quat (x) w orthogonal to it); the event
    update puts the states back onto the sphere and says they changed. No directional derivatives (the RHS
    Jacobian is on the tangent space), and asking for them says why."""
    fmu = rodgen.export_fmu(tumbler, tmp_path / "tumbler_me.fmu", kind="me", fmi_version="3.0")
    assert not read_model_description(str(fmu)).modelExchange.providesDirectionalDerivative
    with pytest.raises(ValueError, match=r"free, spherical or planar joints \(nq 7, nv 6\): its RHS Jacobian is on "
                                         r"the tangent space"):
        rodgen.export_fmu(tumbler, tmp_path / "x.fmu", directional_derivatives=True)
    inst = Instance(fmu, "ModelExchange").start({})
    f = inst.fmu
    quat = np.array([0.3, -0.2, 0.4, 0.8])
    y = np.r_[0.1, 0.2, 1.0, 1.1 * quat / np.linalg.norm(quat), 0.5, -0.3, 2.0, 3.0, -2.0, 5.0]
    f.enterContinuousTimeMode()
    f.setContinuousStates(np.ctypeslib.as_ctypes(y.copy()), 13)
    dy = np.zeros(13)
    f.getContinuousStateDerivatives(np.ctypeslib.as_ctypes(dy), 13)
    yn = y.copy()
    yn[3:7] /= np.linalg.norm(yn[3:7])
    ref = tumbler.rhs(0.0, yn)
    assert np.abs(dy - ref).max() < 1e-12 and abs(dy[3:7] @ y[3:7]) < 1e-14
    assert abs(np.linalg.norm(dy[3:7]) - 0.5 * np.linalg.norm(y[10:13])) < 1e-12
    f.enterEventMode()
    assert f.updateDiscreteStates()[3]     # valuesOfContinuousStatesChanged
    x = np.zeros(13)
    f.getContinuousStates(np.ctypeslib.as_ctypes(x), 13)
    assert np.abs(x - yn).max() < 1e-15


@pytest.mark.slow   # a minute; the puck, point-mass and tumbler FMUs guard the same paths in the default run
def test_solo12_dropped_is_rodgens_run(build_dir: Path, tmp_path: Path) -> None:
    """examples/spatial/solo12_stand.py in an FMU: the PD law on its 12 joints compiled in, four 3-row feet. In
    Co-Simulation the feet touch down together after the free fall of 0.1 m and the robot stands: robot.simulate's
    run to 1e-12 (states and the 12 contact forces), the base's quaternion of norm 1."""
    sys.path.insert(0, str(EXAMPLES / "spatial"))
    try:
        import solo12_stand as ex
    finally:
        sys.path.pop(0)
    robot = rodgen.build(ex.solo12_model(), build_dir=build_dir)
    y0 = ex.initial_state(robot, 0.1)
    law = rodgen.PD(rodgen.Reference.hold(y0[:robot.nq]), kp=ex.KP, kd=ex.KD)
    fmu = rodgen.export_fmu(robot, tmp_path / "solo12.fmu", fmi_version="3.0", controller=law)
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert len(md.derivatives) == 37
    forces = [v.name for v in md.modelVariables if v.name.startswith("force.")]
    assert len(forces) == 12 and forces[:3] == ["force.FL.t1", "force.FL.t2", "force.FL.n"]
    dt, t_end = 1e-3, 0.4
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values=states(robot, y0) | {"fmu.max_step": dt}, output=list(states(robot, y0)) + forces)
    ref = robot.simulate(y0, t_end, dt, contacts=(), controller=law)
    assert ref.ok and sorted(e["kind"] for e in ref.events) == ["touchdown"] * 4
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    got = columns(res, robot)
    assert np.abs(got - np.column_stack([ref.q, ref.qd])[rows]).max() < 1e-12
    lam = np.column_stack([res[f] for f in forces])
    assert np.abs(lam - ref.lam[rows]).max() < 1e-9 * np.abs(ref.lam).max()
    assert lam[-1, 2::3].min() > 1.0
    assert np.abs(np.linalg.norm(got[:, 3:7], axis=1) - 1.0).max() < 1e-14


@pytest.mark.parametrize("version", VERSIONS)
def test_spherical_joint_in_both_interfaces(build_dir: Path, tmp_path: Path, version: str) -> None:
    """A spherical pendulum (nq 4: the quaternion, nv 3: the angular velocity in the bob's frame): Co-Simulation
    is robot.simulate's RK4 to 1e-12; Model Exchange through CVode is its DOPRI5 at 1e-12 to the solver's
    tolerance, with the energy and the quaternion's norm kept."""
    m = SpatialModel("spherical_fmu")
    m.link("bob", joint="spherical").body(1.0, (0, 0, -0.5), (0.01, 0, 0, 0.02, 0, 0.03))
    robot = rodgen.build(m, build_dir=build_dir)
    assert rodgen.fmu.velocity_names(robot) == ["bob_wx", "bob_wy", "bob_wz"]
    fmu = rodgen.export_fmu(robot, tmp_path / "spherical.fmu", kind="both", fmi_version=version)
    assert validate_fmu(str(fmu)) == []
    quat = np.array([0.3, 0.1, 0.0, 1.0])
    y0 = np.r_[quat / np.linalg.norm(quat), 0.5, -1.0, 2.0]
    names = list(states(robot, y0))
    res = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=1.0, step_size=1e-3, output_interval=1e-3,
                       start_values=states(robot, y0), output=names)
    ref = robot.simulate(y0, 1.0, 1e-3)
    assert np.abs(columns(res, robot) - np.column_stack([ref.q, ref.qd])).max() < 1e-12
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=1.0, relative_tolerance=1e-11,
                       output_interval=1e-3, start_values=states(robot, y0), output=names + ["energy.total"])
    y, e = columns(res, robot), res["energy.total"]
    ref = robot.simulate(y0, 1.0, method="dopri5", rtol=1e-12, atol=1e-12)
    assert np.abs(y[-1] - np.r_[ref.q[-1], ref.qd[-1]]).max() < 1e-7
    assert np.abs(e - e[0]).max() < 1e-7 and np.abs(np.linalg.norm(y[:, :4], axis=1) - 1.0).max() < 1e-8
    assert np.ptp(y[:, 0]) > 0.1
