"""FMU export (rodgen.export_fmu, `rodgen fmu`): FMI 2.0 FMUs run by FMPy, an importer rodgen does not write,
against rodgen's own simulate(): Co-Simulation with the same RK4 step to 1e-12, Model Exchange with FMPy's
CVode to the solver's tolerance, parameters and inputs set through the FMU, outputs against the compiled model,
the sources compiled alone with warnings as errors."""
from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.cli import main

fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402


@pytest.fixture(scope="module")
def exo5(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir)


@pytest.fixture(scope="module")
def pendulum(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "pendulum_vl.yaml"), build_dir=build_dir)


@pytest.fixture(scope="module")
def exo5_fmu(exo5: rodgen.runtime.CompiledModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rodgen.export_fmu(exo5, tmp_path_factory.mktemp("fmu") / "exo5.fmu", kind="both")


@pytest.fixture(scope="module")
def pendulum_fmu(pendulum: rodgen.runtime.CompiledModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rodgen.export_fmu(pendulum, tmp_path_factory.mktemp("fmu") / "pendulum_vl.fmu", kind="cs")


def _q(res: np.ndarray, robot: rodgen.runtime.CompiledModel, what: str = "q") -> np.ndarray:
    return np.column_stack([res[f"{what}.{c}"] for c in robot.coordinates])


def test_the_fmus_validate(exo5_fmu: Path, pendulum_fmu: Path) -> None:
    assert validate_fmu(str(exo5_fmu)) == []
    assert validate_fmu(str(pendulum_fmu)) == []
    md = read_model_description(str(exo5_fmu))
    assert md.fmiVersion == "2.0"
    assert md.coSimulation.modelIdentifier == md.modelExchange.modelIdentifier == "exo5"
    names = zipfile.ZipFile(exo5_fmu).namelist()
    assert "binaries/linux64/exo5.so" in names
    assert {"sources/exo5.c", "sources/rodgen_simulate.c", "sources/rodgen_fmi2.c",
            "sources/buildDescription.xml", "model.png", "documentation/_main.html"} <= set(names)


def test_model_image_and_documentation(exo5_fmu: Path, exo5: rodgen.runtime.CompiledModel) -> None:
    """model.png is a stick figure (the links drawn in blue, the masses in red); the documentation lists every
    variable with its value reference."""
    import io

    from PIL import Image
    with zipfile.ZipFile(exo5_fmu) as z:
        img = np.asarray(Image.open(io.BytesIO(z.read("model.png"))).convert("RGB")).astype(int)
        doc = z.read("documentation/_main.html").decode()
    blue = (np.abs(img - [31, 119, 180]).sum(axis=2) < 40).sum()      # matplotlib's tab:blue, the links
    red = (np.abs(img - [214, 39, 40]).sum(axis=2) < 40).sum()        # tab:red, the masses
    assert blue > 200 and red > 50
    for v in read_model_description(str(exo5_fmu)).modelVariables:
        assert f"<tr><td>{v.valueReference}</td><td><code>{v.name}</code>" in doc


def test_model_description_from_the_table(exo5_fmu: Path, exo5: rodgen.runtime.CompiledModel) -> None:
    md = read_model_description(str(exo5_fmu))
    by_name = {v.name: v for v in md.modelVariables}
    # states, their derivatives, the model file's initial coordinates
    assert len(md.derivatives) == 2 * exo5.nq
    for i, c in enumerate(exo5.coordinates):
        assert float(by_name[f"q.{c}"].start) == exo5.initial_state()[i]
        assert by_name[f"der(q.{c})"].derivative is by_name[f"q.{c}"]
        assert by_name[f"der(qd.{c})"].derivative is by_name[f"qd.{c}"]
    # inputs and tunable parameters with the model's units and values
    assert [v.name for v in md.modelVariables if v.causality == "input"] == [f"u.{c}" for c in exo5.inputs]
    for prm in exo5.model.parameters:
        v = by_name[prm.name]
        assert (v.causality, v.variability, float(v.start), v.unit) == ("parameter", "tunable", prm.value, prm.unit)
    outputs = {v.name for v in md.modelVariables if v.causality == "output"}
    assert {f"point.{p}.{a}" for p in exo5.point_names for a in "xy"} | {"energy.total"} <= outputs


@pytest.mark.parametrize("which", ["exo5", "pendulum"])
def test_co_simulation_is_rodgen_rk4(which: str, request: pytest.FixtureRequest) -> None:
    robot = request.getfixturevalue(which)
    fmu = request.getfixturevalue(f"{which}_fmu")
    dt, t_end = 2e-3, 0.6
    u = np.linspace(-3.0, 3.0, robot.nu)
    start = {f"u.{c}": float(x) for c, x in zip(robot.inputs, u)}
    res = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values=start, output=[f"{w}.{c}" for w in ("q", "qd") for c in robot.coordinates])
    ref = robot.simulate(robot.initial_state(), t_end, dt, u=u)
    assert res["time"].shape == ref.t.shape
    assert np.abs(_q(res, robot) - ref.q).max() < 1e-12
    assert np.abs(_q(res, robot, "qd") - ref.qd).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 1e-2     # it moved


def test_co_simulation_with_substeps(exo5: rodgen.runtime.CompiledModel, exo5_fmu: Path) -> None:
    """fmu.max_step splits a communication step into RK4 steps: 5 steps of 1 ms per 5 ms exchanged."""
    res = simulate_fmu(str(exo5_fmu), fmi_type="CoSimulation", stop_time=0.3, step_size=5e-3,
                       output_interval=5e-3, start_values={"fmu.max_step": 1e-3},
                       output=[f"q.{c}" for c in exo5.coordinates])
    ref = exo5.simulate(exo5.initial_state(), 0.3, 1e-3)
    assert np.abs(_q(res, exo5) - ref.q[::5]).max() < 1e-12


def test_model_exchange_with_cvode(exo5: rodgen.runtime.CompiledModel, exo5_fmu: Path) -> None:
    t_end = 0.5
    res = simulate_fmu(str(exo5_fmu), fmi_type="ModelExchange", solver="CVode", stop_time=t_end,
                       relative_tolerance=1e-9, output_interval=0.01,
                       output=[f"q.{c}" for c in exo5.coordinates] + ["energy.total"])
    ref = exo5.simulate(exo5.initial_state(), t_end, method="dopri5", rtol=1e-12, atol=1e-12)
    assert res["time"][-1] == pytest.approx(t_end)
    err = np.abs(_q(res, exo5)[-1] - ref.q[-1]).max()
    assert err < 1e-6
    # unforced and undamped: the FMU's energy output is conserved to the solver's tolerance
    e = res["energy.total"]
    assert np.abs(e - e[0]).max() < 1e-6 * abs(e[0])


def test_a_parameter_set_through_the_fmu(exo5: rodgen.runtime.CompiledModel, exo5_fmu: Path) -> None:
    dt, t_end = 2e-3, 0.4
    res = simulate_fmu(str(exo5_fmu), fmi_type="CoSimulation", stop_time=t_end, step_size=dt,
                       output_interval=dt, start_values={"m_torso": 45.0, "l_thigh0": 0.2},
                       output=[f"q.{c}" for c in exo5.coordinates])
    p = exo5.parameter_vector(m_torso=45.0, l_thigh0=0.2)
    ref = exo5.simulate(exo5.initial_state(), t_end, dt, p=p)
    default = exo5.simulate(exo5.initial_state(), t_end, dt)
    assert np.abs(_q(res, exo5) - ref.q).max() < 1e-12
    assert np.abs(ref.q[-1] - default.q[-1]).max() > 1e-3      # the parameters matter


def test_outputs_are_the_compiled_models(exo5: rodgen.runtime.CompiledModel, exo5_fmu: Path) -> None:
    names = [f"point.{p}.{a}" for p in exo5.point_names for a in "xy"]
    res = simulate_fmu(str(exo5_fmu), fmi_type="CoSimulation", stop_time=0.2, step_size=1e-2,
                       output=[f"{w}.{c}" for w in ("q", "qd") for c in exo5.coordinates] + names
                       + ["energy.kinetic", "energy.potential", "energy.total"])
    q, qd = _q(res, exo5)[-1], _q(res, exo5, "qd")[-1]
    pts = exo5.points(q)
    for name in exo5.point_names:
        got = [res[f"point.{name}.{a}"][-1] for a in "xy"]
        assert np.allclose(got, pts[name], rtol=0, atol=1e-13), name
    T, V = exo5.energy(q, qd)
    assert res["energy.kinetic"][-1] == pytest.approx(T, abs=1e-12)
    assert res["energy.total"][-1] == pytest.approx(T + V, abs=1e-10)


def test_the_sources_compile_alone(exo5_fmu: Path, tmp_path: Path) -> None:
    compile_alone(exo5_fmu, tmp_path)


def compile_alone(fmu: Path, tmp_path: Path) -> None:
    """Every C file of the FMU's sources/ compiles on its own with the importer's FMI headers, warnings as errors."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path)
    headers = Path(fmpy.__file__).parent / "c-code"
    src = tmp_path / "sources"
    for c in sorted(src.glob("*.c")):
        out = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-c", f"-I{headers}", c.name,
                              "-o", str(tmp_path / (c.stem + ".o"))], cwd=src, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


def test_bad_input(exo5: rodgen.runtime.CompiledModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="kind='sc' is not an FMU kind"):
        rodgen.export_fmu(exo5, tmp_path / "x.fmu", kind="sc")
    with pytest.raises(ValueError, match="rodgen exports FMI 2.0"):
        rodgen.export_fmu(exo5, tmp_path / "x.fmu", fmi="1.0")
    with pytest.raises(rodgen.BuildError, match="does not exist"):
        rodgen.export_fmu(exo5, tmp_path / "no" / "such" / "x.fmu")
    with pytest.raises(rodgen.BuildError, match="is a folder"):
        rodgen.export_fmu(exo5, tmp_path)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(rodgen.BuildError, match="a_file is not a folder"):
        rodgen.export_fmu(exo5, tmp_path / "a_file" / "x.fmu")
    if os.geteuid() != 0:      # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        try:
            with pytest.raises(rodgen.BuildError, match="is not writable"):
                rodgen.export_fmu(exo5, locked / "x.fmu")
        finally:
            locked.chmod(0o700)
    assert main(["fmu", str(EXAMPLES / "exo5.yaml"), "-o", str(tmp_path / "no" / "x.fmu")]) == 2
    assert "rodgen: error: cannot write the FMU" in capsys.readouterr().err


def test_the_command_line(tmp_path: Path, build_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.fmu"
    assert main(["fmu", str(EXAMPLES / "pendulum_vl.yaml"), "-o", str(out), "--kind", "me",
                 "--build-dir", str(build_dir)]) == 0
    assert str(out) in capsys.readouterr().out
    md = read_model_description(str(out))
    assert md.modelExchange is not None and md.coSimulation is None
    assert validate_fmu(str(out)) == []
    # a model with contacts: the hybrid simulation's initial phase and options on the command line
    cg = tmp_path / "cg.fmu"
    assert main(["fmu", str(EXAMPLES / "compass_gait.yaml"), "-o", str(cg), "--contact", "foot_a", "--disarmed",
                 "foot_b", "--arm-gap", "0.02", "--build-dir", str(build_dir)]) == 0
    header = zipfile.ZipFile(cg).read("sources/rodgen_fmu.h").decode()
    assert "#define RODGEN_FMU_HYBRID 1" in header and "#define RODGEN_FMU_ARM_GAP 0.02" in header
    assert main(["fmu", str(EXAMPLES / "compass_gait.yaml"), "-o", str(cg), "--contact", "foot_c",
                 "--build-dir", str(build_dir)]) == 2
    assert "no constraint block 'foot_c'" in capsys.readouterr().err


CONTROLLER_C = r"""
#include "rodgen_runtime.h"
/* u_i = kp (q_ref_i - q_i) - kd qd_i (every coordinate actuated); params [kp, kd, q_ref (nq)]; state[0] counts
 * the calls, memory kept between them */
int fmu_test_pd(void *context, double t, const double *y, double *u)
{
    rodgen_controller *c = (rodgen_controller *)context;
    const int nq = c->model->nq;
    int i;
    (void)t;
    for (i = 0; i < c->model->nu; ++i) {
        u[i] = c->params[0] * (c->params[2 + i] - y[i]) - c->params[1] * y[nq + i] + 1e-3 * c->state[0];
    }
    c->state[0] += 1.0;
    return 0;
}
"""


def test_a_pd_law_inside_the_fmu(exo5: rodgen.runtime.CompiledModel, tmp_path: Path) -> None:
    """The runtime's PD law compiled in, its gains and set point tunable; the FMU's inputs are its feedforward."""
    q0 = exo5.initial_state()[:exo5.nq]
    pd = rodgen.PD(rodgen.Reference.hold(q0 + 0.1), kp=np.linspace(100.0, 300.0, exo5.nu), kd=20.0)
    fmu = rodgen.export_fmu(exo5, tmp_path / "pd.fmu", controller=pd)
    assert validate_fmu(str(fmu)) == []
    dt, t_end = 2e-3, 0.5
    uff = np.linspace(-1.0, 1.0, exo5.nu)
    start = {f"u.{c}": float(x) for c, x in zip(exo5.inputs, uff)}
    start["pd.kp." + exo5.inputs[2]] = 60.0
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=dt, output_interval=dt, start_values=start,
                       output=[f"q.{c}" for c in exo5.coordinates])
    kp = np.linspace(100.0, 300.0, exo5.nu)
    kp[2] = 60.0
    ref = exo5.simulate(exo5.initial_state(), t_end, dt, u=uff,
                        controller=rodgen.PD(pd.reference, kp=kp, kd=20.0))
    assert ref.message == "reached t_end = 0.5"
    assert np.abs(_q(res, exo5) - ref.q).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 0.1
    with pytest.raises(ValueError, match="holds one set point"):
        rodgen.export_fmu(exo5, tmp_path / "x.fmu",
                          controller=rodgen.PD(rodgen.Reference([0.0, 1.0], [q0, q0]), kp=1.0, kd=1.0))


def test_a_c_controller_inside_the_fmu(exo5: rodgen.runtime.CompiledModel, tmp_path: Path,
                                       build_dir: Path) -> None:
    """A rodgen.CController's C compiled into the FMU, with its parameters (tunable) and its memory."""
    src = tmp_path / "fmu_test_pd.c"
    src.write_text(CONTROLLER_C)
    q0 = exo5.initial_state()[:exo5.nq]
    ctl = rodgen.CController(src, "fmu_test_pd", params=[200.0, 20.0, *(q0 + 0.1)], state=[0.0],
                             build_dir=build_dir)
    fmu = rodgen.export_fmu(exo5, tmp_path / "c.fmu", controller=ctl)
    assert validate_fmu(str(fmu)) == []
    assert "sources/controller_fmu_test_pd.c" in zipfile.ZipFile(fmu).namelist()
    compile_alone(fmu, tmp_path / "alone")
    dt, t_end = 2e-3, 0.5
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values={"controller.params[0]": 150.0}, output=[f"q.{c}" for c in exo5.coordinates])
    ref = exo5.simulate(exo5.initial_state(), t_end, dt,
                        controller=rodgen.CController(src, "fmu_test_pd", params=[150.0, 20.0, *(q0 + 0.1)],
                                                      state=[0.0], build_dir=build_dir))
    assert np.abs(_q(res, exo5) - ref.q).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 0.1


def test_a_spatial_model(build_dir: Path, tmp_path: Path) -> None:
    """A spatial arm: the positions of its frames as outputs, against CompiledModel.frames()."""
    arm = rodgen.build(rodgen.load(EXAMPLES / "spatial" / "arm3.yaml"), build_dir=build_dir)
    fmu = rodgen.export_fmu(arm, tmp_path / "arm3.fmu", kind="both")
    assert validate_fmu(str(fmu)) == []
    names = [f"frame.{f}.{a}" for f in arm.frame_names for a in "xyz"]
    dt, t_end = 1e-3, 0.3
    y0 = np.concatenate([np.linspace(0.3, 0.9, arm.nq), np.zeros(arm.nq)])     # start states set through the FMU
    res = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=t_end, step_size=dt, output_interval=dt,
                       start_values={f"q.{c}": float(x) for c, x in zip(arm.coordinates, y0)},
                       output=[f"{w}.{c}" for w in ("q", "qd") for c in arm.coordinates] + names)
    ref = arm.simulate(y0, t_end, dt)
    assert np.abs(_q(res, arm) - ref.q).max() < 1e-12
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 1e-2
    frames = arm.frames(ref.q[-1])
    for f in arm.frame_names:
        assert np.allclose([res[f"frame.{f}.{a}"][-1] for a in "xyz"], frames[f][0], rtol=0, atol=1e-13), f


def test_the_compass_gait_walks_in_the_fmu(build_dir: Path, tmp_path: Path) -> None:
    """Co-Simulation of a model with contacts runs the hybrid simulation (located heel strikes, impacts,
    lift-off) continued across communication steps: the same walk as robot.simulate(contacts=...)."""
    robot = rodgen.build(rodgen.load(EXAMPLES / "compass_gait.yaml"), build_dir=build_dir)
    gamma = robot.parameters["gamma"]
    l = robot.parameters["a"] + robot.parameters["b"]
    ts, ws, ww = 0.2187, -1.0918, -0.3772          # near Goswami's period-one gait (examples/compass_gait.py)
    tw = -ts - 2 * gamma
    y0 = np.array([-l * np.sin(ts), l * np.cos(ts), ts, tw, -l * np.cos(ts) * ws, -l * np.sin(ts) * ws, ws, ww])
    fmu = rodgen.export_fmu(robot, tmp_path / "cg.fmu", contacts=["foot_a"], disarmed=["foot_b"], arm_gap=0.02,
                            event_tol=1e-13)
    assert validate_fmu(str(fmu)) == []
    compile_alone(fmu, tmp_path / "alone")
    dt, t_end = 1e-3, 3.0
    start = {f"{w}.{c}": float(x) for w, part in (("q", y0[:4]), ("qd", y0[4:])) for c, x in zip(robot.coordinates,
                                                                                                   part)}
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=dt, output_interval=dt, start_values=start,
                       output=[f"q.{c}" for c in robot.coordinates])
    ref = robot.simulate(y0, t_end, dt, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=0.02, event_tol=1e-13)
    strikes = [e for e in ref.events if e["kind"] == "touchdown"]
    assert len(strikes) >= 3
    # the reference stores each event twice (before and after the jump): compare at the grid times
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    assert np.abs(_q(res, robot) - ref.q[rows]).max() < 1e-12


def test_exo5_walks_with_its_c_controller_in_the_fmu(build_dir: Path, tmp_path: Path) -> None:
    """The exo5_walk controller (examples/exo5_walk_controller.c, virtual constraints, its stance leg in its
    memory) compiled into a Co-Simulation FMU with the hybrid simulation: the walk of robot.simulate."""
    import sys
    sys.path.insert(0, str(EXAMPLES))
    try:
        import exo5_walk
    finally:
        sys.path.remove(str(EXAMPLES))
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=build_dir)
    law = exo5_walk.VirtualConstraints(robot)
    y0, ctl = law.initial_state(), law.c_controller(str(build_dir))
    steps, dt = 4, 1e-3
    hybrid = dict(contacts=["foot_a"], arm_gap=0.01, on_slip="continue", max_events=4 * steps + 8)
    fmu = rodgen.export_fmu(robot, tmp_path / "walk.fmu", controller=ctl, **hybrid)
    assert validate_fmu(str(fmu)) == []
    start = {f"{w}.{c}": float(x) for w, part in (("q", y0[:robot.nq]), ("qd", y0[robot.nq:]))
             for c, x in zip(robot.coordinates, part)}
    res = simulate_fmu(str(fmu), stop_time=0.4 * steps, step_size=dt, output_interval=dt, start_values=start,
                       output=[f"q.{c}" for c in robot.coordinates])
    ref = robot.simulate(y0, 0.4 * steps, dt, u=ctl, **hybrid)
    assert len([e for e in ref.events if e["kind"] == "touchdown"]) >= 4
    rows = [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in res["time"]]
    assert np.abs(_q(res, robot) - ref.q[rows]).max() < 1e-12
    assert res["q.x"][-1] - res["q.x"][0] > 0.8 * 0.4 * steps * 0.9      # it walks, about a metre a second


def test_the_fmu_binary_is_portable(pendulum: rodgen.runtime.CompiledModel, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An FMU is shipped to other machines: its binary is compiled for the compiler's generic target, not for the
    exporting machine's CPU as rodgen's own builds are."""
    import importlib
    compiler = importlib.import_module("rodgen.toolchain.compiler")
    real, seen = compiler.compile_model, []

    def spy(*args: object, **kwargs: object) -> Path:
        seen.append(compiler.model_cflags(kwargs["options"]))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compiler, "compile_model", spy)
    fmu = rodgen.export_fmu(pendulum, tmp_path / "p.fmu", kind="cs")
    assert fmu.is_file() and len(seen) == 1
    assert not [f for f in seen[0] if f.startswith(("-march", "-mcpu"))], seen[0]
    assert "-march=native" in compiler.model_cflags(compiler.BuildOptions()) or \
        not compiler.accepts(compiler.find_compiler(None), "-march=native")
