"""FMU export beyond the basics of tests/test_fmu.py, checked by FMPy (an importer rodgen does not write): FMI 3.0
FMUs against rodgen's own simulate(); Model Exchange of a model with contacts (event indicators, impacts at
events) against the hybrid simulator's event times; FMU states got, set and serialized; directional
derivatives against central differences of the FMU's own derivatives; contact forces as outputs against the
hybrid simulator's multipliers."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.cli import main

fmpy = pytest.importorskip("fmpy")
from fmpy import extract, instantiate_fmu, read_model_description, simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402
from test_fmu import compile_alone  # noqa: E402

VERSIONS = ["2.0", "3.0"]


@pytest.fixture(scope="module")
def exo5(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir)


@pytest.fixture(scope="module")
def compass(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "compass_gait.yaml"), build_dir=build_dir)


@pytest.fixture(scope="module")
def fmus(exo5: rodgen.runtime.CompiledModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fmu3")
    return {v: rodgen.export_fmu(exo5, tmp / f"exo5_{v}.fmu", kind="both", fmi_version=v) for v in VERSIONS}


HYBRID = dict(contacts=["foot_a"], disarmed=["foot_b"], arm_gap=0.02, event_tol=1e-13)


@pytest.fixture(scope="module")
def compass_fmus(compass: rodgen.runtime.CompiledModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fmu3cg")
    return {v: rodgen.export_fmu(compass, tmp / f"cg_{v}.fmu", kind="both", fmi_version=v, **HYBRID)
            for v in VERSIONS}


def compass_start(robot: rodgen.runtime.CompiledModel) -> np.ndarray:
    """Near Goswami's period-one gait (examples/compass_gait.py), the stance foot foot_a on the ground."""
    gamma = robot.parameters["gamma"]
    leg = robot.parameters["a"] + robot.parameters["b"]
    ts, ws, ww = 0.2187, -1.0918, -0.3772
    tw = -ts - 2 * gamma
    return np.array([-leg * np.sin(ts), leg * np.cos(ts), ts, tw, -leg * np.cos(ts) * ws, -leg * np.sin(ts) * ws,
                     ws, ww])


def _start(robot: rodgen.runtime.CompiledModel, y0: np.ndarray) -> dict[str, float]:
    return {f"{w}.{c}": float(x) for w, part in (("q", y0[:robot.nq]), ("qd", y0[robot.nq:]))
            for c, x in zip(robot.coordinates, part)}


def _cols(res: Any, robot: rodgen.runtime.CompiledModel, what: str = "q") -> np.ndarray:
    return np.column_stack([res[f"{what}.{c}"] for c in robot.coordinates])


class Instance:
    """One FMU instance driven through FMPy's low-level API, the same calls for FMI 2.0 and 3.0."""

    def __init__(self, fmu: Path, kind: str = "CoSimulation") -> None:
        self.md = read_model_description(str(fmu))
        self.v3 = self.md.fmiVersion.startswith("3")
        self.fmu = instantiate_fmu(extract(str(fmu)), self.md, kind)
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}

    def start(self, values: dict[str, float]) -> "Instance":
        if self.v3:
            self.fmu.enterInitializationMode(startTime=0.0)
        else:
            self.fmu.setupExperiment(startTime=0.0)
            self.fmu.enterInitializationMode()
        self.set(values)
        self.fmu.exitInitializationMode()
        return self

    def set(self, values: dict[str, float]) -> None:
        refs, vals = [self.vr[k] for k in values], list(values.values())
        (self.fmu.setFloat64 if self.v3 else self.fmu.setReal)(refs, vals)

    def get(self, names: list[str]) -> np.ndarray:
        refs = [self.vr[k] for k in names]
        return np.array((self.fmu.getFloat64 if self.v3 else self.fmu.getReal)(refs))

    def run(self, t0: float, n: int, dt: float, names: list[str]) -> np.ndarray:
        rows = []
        for k in range(n):
            self.fmu.doStep(currentCommunicationPoint=t0 + k * dt, communicationStepSize=dt)
            rows.append(self.get(names))
        return np.array(rows)


@pytest.mark.parametrize("kind", ["cs", "me"])
def test_fmi3_validates_and_holds_its_parts(exo5: rodgen.runtime.CompiledModel, fmus: dict[str, Path],
                                            kind: str, tmp_path: Path) -> None:
    fmu = fmus["3.0"]
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.fmiVersion == "3.0" and md.modelExchange.modelIdentifier == md.coSimulation.modelIdentifier == "exo5"
    assert md.coSimulation.canGetAndSetFMUstate and md.coSimulation.canSerializeFMUstate   # FMPy's names
    names = set(zipfile.ZipFile(fmu).namelist())
    assert {"binaries/x86_64-linux/exo5.so", "sources/rodgen_fmi3.c", "sources/rodgen_fmu_core.c",
            "sources/buildDescription.xml", "terminalsAndIcons/icon.png", "documentation/index.html"} <= names
    assert "sources/rodgen_fmi2.c" not in names
    # the states with their derivatives (FMI 3.0 names a state by its value reference), the independent time
    by_name = {v.name: v for v in md.modelVariables}
    assert len(md.derivatives) == 2 * exo5.nq
    for c in exo5.coordinates:
        assert by_name[f"der(q.{c})"].derivative is by_name[f"q.{c}"]
    assert by_name["time"].causality == "independent"
    if kind == "cs":
        compile_alone(fmu, tmp_path)


def test_fmi3_co_simulation_is_rodgen_rk4(exo5: rodgen.runtime.CompiledModel, fmus: dict[str, Path]) -> None:
    dt, t_end = 2e-3, 0.6
    u = np.linspace(-3.0, 3.0, exo5.nu)
    start = {f"u.{c}": float(x) for c, x in zip(exo5.inputs, u)}
    start["m_torso"] = 45.0
    res = simulate_fmu(str(fmus["3.0"]), fmi_type="CoSimulation", stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values=start, output=[f"{w}.{c}" for w in ("q", "qd") for c in exo5.coordinates])
    ref = exo5.simulate(exo5.initial_state(), t_end, dt, u=u, p=exo5.parameter_vector(m_torso=45.0))
    assert res["time"].shape == ref.t.shape
    assert np.abs(_cols(res, exo5) - ref.q).max() < 1e-12
    assert np.abs(_cols(res, exo5, "qd") - ref.qd).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 1e-2


def test_fmi3_model_exchange_with_cvode(exo5: rodgen.runtime.CompiledModel, fmus: dict[str, Path]) -> None:
    t_end = 0.5
    res = simulate_fmu(str(fmus["3.0"]), fmi_type="ModelExchange", solver="CVode", stop_time=t_end,
                       relative_tolerance=1e-9, output_interval=0.01,
                       output=[f"q.{c}" for c in exo5.coordinates] + ["energy.total"])
    ref = exo5.simulate(exo5.initial_state(), t_end, method="dopri5", rtol=1e-12, atol=1e-12)
    assert res["time"][-1] == pytest.approx(t_end)
    assert np.abs(_cols(res, exo5)[-1] - ref.q[-1]).max() < 1e-6
    e = res["energy.total"]
    assert np.abs(e - e[0]).max() < 1e-6 * abs(e[0])


def test_fmi3_with_a_pd_law_inside(exo5: rodgen.runtime.CompiledModel, tmp_path: Path) -> None:
    """The runtime's PD law compiled into an FMI 3.0 FMU, a gain tuned through it: robot.simulate's run."""
    q0 = exo5.initial_state()[:exo5.nq]
    kp = np.linspace(100.0, 300.0, exo5.nu)
    pd = rodgen.PD(rodgen.Reference.hold(q0 + 0.1), kp=kp, kd=20.0)
    fmu = rodgen.export_fmu(exo5, tmp_path / "pd3.fmu", controller=pd, fmi_version="3.0")
    assert validate_fmu(str(fmu)) == []
    dt, t_end = 2e-3, 0.5
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values={"pd.kp." + exo5.inputs[1]: 50.0}, output=[f"q.{c}" for c in exo5.coordinates])
    kp[1] = 50.0
    ref = exo5.simulate(exo5.initial_state(), t_end, dt, controller=rodgen.PD(pd.reference, kp=kp, kd=20.0))
    assert np.abs(_cols(res, exo5) - ref.q).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 0.1


def test_the_command_line_writes_fmi3(tmp_path: Path, build_dir: Path) -> None:
    out = tmp_path / "p3.fmu"
    assert main(["fmu", str(EXAMPLES / "pendulum_vl.yaml"), "-o", str(out), "--fmi-version", "3", "--kind", "me",
                 "--build-dir", str(build_dir)]) == 0
    md = read_model_description(str(out))
    assert md.fmiVersion == "3.0" and md.modelExchange is not None and md.coSimulation is None
    assert validate_fmu(str(out)) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_model_exchange_with_contacts_has_the_hybrid_events(compass: rodgen.runtime.CompiledModel,
                                                            compass_fmus: dict[str, Path], version: str,
                                                            tmp_path: Path) -> None:
    """The compass gait through FMPy's CVode: the event indicators (the swing foot's height, the stance foot's
    normal force) stop the solver at the heel strikes, the event update applies the impact and the change of
    stance; the strikes come at the hybrid simulator's located event times (RK4 at 1 ms, events to 1e-13)."""
    fmu = compass_fmus[version]
    assert validate_fmu(str(fmu)) == []
    if version == "3.0":
        compile_alone(fmu, tmp_path)
    md = read_model_description(str(fmu))
    assert (md.numberOfEventIndicators if version == "2.0" else len(md.eventIndicators)) == 4
    y0, t_end = compass_start(compass), 3.0
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=t_end, relative_tolerance=1e-10,
                       output_interval=1e-3, start_values=_start(compass, y0), record_events=True,
                       output=[f"{w}.{c}" for w in ("q", "qd") for c in compass.coordinates])
    ref = compass.simulate(y0, t_end, 1e-3, **HYBRID)
    strikes = [e["t"] for e in ref.events if e["kind"] == "touchdown"]
    assert len(strikes) >= 3
    t, qd = res["time"], _cols(res, compass, "qd")
    twice = np.flatnonzero(np.diff(t) == 0)      # FMPy records an event's state before and after it
    jumps = [t[i] for i in twice if np.abs(qd[i + 1] - qd[i]).max() > 1e-3]
    assert np.abs(np.array(jumps) - strikes).max() < 1e-8
    # between the events, the same motion to the integrators' tolerance
    i, j = np.flatnonzero(np.abs(ref.t - 2.5) < 1e-12)[-1], np.flatnonzero(np.abs(t - 2.5) < 1e-9)[-1]
    assert np.abs(_cols(res, compass)[j] - ref.q[i]).max() < 1e-7


def test_model_exchange_ends_where_the_hybrid_simulator_stops(compass: rodgen.runtime.CompiledModel,
                                                              compass_fmus: dict[str, Path]) -> None:
    """on_slip="stop": with too little friction (mu 0.26) the stance foot's force starts outside its cone, rodgen's
    run stops at t = 0 with the slip, and the FMU asks the importer to terminate at its first event update."""
    y0 = compass_start(compass)
    ref = compass.simulate(y0, 1.0, 1e-3, p=compass.parameter_vector(mu=0.26), **HYBRID)
    assert [e["kind"] for e in ref.events] == ["slip"] and ref.t[-1] == 0.0 and "friction cone" in ref.message
    with pytest.raises(Exception, match="requested termination"):
        simulate_fmu(str(compass_fmus["3.0"]), fmi_type="ModelExchange", stop_time=1.0,
                     start_values=_start(compass, y0) | {"mu": 0.26})
    res = simulate_fmu(str(compass_fmus["3.0"]), fmi_type="ModelExchange", stop_time=1.0,
                       start_values=_start(compass, y0) | {"mu": 0.3}, output=["q.x"])
    assert res["time"][-1] == pytest.approx(1.0)


def test_model_exchange_with_stiction_stops_where_the_energy_balance_says(build_dir: Path, tmp_path: Path) -> None:
    """A pendulum with joint stiction released at rest (tests/test_stiction.py): through FMPy's CVode, the
    friction block's indicators (the sliding speed, then the static margin) stop the solver where it sticks and
    slips again; the stops are the closed-form energy balance's, the last one where gravity stays within the
    static limit."""
    from test_stiction import G, L, M, _pendulum, _pendulum_stops
    robot = rodgen.build(_pendulum(), build_dir=build_dir)
    fmu = rodgen.export_fmu(robot, tmp_path / "stiction.fmu", kind="me", fmi_version="3.0")
    assert validate_fmu(str(fmu)) == []
    compile_alone(fmu, tmp_path / "alone")
    stops = _pendulum_stops(0.0)
    c = robot.coordinates[0]
    force = f"force.{robot.constraints[0].name}"
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=12.0, relative_tolerance=1e-10,
                       output_interval=1e-2, record_events=True, output=[f"q.{c}", f"qd.{c}", force])
    t, q = res["time"], res[f"q.{c}"]
    at_events = q[np.flatnonzero(np.diff(t) == 0)]
    np.testing.assert_allclose(at_events, stops[1:], atol=1e-6)
    assert abs(q[-1] - stops[-1]) < 1e-6 and abs(res[f"qd.{c}"][-1]) < 1e-9
    # held at the last stop by the friction torque that balances gravity (the force output)
    assert res[force][-1] == pytest.approx(M * G * L * np.cos(stops[-1]), rel=1e-6)


def test_contact_forces_are_outputs(compass: rodgen.runtime.CompiledModel, compass_fmus: dict[str, Path]) -> None:
    """force.<contact>.t/.n are the hybrid simulator's multipliers (tangential, normal) at every communication
    point of Co-Simulation: the stance foot's, the swing foot's zero."""
    md = read_model_description(str(compass_fmus["3.0"]))
    forces = [v.name for v in md.modelVariables if v.name.startswith("force.")]
    assert forces == ["force.foot_a.t", "force.foot_a.n", "force.foot_b.t", "force.foot_b.n"]
    assert all(v.causality == "output" for v in md.modelVariables if v.name in forces)
    y0, dt, t_end = compass_start(compass), 1e-3, 1.6
    res = simulate_fmu(str(compass_fmus["3.0"]), stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values=_start(compass, y0), output=forces + [f"q.{c}" for c in compass.coordinates])
    ref = compass.simulate(y0, t_end, dt, **HYBRID)
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    assert np.abs(_cols(res, compass) - ref.q[rows]).max() < 1e-12        # FMI 3.0's walk is rodgen's
    got = np.column_stack([res[f] for f in forces])
    assert np.abs(got - ref.lam[rows]).max() < 1e-12 * np.abs(ref.lam).max()
    assert got[:, 1].max() > 100.0 and got[:, 3].max() > 100.0     # each foot carries the walker in turn


def test_hybrid_co_simulation_with_substeps(compass: rodgen.runtime.CompiledModel,
                                            compass_fmus: dict[str, Path]) -> None:
    """fmu.max_step is the hybrid run's RK4 step inside a longer communication step (the contact forces read at
    the start, before the first step, start the run): the walk of robot.simulate at that step."""
    y0, dt, t_end = compass_start(compass), 1e-3, 1.6
    res = simulate_fmu(str(compass_fmus["2.0"]), stop_time=t_end, step_size=5 * dt, output_interval=5 * dt,
                       start_values=_start(compass, y0) | {"fmu.max_step": dt},
                       output=["force.foot_a.n"] + [f"q.{c}" for c in compass.coordinates])
    ref = compass.simulate(y0, t_end, dt, **HYBRID)
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    assert len([e for e in ref.events if e["kind"] == "touchdown"]) >= 2
    assert np.abs(_cols(res, compass) - ref.q[rows]).max() < 1e-12


@pytest.mark.parametrize("version", VERSIONS)
def test_fmu_state_get_set_serialize(exo5: rodgen.runtime.CompiledModel, fmus: dict[str, Path],
                                     version: str) -> None:
    """Get the state, run, set it back, run again: the same numbers; the serialized state restores a fresh
    instance to the same run."""
    names = [f"{w}.{c}" for w in ("q", "qd") for c in exo5.coordinates]
    u = {f"u.{c}": float(x) for c, x in zip(exo5.inputs, np.linspace(-2.0, 2.0, exo5.nu))}
    a = Instance(fmus[version]).start({"m_torso": 40.0, "fmu.max_step": 1e-3})
    a.set(u)
    a.run(0.0, 50, 2e-3, names)
    state = a.fmu.getFMUState()
    blob = a.fmu.serializeFMUState(state) if version == "3.0" else a.fmu.serializeFMUstate(state)
    first = a.run(0.1, 100, 2e-3, names)
    a.set({f"u.{c}": 0.0 for c in exo5.inputs} | {"m_torso": 60.0})   # changed after the state was taken
    a.fmu.setFMUState(state)
    again = a.run(0.1, 100, 2e-3, names)
    assert np.array_equal(first, again)
    assert np.abs(first[-1] - first[0]).max() > 1e-2
    b = Instance(fmus[version]).start({})
    restored = b.fmu.deserializeFMUState(blob) if version == "3.0" else b.fmu.deSerializeFMUstate(blob)
    b.fmu.setFMUState(restored)
    assert np.array_equal(b.run(0.1, 100, 2e-3, names), first)
    a.fmu.freeFMUState(state)
    b.fmu.freeFMUState(restored)


def test_fmu_state_of_a_hybrid_run(compass: rodgen.runtime.CompiledModel, compass_fmus: dict[str, Path]) -> None:
    """The hybrid run's phase (active contacts, armed feet, targets) is part of the state: taken before a heel
    strike, restored after two, the run repeats the strikes exactly."""
    names = [f"{w}.{c}" for w in ("q", "qd") for c in compass.coordinates] + ["force.foot_a.n", "force.foot_b.n"]
    a = Instance(compass_fmus["3.0"]).start(_start(compass, compass_start(compass)))
    a.run(0.0, 500, 1e-3, names)
    state = a.fmu.getFMUState()
    blob = a.fmu.serializeFMUState(state)
    first = a.run(0.5, 1100, 1e-3, names)
    assert first[:, -2].min() == 0.0 and first[:, -1].min() == 0.0 < first[:, -1].max()   # feet swapped twice
    a.fmu.setFMUState(state)
    assert np.array_equal(a.run(0.5, 1100, 1e-3, names), first)
    b = Instance(compass_fmus["3.0"]).start({})
    b.fmu.setFMUState(b.fmu.deserializeFMUState(blob))
    assert np.array_equal(b.run(0.5, 1100, 1e-3, names), first)


@pytest.mark.parametrize("version", VERSIONS)
def test_directional_derivatives_against_central_differences(exo5: rodgen.runtime.CompiledModel,
                                                             compass: rodgen.runtime.CompiledModel,
                                                             tmp_path: Path, version: str) -> None:
    """providesDirectionalDerivative(s): d der(y) along the states and inputs from the generated RHS Jacobian
    (and M^-1 B), against central differences of the FMU's own derivatives; the outputs along the states
    against central differences of the compiled model's points."""
    fmu = rodgen.export_fmu(exo5, tmp_path / "jac.fmu", kind="me", fmi_version=version, directional_derivatives=True)
    assert validate_fmu(str(fmu)) == []
    compile_alone(fmu, tmp_path / "alone")
    xml = zipfile.ZipFile(fmu).read("modelDescription.xml").decode()
    assert ('providesDirectionalDerivative="true"' if version == "2.0" else
            'providesDirectionalDerivatives="true"') in xml
    nq, nu = exo5.nq, exo5.nu
    rng = np.random.default_rng(5)
    y = np.concatenate([exo5.initial_state()[:nq] + 0.2 * rng.standard_normal(nq), rng.standard_normal(nq)])
    u = rng.standard_normal(nu)
    inst = Instance(fmu, "ModelExchange").start({f"u.{c}": float(x) for c, x in zip(exo5.inputs, u)})
    fmu_ = inst.fmu
    states = [inst.vr[f"{w}.{c}"] for w in ("q", "qd") for c in exo5.coordinates]
    ders = [inst.vr[f"der({w}.{c})"] for w in ("q", "qd") for c in exo5.coordinates]
    inputs = [inst.vr[f"u.{c}"] for c in exo5.inputs]
    points = [f"point.{p}.{a}" for p in exo5.point_names for a in "xy"]
    fmu_.enterContinuousTimeMode()

    def deriv(x: np.ndarray, uu: np.ndarray) -> np.ndarray:
        inst.set({f"u.{c}": float(v) for c, v in zip(exo5.inputs, uu)})
        fmu_.setContinuousStates(np.ctypeslib.as_ctypes(np.array(x)), len(x))
        dx = np.zeros(2 * nq)
        (fmu_.getContinuousStateDerivatives if version == "3.0" else fmu_.getDerivatives)(
            np.ctypeslib.as_ctypes(dx), len(dx))
        return dx

    deriv(y, u)
    direction = rng.standard_normal(2 * nq + nu)
    got = np.array(fmu_.getDirectionalDerivative(ders + [inst.vr[p] for p in points], states + inputs,
                                                 list(direction)))
    h = 1e-6
    fd = (deriv(y + h * direction[:2 * nq], u + h * direction[2 * nq:])
          - deriv(y - h * direction[:2 * nq], u - h * direction[2 * nq:])) / (2 * h)
    assert np.abs(got[:2 * nq] - fd).max() < 1e-6 * (1 + np.abs(fd).max())
    assert np.abs(fd).max() > 1.0

    def pts(q: np.ndarray) -> np.ndarray:
        r = exo5.points(q)
        return np.concatenate([np.asarray(r[p], dtype=float).reshape(2) for p in exo5.point_names])

    fd_pts = (pts(y[:nq] + h * direction[:nq]) - pts(y[:nq] - h * direction[:nq])) / (2 * h)
    deriv(y, u)
    got = np.array(fmu_.getDirectionalDerivative([inst.vr[p] for p in points], states, list(direction[:2 * nq])))
    assert np.abs(got - fd_pts).max() < 1e-6
    with pytest.raises(ValueError, match="constraint blocks"):
        rodgen.export_fmu(compass, tmp_path / "x.fmu", directional_derivatives=True)


def test_bad_input(exo5: rodgen.runtime.CompiledModel, build_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fmi_version='4.0': rodgen exports FMI 2.0, 3.0"):
        rodgen.export_fmu(exo5, tmp_path / "x.fmu", fmi_version="4.0")
    with pytest.raises(ValueError, match="directional_derivatives=True.*a controller is compiled in"):
        rodgen.export_fmu(exo5, tmp_path / "x.fmu", directional_derivatives=True,
                          controller=rodgen.PD(rodgen.Reference.hold(exo5.initial_state()[:exo5.nq]), kp=1.0, kd=1.0))
