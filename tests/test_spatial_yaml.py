"""Spatial models in YAML (``spatial: true``): reading, writing, round trips and errors with lines."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rodgen
from _robots import robot_file
from rodgen.errors import ModelError
from rodgen.model import load_dict, to_dict
from rodgen.model.spatial import SpatialModel

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "spatial" / "arm3.yaml"


def test_example_reads_as_a_spatial_model() -> None:
    model = rodgen.load(EXAMPLE)
    assert isinstance(model, SpatialModel)
    vm = model.validate()
    assert [c.name for c in vm.coordinates()] == ["q_yaw", "q_shoulder", "q_elbow"]
    assert [i.name for i in vm.inputs()] == ["tau_base", "tau_upper", "tau_fore"]
    assert [vm.value(x) for x in vm.gravity] == [0.0, 0.0, -9.81]
    upper = vm.link_named("upper")
    assert [vm.value(x) for x in upper.joint.axis] == [0.0, 1.0, 0.0]
    assert [vm.value(x) for x in upper.bodies[0].com] == [0.0, 0.0, 0.2]       # l_upper/2
    assert vm.value(upper.joint.damping) == 0.1
    assert [vm.value(x) for x in vm.link_named("base").joint.limits] == [-2.9, 2.9]
    assert vm.link_named("fore").at == "elbow_point"


def test_dump_and_load_give_the_same_model(tmp_path: Path) -> None:
    model = rodgen.load(EXAMPLE)
    path = tmp_path / "again.yaml"
    text = rodgen.dump(model, path)
    again = rodgen.load(path)
    assert isinstance(again, SpatialModel)
    assert to_dict(again) == to_dict(model)
    assert yaml.safe_load(text)["spatial"] is True


def test_urdf_round_trips_through_yaml(tmp_path: Path) -> None:
    model = rodgen.from_urdf(robot_file("panda_description/urdf/panda.urdf"))
    path = tmp_path / "panda.yaml"
    rodgen.dump(model, path)
    again = rodgen.load(path)
    assert to_dict(again) == to_dict(model)
    vm = again.validate()
    assert dict(vm.couplings)["panda_finger_joint2"].text == "panda_finger_joint1"
    assert vm.link_named("panda_link1").joint.limits is not None


BAD = [
    ("gravity: [0, -9.81]", "", "gravity", "expected [x, y, z], got 2 values"),
    ("", "    joint: {type: revolute, axes: [0, 0, 1]}", "link 'a'.joint.axes",
     "unknown field 'axes' (did you mean 'axis'?)"),
    ("", "    joint: {type: hinge}", "link 'a'.joint.type", "unknown joint type 'hinge'"),
    ("", "    bodies: [{mass: 1, inertia: [1, 0, 0, 1, 0, 5]}]", "link 'a'.bodies[0].inertia",
     "triangle inequality"),
]


@pytest.mark.parametrize("top, extra, where, message", BAD, ids=[b[3][:24] for b in BAD])
def test_errors_name_line_and_field(tmp_path: Path, top: str, extra: str, where: str, message: str) -> None:
    text = "\n".join(line for line in [
        "name: s", "spatial: true", top, "links:", "  - name: a",
        extra or "    joint: {type: revolute, axis: [0, 0, 1]}",
        "    bodies: [{mass: 1, inertia: [1, 0, 0, 1, 0, 1]}]" if "bodies" not in extra else "",
    ] if line)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        rodgen.load(path)
    err = info.value
    assert err.source == str(path)
    assert (err.where or "").startswith("line "), str(err)
    assert where in (err.where or ""), str(err)
    assert message in err.detail, str(err)


def test_spatial_must_be_true() -> None:
    # without spatial: true the planar reader reads the file, and says what it expects
    with pytest.raises(ModelError, match="unknown field 'bodies'"):
        load_dict({"name": "s", "links": [{"name": "a", "segments": [], "bodies": []}]})


@pytest.mark.parametrize("source", ["arm3", "panda"])
def test_dumped_model_has_the_same_mass_matrix(source: str, tmp_path: Path) -> None:
    """load(dump(m)) has m's mass matrix and bias (the chains of both derivations evaluated numerically)."""
    import numpy as np

    from rodgen.symbolic.numeric import ChainModel
    model = (rodgen.load(EXAMPLE) if source == "arm3" else
             rodgen.from_urdf(robot_file("panda_description/urdf/panda.urdf")))
    path = tmp_path / "m.yaml"
    rodgen.dump(model, path)
    a, b = ChainModel(rodgen.derive(model)), ChainModel(rodgen.derive(rodgen.load(path)))
    assert a.coordinates == b.coordinates
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, a.nq), rng.normal(size=a.nq)
        np.testing.assert_allclose(b.mass_matrix(q), a.mass_matrix(q), rtol=0, atol=1e-13)
        np.testing.assert_allclose(b.bias(q, qd), a.bias(q, qd), rtol=0, atol=1e-12)


def test_ground_plane_reads_round_trips_and_is_checked(tmp_path: Path) -> None:
    """The ground plane ``n·r = height`` of a spatial model: default z = 0, read from YAML, written back only
    when it is not the default, and a zero normal refused at its field."""
    data = yaml.safe_load(EXAMPLE.read_text())
    vm = load_dict(data).validate()
    assert [vm.value(c) for c in vm.ground.normal] == [0.0, 0.0, 1.0] and vm.value(vm.ground.height) == 0.0
    assert "ground" not in to_dict(load_dict(data))
    data["ground"] = {"normal": [0, "sin(0.1)", "cos(0.1)"], "height": -0.25}
    vm = load_dict(data).validate()
    assert [round(vm.value(c), 12) for c in vm.ground.normal] == [0.0, round(0.09983341664682815, 12),
                                                                  round(0.9950041652780258, 12)]
    assert vm.value(vm.ground.height) == -0.25
    assert load_dict(to_dict(load_dict(data))).validate().ground == vm.ground
    data["ground"] = {"normal": [0, 0, 0]}
    with pytest.raises(ModelError, match=r"ground\.normal.*zero vector|zero vector.*ground\.normal"):
        load_dict(data).validate()
    data["ground"] = {"normal": [0, 0, 1], "slope": 0.1}
    with pytest.raises(ModelError, match="unknown field 'slope'"):
        load_dict(data)
