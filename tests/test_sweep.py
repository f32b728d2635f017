"""Parameter studies on Dask (rodgen.sweep, rodgen sweep): against a plain loop of simulate().

One LocalCluster of 2 worker processes serves the module. The reference of every study is the loop a
user would write without it: ``robot.simulate`` once per point, in this process, with the point's
parameters, initial state and controller set by hand; the sweep must give the same numbers bit for bit
(each chunk is a ``simulate_batch``, which runs every trajectory exactly as ``simulate`` does). A worker
killed during a study, a model that fails to build on a worker and bad grids are checked too.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("xarray")
pytest.importorskip("pandas")

import cloudpickle  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import rodgen  # noqa: E402
from rodgen.cli import main as cli_main  # noqa: E402
from rodgen.runtime import PD, Reference, study  # noqa: E402
from rodgen.runtime.study import SweepError  # noqa: E402
from rodgen.toolchain import BuildOptions  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MODEL = EXAMPLES / "double_pendulum.yaml"

# the summary functions below are defined in this module, which the workers cannot import: send them by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def robot(build_dir: Path) -> Any:
    return rodgen.build(rodgen.load(MODEL), build_dir=build_dir)


def _loop(robot: Any, points: list[dict[str, float]], t_end: float, dt: float, controller: Any = None) -> list[Any]:
    """The reference: one simulate() per point, parameters, initial angles and gains set by hand."""
    out = []
    for pt in points:
        p = robot.parameter_vector({k: v for k, v in pt.items() if k in robot.parameters})
        y0 = robot.initial_state()
        for k, v in pt.items():
            if k in robot.coordinates:
                y0[robot.coordinates.index(k)] = v
        law = controller
        if "kp" in pt:
            law = PD(controller.reference, kp=pt["kp"], kd=controller.kd)
        out.append(robot.simulate(y0, t_end, dt, p=p, controller=law))
    return out


def test_trajectories_equal_a_loop_of_simulate_and_workers_load_without_sympy(client: Client, robot: Any,
                                                                              build_dir: Path) -> None:
    ds = rodgen.sweep(MODEL, {"m1": "0.5:1.5:3", "th_upper": [-1.0, -0.4]}, t_end=0.3, dt=1e-2, chunk=2,
                      scheduler=client, build_dir=build_dir)
    assert ds.q.dims == ("m1", "th_upper", "time", "coordinate")
    np.testing.assert_array_equal(ds.m1.values, [0.5, 1.0, 1.5])
    assert list(ds.coordinate.values) == robot.coordinates
    pts = [{"m1": m, "th_upper": a} for m in (0.5, 1.0, 1.5) for a in (-1.0, -0.4)]
    for pt, ref in zip(pts, _loop(robot, pts, 0.3, 1e-2)):
        sel = ds.sel(pt)
        np.testing.assert_array_equal(ds.time.values, ref.t)
        np.testing.assert_array_equal(sel.q.values, ref.q)
        np.testing.assert_array_equal(sel.qd.values, ref.qd)
        assert int(sel.status) == 0
    # the model was built here first: the workers found it in the cache (no SymPy imported), once per worker
    # for the 3 tasks, and the task that prepared it found it by its key, before the library path was known
    assert all(not v for v in client.run(lambda: "sympy" in sys.modules).values())
    how = sorted(sum(client.run(lambda: [h for _, h in study.obtained]).values(), []))
    assert how in (["build"], ["build", "library"]), how


def test_summaries_and_controller_gains_equal_the_loop(client: Client, robot: Any, build_dir: Path,
                                                       tmp_path: Path) -> None:
    hold = PD(Reference.hold(robot.initial_state()[:2] + 0.2), kp=20.0, kd=4.0)
    table = {"m2": [0.6, 0.8, 1.1], "th_upper": [-1.2, -0.9, -0.7]}
    df = rodgen.sweep(robot, {"kp": [5.0, 40.0]}, table=table, t_end=0.5, dt=1e-2, controller=hold,
                      summary=["max_abs:u", "final:th_lower"], chunk=2, scheduler=client,
                      output=tmp_path / "s.csv")
    assert len(df) == 6 and list(df["point"]) == [0, 0, 1, 1, 2, 2]
    pts = [{"m2": m, "th_upper": a, "kp": k} for m, a in zip(*table.values()) for k in (5.0, 40.0)]
    for i, (pt, ref) in enumerate(zip(pts, _loop(robot, pts, 0.5, 1e-2, hold))):
        row = df.iloc[i]
        assert (row["m2"], row["th_upper"], row["kp"]) == (pt["m2"], pt["th_upper"], pt["kp"])
        assert row["max_abs_u[tau_upper]"] == np.max(np.abs(ref.u[:, 0]))
        assert row["max_abs_u[tau_lower]"] == np.max(np.abs(ref.u[:, 1]))
        assert row["final_th_lower"] == ref.q[-1, 1]
    # named summaries: a built-in and a function returning a bare array, under the names given
    named = rodgen.sweep(robot, {"kp": [5.0, 40.0]}, table=table, t_end=0.5, dt=1e-2, controller=hold,
                         summary={"peak": "max_abs:tau_upper", "end": _final_lower}, scheduler=client)
    np.testing.assert_array_equal(named["peak"], df["max_abs_u[tau_upper]"])
    np.testing.assert_array_equal(named["end"], df["final_th_lower"])
    import pandas as pd
    back = pd.read_csv(tmp_path / "s.csv")
    np.testing.assert_allclose(back["final_th_lower"], df["final_th_lower"], rtol=1e-15)


def _kinds(names: study.Names, points: study.Points, controller: Any) -> dict[str, tuple[str, int]]:
    return {nm: names.kind(nm, controller) for nm in points.columns}


def test_a_gain_study_is_cut_into_chunks_of_the_chunk_size() -> None:
    """The README's study (9 values of kp by 17 masses, 153 points) is 2 tasks of at most 100 points, as a
    study of parameters alone; only kp swept, 10 points are one task; each chunk keeps a gain's points
    together (a run per gain) and every point is in exactly one chunk, with its own gain."""
    names = study.Names(("m_torso", "g"), ("q0", "q1"), ("tau0", "tau1"))
    info = {"parameters": {"m_torso": 80.0, "g": 9.81}, "y0": [0.1, 0.2, 0.0, 0.0]}
    hold = PD(Reference.hold([0.0, 0.0]), kp=2e4, kd=100.0)
    for grid, tasks in (({"kp": "5000:100000:9", "m_torso": "40:120:17"}, 2), ({"kp": "100:1000:10"}, 1),
                        ({"m_torso": "40:120:17", "kp": [1e3, 2e3]}, 1)):
        points = study.make_points(grid, None)
        jobs = study._chunks(points, _kinds(names, points, hold), names, info, None, None, None, None, hold, 100)
        assert len(jobs) == tasks, grid
        index = np.concatenate([j.index for j in jobs])
        np.testing.assert_array_equal(np.sort(index), np.arange(points.size))
        kps = np.unique(points.columns["kp"])
        for j in jobs:
            assert len(j.index) <= 100 and sum(n for _, n in j.laws) == len(j.index)
            assert len(j.laws) <= len(kps)
            start = 0
            for law, n in j.laws:
                np.testing.assert_array_equal(j.points["kp"][start:start + n], law.kp)
                assert law.kd == 100.0 and law.reference is hold.reference
                start += n
            np.testing.assert_array_equal(j.p[:, 0], points.columns.get("m_torso", np.full(points.size, 80.0))[
                j.index])


def test_a_study_of_kp_alone_equals_the_loop(client: Client, robot: Any) -> None:
    """Chunks holding several gains (one simulate_batch each, results joined) give what simulate gives,
    bit for bit, trajectories and summaries alike."""
    hold = PD(Reference.hold(robot.initial_state()[:2] + 0.2), kp=20.0, kd=4.0)
    kps = [5.0, 10.0, 20.0, 40.0, 80.0]
    ds = rodgen.sweep(robot, {"kp": kps}, t_end=0.3, dt=1e-2, controller=hold, chunk=3, scheduler=client)
    pts = [{"kp": k} for k in kps]
    refs = _loop(robot, pts, 0.3, 1e-2, hold)
    for pt, ref in zip(pts, refs):
        np.testing.assert_array_equal(ds.sel(pt).q.values, ref.q)
        np.testing.assert_array_equal(ds.sel(pt).u.values, ref.u)
    df = rodgen.sweep(robot, {"kp": kps, "m2": [0.7, 0.9]}, t_end=0.3, dt=1e-2, controller=hold, chunk=4,
                      summary=["final:th_lower", "max_abs:u"], scheduler=client)
    pts = [{"kp": k, "m2": m} for k in kps for m in (0.7, 0.9)]
    for i, (pt, ref) in enumerate(zip(pts, _loop(robot, pts, 0.3, 1e-2, hold))):
        row = df.iloc[i]
        assert (row["kp"], row["m2"]) == (pt["kp"], pt["m2"])
        assert row["final_th_lower"] == ref.q[-1, 1]
        assert row["max_abs_u[tau_upper]"] == np.max(np.abs(ref.u[:, 0]))


def _final_lower(res: Any) -> np.ndarray:
    return res.q[np.arange(len(res)), res.rows - 1, 1]


def _kill_once(res: Any) -> dict[str, np.ndarray]:
    """A summary that kills its worker process the first time it runs (a marker file remembers it)."""
    marker = Path(os.environ["RODGEN_SWEEP_MARKER"])
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return {"final_q0": res.q[np.arange(len(res)), res.rows - 1, 0], "index": np.asarray(res.extra["index"])}


def test_a_killed_worker_leaves_a_complete_result(client: Client, robot: Any, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    marker = tmp_path / "killed"
    client.run(lambda: os.environ.__setitem__("RODGEN_SWEEP_MARKER", str(marker)))
    pids = set(client.run(os.getpid).values())
    df = rodgen.sweep(robot, {"m1": np.linspace(0.5, 2.0, 12)}, t_end=0.2, dt=1e-2, chunk=3,
                      summary=_kill_once, scheduler=client)
    assert marker.exists() and int(marker.read_text()) in pids     # a worker died during the study
    assert len(df) == 12 and df["status"].eq(0).all()
    np.testing.assert_array_equal(df["index"], np.arange(12))        # every point once, in order
    ref = _loop(robot, [{"m1": m} for m in np.linspace(0.5, 2.0, 12)], 0.2, 1e-2)
    np.testing.assert_array_equal(df["final_q0"], [r.q[-1, 0] for r in ref])
    client.wait_for_workers(2, timeout=60)


def test_a_model_that_fails_to_build_reports_the_build_error_once(client: Client, tmp_path: Path) -> None:
    client.run(lambda: setattr(study, "build_attempts", 0))
    bad = BuildOptions(extra_cflags=("-fno-such-option-in-any-compiler",))
    with pytest.raises(rodgen.BuildError) as info:
        rodgen.sweep(MODEL, {"m1": [1.0, 2.0, 3.0, 4.0]}, t_end=0.1, dt=1e-2, chunk=1, scheduler=client,
                     build_dir=tmp_path / "cache", build_options=bad, summary="final:q")
    text = str(info.value)
    assert "building the model 'double_pendulum' failed" in text
    assert "-fno-such-option-in-any-compiler" in text
    assert sum(client.run(lambda: study.build_attempts).values()) == 1   # one build, no task after it


@pytest.mark.parametrize("grid, table, message", [
    ({"m_1": [1.0]}, None, "'m_1' is not a parameter, coordinate (or <coordinate>_dot) or input of the model "
                          "(did you mean 'm1'?)"),
    ({"m1": "1:2:0"}, None, "grid 'm1': the range '1:2:0' is empty"),
    ({"L1": []}, None, "grid 'L1': no values"),
    ({"L2": "0.1:x:3"}, None, "grid 'L2': '0.1:x:3' is not START:STOP:NUM"),
    ({"g": [9.8, float("nan")]}, None, "grid 'g': the values hold inf or NaN"),
    ({"kp": [1.0]}, None, "'kp': a study of controller gains needs controller=PD"),
    (None, {"m1": [1.0, 2.0], "m2": [1.0]}, "table column 'm2' has 1 rows; the first column has 2"),
    (None, None, "a sweep needs a grid or a table"),
])
def test_bad_grids_name_the_parameter(grid: Any, table: Any, message: str) -> None:
    with pytest.raises(SweepError) as info:     # checked on the model's names, before any cluster starts
        rodgen.sweep(MODEL, grid, table=table, t_end=1.0, dt=1e-2, scheduler=object())
    assert message in str(info.value)


def test_a_summary_the_workers_cannot_import_is_a_clear_error(client: Client, robot: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import types
    mod = types.ModuleType("rodgen_only_on_the_client")
    exec("def peak(res):\n    return {'peak': abs(res.q).max(axis=(1, 2))}\n", mod.__dict__)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)   # importable here, not on the workers
    with pytest.raises(SweepError, match=r"the summary functions cannot be loaded on the worker .*"
                                         r"No module named 'rodgen_only_on_the_client'"):
        rodgen.sweep(robot, {"m1": [1.0, 2.0]}, t_end=0.1, dt=1e-2, summary=mod.peak, scheduler=client)


def test_bad_summaries_and_outputs_are_named() -> None:
    with pytest.raises(SweepError, match=r"summary 'max_abs:tau': 'tau' is not q, qd, u"):
        rodgen.sweep(MODEL, {"m1": [1.0]}, t_end=1.0, dt=1e-2, summary="max_abs:tau", scheduler=object())
    with pytest.raises(SweepError, match=r"'peak:q': neither a built-in STAT:WHAT \(STAT one of max_abs"):
        rodgen.sweep(MODEL, {"m1": [1.0]}, t_end=1.0, dt=1e-2, summary="peak:q", scheduler=object())
    with pytest.raises(SweepError, match=r"trajectories are written to \.zarr"):
        rodgen.sweep(MODEL, {"m1": [1.0]}, t_end=1.0, dt=1e-2, output="x.csv", scheduler=object())


def test_cli_sweep_on_the_cluster_writes_zarr(client: Client, robot: Any, build_dir: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import xarray as xr
    out = tmp_path / "r.zarr"
    status = cli_main(["sweep", str(MODEL), "--grid", "m1=0.5:1.5:2", "--grid", "L2=0.5,0.9", "--t-end", "0.2",
                       "--dt", "0.01", "--summary", "max_abs:q", "--summary", "final:th_upper", "-o", str(out),
                       "--scheduler", client.scheduler.address, "--build-dir", str(build_dir)])
    assert status == 0
    assert "double_pendulum: 4 trajectories to t = 0.2 s" in capsys.readouterr().out
    ds = xr.open_zarr(out)
    assert ds.max_abs_q.dims == ("m1", "L2", "coordinate")
    ref = _loop(robot, [{"m1": 1.5, "L2": 0.5}], 0.2, 1e-2)[0]
    np.testing.assert_array_equal(ds.max_abs_q.sel(m1=1.5, L2=0.5).values, np.max(np.abs(ref.q), axis=0))
    assert float(ds.final_th_upper.sel(m1=1.5, L2=0.5)) == ref.q[-1, 0]


def test_cli_sweep_bad_grid_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sweep", str(MODEL), "--grid", "mass=1,2", "--t-end", "1", "--summary", "final:q"]) == 2
    err = capsys.readouterr().err
    assert "rodgen: error: 'mass' is not a parameter" in err and "parameters: g, m1, m2, L1, L2" in err


def test_exo5_gains_study_example(client: Client, build_dir: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's heat maps hold the summaries of a plain loop; the tracking error falls like 1/kp."""
    import importlib.util

    from PIL import Image
    spec = importlib.util.spec_from_file_location("example_exo5_gains_study", EXAMPLES / "exo5_gains_study.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)
    spec.loader.exec_module(mod)
    cloudpickle.register_pickle_by_value(mod)      # its summary function travels by value, as from __main__
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir)  # the workers load it
    kp, m = (2e4, 8e4), (40.0, 100.0)
    df = mod.run(str(tmp_path), t_end=0.5, kp=kp, m_torso=m, scheduler=client, build_dir=str(build_dir))
    with Image.open(tmp_path / "exo5_gains_study.png") as im:
        im.verify()
    q0 = robot.initial_state()[:robot.nq]
    tau = [i for i, n in enumerate(robot.inputs) if n.startswith("tau_")]
    for _, row in df.iterrows():
        ref = robot.simulate(robot.initial_state(), 0.5, 1e-3, p=robot.parameter_vector(m_torso=row.m_torso),
                             controller=PD(Reference.hold(q0), kp=row.kp, kd=100.0))
        assert row.status == 0
        assert row.rms_error == pytest.approx(np.sqrt(np.mean((ref.q - q0) ** 2)), rel=1e-13)
        assert row.peak_torque == np.max(np.abs(ref.u[:, tau]))
    # the sag is carried by the PD law: four times the gain, about a quarter of the error
    err = df.set_index(["m_torso", "kp"]).rms_error
    for mass in m:
        assert 3.0 < err[mass, kp[0]] / err[mass, kp[1]] < 5.0
