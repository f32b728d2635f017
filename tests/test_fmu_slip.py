"""A point contact's slip in an FMU's Model Exchange: a point mass on three prismatic joints standing on a 3-row
contact, pushed along x by k t, slips when the push reaches the static limit, t* = mu m g / k. CVode stops on the
root, where the slip margin is 0 (at or within the solver's tolerance of it): the event update takes the slip
there, as robot.simulate does (on_slip "stop": the run ends at t*; "slide": it slides on, the FMU's state
following robot.simulate's run)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.model.spatial import SpatialModel

fmpy = pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

MU, MASS, G, K = 0.5, 2.0, 9.81, 4.0
T_SLIP = MU * MASS * G / K


@pytest.fixture(scope="module")
def pushed(build_dir: Path) -> Any:
    m = SpatialModel("pushed_slider_fmu")
    m.parameter("k", 0.0)
    m.link("x", joint="prismatic", axis=(1, 0, 0))
    m.link("y", "x", joint="prismatic", axis=(0, 1, 0))
    m.link("z", "y", joint="prismatic", axis=(0, 0, 1)).body(MASS)
    m.point_force("push", "z", ("k*t", 0, 0))
    m.contact("foot", "z", friction=MU)
    return rodgen.build(m, build_dir=build_dir)


def _names(robot: Any) -> list[str]:
    return [f"q.{c}" for c in robot.coordinates] + [f"qd.{c}" for c in robot.coordinates]


@pytest.mark.parametrize("on_slip", ["stop", "slide"])
def test_model_exchange_takes_the_slip_at_margin_zero(pushed: Any, tmp_path: Path, on_slip: str) -> None:
    """The slip's time is mu m g / k within the solver's tolerance; with "stop" the run ends there, with "slide"
    the mass then moves as robot.simulate's run (x'' = (k t - mu m g) / m: x = k (t - t*)^3 / (6 m))."""
    contacts: Any = ["foot"] if on_slip == "stop" else {"foot": "stick"}
    fmu = rodgen.export_fmu(pushed, tmp_path / f"slip_{on_slip}.fmu", kind="me", fmi_version="3.0",
                            contacts=contacts, on_slip=on_slip, event_tol=1e-13)
    t_end = 2.0 * T_SLIP
    res = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=t_end, relative_tolerance=1e-10,
                       output_interval=1e-3, start_values={"k": K}, output=_names(pushed) + ["force.foot.t1"],
                       early_return_allowed=True)
    ref = pushed.simulate(np.zeros(6), t_end, 1e-3, contacts=["foot"], p={"k": K}, on_slip=on_slip,
                          event_tol=1e-13)
    assert ref.events[0]["kind"] == "slip" and abs(ref.events[0]["t"] - T_SLIP) < 1e-9
    t = res["time"]
    x = res[_names(pushed)[0]]
    if on_slip == "stop":
        assert abs(t[-1] - T_SLIP) < 1e-7 and np.abs(x).max() < 1e-9
        return
    jumps = t[np.flatnonzero(np.diff(t) == 0)]
    assert len(jumps) and abs(jumps[0] - T_SLIP) < 1e-7
    assert abs(t[-1] - t_end) < 1e-12
    closed = K * np.clip(t - T_SLIP, 0, None) ** 3 / (6 * MASS)
    assert np.abs(x - closed).max() < 1e-6
    assert abs(x[-1] - ref.q[-1, 0]) < 1e-6 and abs(res[_names(pushed)[3]][-1] - ref.qd[-1, 0]) < 1e-6
