"""Writing a model back to the file format and loading it again gives the same equations."""
from __future__ import annotations

import glob
import os

import pytest

import rodgen
from rodgen.examples import LINK_MODELS, chain
from rodgen.model.loader import load_dict

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = sorted(glob.glob(os.path.join(HERE, "..", "examples", "*.yaml")))


def _same(a: rodgen.Model, b: rodgen.Model) -> None:
    ea, eb = rodgen.derive(a), rodgen.derive(b)
    assert [str(s) for s in ea.q] == [str(s) for s in eb.q]
    assert [str(s) for s in ea.u] == [str(s) for s in eb.u]
    assert ea.param_values == eb.param_values
    for x, y in ((ea.M, eb.M), (ea.h, eb.h), (ea.G, eb.G), (ea.K, eb.K), (ea.D, eb.D), (ea.B, eb.B)):
        assert (x - y).expand() == x * 0
    assert list(ea.points) == list(eb.points)


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_round_trip_examples(path: str, tmp_path) -> None:
    model = rodgen.load(path)
    out = tmp_path / "again.yaml"
    rodgen.dump(model, out)
    _same(rodgen.load(path), rodgen.load(out))


@pytest.mark.parametrize("link_model", LINK_MODELS)
def test_bundled_chain_files_are_the_chain_builder(link_model: str) -> None:
    """examples/chains/<model>_chain3.yaml describe the same mechanism as rodgen.examples.chain(3, model)."""
    path = os.path.join(HERE, "..", "examples", "chains", f"{link_model}_chain3.yaml")
    _same(chain(3, link_model), rodgen.load(path))


def test_round_trip_keeps_floating_base_and_names() -> None:
    m = chain(2, "rod_two_variable")
    m.base, m.base_coordinates = "floating", ("xb", "yb")
    again = load_dict(rodgen.model.to_dict(m))
    assert again.base == "floating" and again.base_coordinates == ("xb", "yb")
    _same(m, again)
