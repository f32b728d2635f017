"""Flat feet (6-row contacts) in FMUs, through FMPy (FMI 2.0 and 3.0, Co-Simulation and Model Exchange): the box on
a flat foot of tests/test_flat_feet.py dropped flat (it lands at the free-fall time and rests on its weight's
wrench) and pushed above its sole (it tips when the centre of pressure reaches the sole's edge, and the run ends
there). Co-Simulation is robot.simulate's run to 1e-10 (states and the six forces of the foot); Model Exchange
through CVode finds the touch-down and the tip at the closed-form times and ends at the tip."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_flat_feet import CX, HF, SOLE, G, M, _box, _rest

import rodgen

fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import fmi2Discard, fmi2LastSuccessfulTime, fmi2Terminated  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402
from test_fmu3 import VERSIONS, Instance  # noqa: E402
from test_fmu_floating import columns, states  # noqa: E402

FORCES = [f"force.sole.{a}" for a in ("t1", "t2", "n", "mt1", "mt2", "mn")]
H, K, DT = 0.2, 10.0, 1e-3              # drop height, push rate (N/s), the RK4 step
T_TOUCH = np.sqrt(2 * H / G)            # free fall
T_TIP = M * G * (SOLE[1] - CX) / (HF * K)   # (CX m g + HF K t) / (m g) = x_max
REST = np.array([0, 0, M * G, 0, -CX * M * G, 0])   # the wrench of the weight: centre of pressure under the mass


@pytest.fixture(scope="module")
def box(build_dir: Path) -> Any:
    return rodgen.build(_box(), build_dir=build_dir)


@pytest.fixture(scope="module")
def fmus(box: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Per FMI version, the box starting in the air ("drop") and standing on its foot ("tip"), both interfaces."""
    tmp = tmp_path_factory.mktemp("fmu_flat")
    return {(case, v): rodgen.export_fmu(box, tmp / f"{case}_{v}.fmu", kind="both", fmi_version=v, event_tol=1e-13,
                                         contacts=["sole"] if case == "tip" else [])
            for case in ("drop", "tip") for v in VERSIONS}


def _forces(res: Any) -> np.ndarray:
    return np.column_stack([res[f] for f in FORCES])


def _rows(ref: Any, times: np.ndarray) -> list[int]:
    """The rows of robot.simulate's run at the FMU's communication points (the last of an event's two)."""
    return [np.flatnonzero(np.abs(ref.t - t) < 1e-12)[-1] for t in times]


def test_flat_foot_fmus_validate_and_name_the_wrench(box: Any, fmus: dict[tuple[str, str], Path]) -> None:
    """The foot's six forces are outputs (the force in N, the moments about the frame's origin in N.m), with two
    event indicators."""
    for (_, version), fmu in fmus.items():
        assert validate_fmu(str(fmu)) == []
        md = read_model_description(str(fmu))
        by = {v.name: v for v in md.modelVariables}
        assert [v.name for v in md.modelVariables if v.name.startswith("force.")] == FORCES
        assert [by[f].unit for f in FORCES] == ["N"] * 3 + ["N.m"] * 3
        assert all(by[f].causality == "output" for f in FORCES)
        assert (md.numberOfEventIndicators if version == "2.0" else len(md.eventIndicators)) == 2
        assert "sole" in by["indicator.sole.friction"].description


@pytest.mark.parametrize("version", VERSIONS)
def test_dropped_box_lands_and_rests_in_both_interfaces(box: Any, fmus: dict[tuple[str, str], Path],
                                                        version: str) -> None:
    """Dropped flat from H: Co-Simulation is robot.simulate's run to 1e-10 (the touch-down located inside a
    communication step, the six forces too), resting on the weight's wrench; CVode stops at the free-fall time
    sqrt(2H/g) for the touch-down and the box comes to rest on the same wrench."""
    fmu, y0, t_end = fmus["drop", version], _rest(H), 0.5
    names = list(states(box, y0))
    res = simulate_fmu(str(fmu), stop_time=t_end, step_size=DT, output_interval=DT, output=names + FORCES,
                       start_values=states(box, y0) | {"fmu.max_step": DT})
    ref = box.simulate(y0, t_end, DT, contacts=[], event_tol=1e-13)
    assert [e["kind"] for e in ref.events] == ["touchdown"] and abs(ref.events[0]["t"] - T_TOUCH) < 1e-9
    rows = _rows(ref, res["time"])
    assert np.abs(columns(res, box) - np.column_stack([ref.q, ref.qd])[rows]).max() < 1e-10
    assert np.abs(_forces(res) - ref.lam[rows]).max() < 1e-10
    assert np.abs(_forces(res)[-1] - REST).max() < 1e-8
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=t_end, relative_tolerance=1e-10,
                       output_interval=DT, record_events=True, start_values=states(box, y0), output=names + FORCES)
    t = res["time"]
    assert abs(t[np.flatnonzero(np.diff(t) == 0)][0] - T_TOUCH) < 1e-7
    assert np.abs(_forces(res)[-1] - REST).max() < 1e-6
    assert np.abs(columns(res, box)[-1] - np.r_[ref.q[-1], ref.qd[-1]]).max() < 1e-7


@pytest.mark.parametrize("version", VERSIONS)
def test_pushed_box_tips_and_the_run_ends_there(box: Any, fmus: dict[tuple[str, str], Path], version: str) -> None:
    """Pushed by K t at HF: the centre of pressure -m_t2/f_n reaches x_max at T_TIP. Co-Simulation ends there (FMI
    2.0: fmi2Discard with fmi2Terminated, FMI 3.0: terminateSimulation with an early return) with robot.simulate's
    states and forces to 1e-10; CVode stops at the tip and the FMU ends the run; a further DoStep is refused."""
    fmu, y0 = fmus["tip", version], _rest()
    names = list(states(box, y0))
    start = states(box, y0) | {"kx": K}
    res = simulate_fmu(str(fmu), stop_time=2.0, step_size=DT, output_interval=DT, output=names + FORCES,
                       start_values=start | {"fmu.max_step": DT}, early_return_allowed=True)
    ref = box.simulate(y0, 2.0, DT, contacts=["sole"], p={"kx": K}, event_tol=1e-13)
    assert [e["kind"] for e in ref.events] == ["tip"] and abs(ref.t[-1] - T_TIP) < 1e-9
    assert abs(res["time"][-1] - ref.t[-1]) < 1e-12
    rows = _rows(ref, res["time"])
    assert np.abs(columns(res, box) - np.column_stack([ref.q, ref.qd])[rows]).max() < 1e-10
    assert np.abs(_forces(res) - ref.lam[rows]).max() < 1e-10
    lam = _forces(res)[-1]
    assert abs(-lam[4] / lam[2] - SOLE[1]) < 1e-8
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=2.0, relative_tolerance=1e-10,
                       output_interval=DT, start_values=start, output=names + FORCES)
    assert abs(res["time"][-1] - T_TIP) < 1e-7
    lam = _forces(res)[-1]
    assert abs(-lam[4] / lam[2] - SOLE[1]) < 1e-7 and abs(lam[0] + K * T_TIP) < 1e-6
    inst = Instance(fmu).start(start | {"fmu.max_step": DT})
    inst.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.5)
    if inst.v3:
        assert inst.fmu.doStep(currentCommunicationPoint=0.5, communicationStepSize=0.5)[1]   # terminateSimulation
    else:
        with pytest.raises(FMICallException) as err:
            inst.fmu.doStep(currentCommunicationPoint=0.5, communicationStepSize=0.5)
        assert err.value.status == fmi2Discard and inst.fmu.getBooleanStatus(fmi2Terminated)
        assert abs(inst.fmu.getRealStatus(fmi2LastSuccessfulTime) - T_TIP) < 1e-9
    assert abs(inst.get(["time"])[0] - T_TIP) < 1e-9
    with pytest.raises(FMICallException):
        inst.fmu.doStep(currentCommunicationPoint=1.0, communicationStepSize=0.5)


def test_a_flat_foot_starting_to_slide_is_refused(box: Any, tmp_path: Path) -> None:
    """A flat foot sticks or is free: an initial phase that has it slide is a ValueError naming it."""
    with pytest.raises(ValueError, match="contact 'sole' of the model 'flatbox' is a flat foot"):
        rodgen.export_fmu(box, tmp_path / "x.fmu", contacts={"sole": "slide"}, on_slip="slide")
    assert not (tmp_path / "x.fmu").exists()
