"""Planar models derived by the spatial recursions over their lowered tree (``derive(model,
method="recursive")``, rodgen.symbolic.planar_tree) against the planar recursion (``method="planar"``,
rodgen.symbolic.recursive), an independent derivation in 2D spatial algebra: M, h, G, K, D, B, the inverse
dynamics, the energies, the points and the articulated-body forward dynamics agree to 1e-10 at random states,
for every planar example model, Borisov's chains and vl_chain(n).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.examples import vl_chain
from rodgen.symbolic.planar_tree import lower_node
from rodgen.symbolic.recursive import expanded_tree

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PLANAR = sorted(p.name for p in EXAMPLES.glob("*.yaml")) + sorted(f"chains/{p.name}"
                                                                   for p in (EXAMPLES / "chains").glob("*.yaml"))


def _program(assignments: Sequence[tuple[sp.Symbol, sp.Expr]], outputs: Sequence[sp.Expr],
             inputs: Sequence[sp.Symbol]) -> Callable[[Sequence[float]], list[float]]:
    """A Python function of the input values evaluating the assignments in order, then the outputs."""
    names: dict[sp.Basic, sp.Symbol] = {s: sp.Symbol(f"x{i}") for i, s in enumerate(inputs)}
    lines = [f"    x{i} = v[{i}]" for i in range(len(inputs))]
    for j, (s, ex) in enumerate(assignments):
        names[s] = sp.Symbol(f"a{j}")
        lines.append(f"    a{j} = {sp.pycode(sp.sympify(ex).xreplace(names), fully_qualified_modules=True)}")
    outs = ", ".join(sp.pycode(sp.sympify(x).xreplace(names), fully_qualified_modules=True) for x in outputs)
    src = "def f(v):\n" + "\n".join(lines) + f"\n    return [{outs}]\n"
    scope: dict = {"math": math}
    exec(src, scope)
    return scope["f"]


def _values(eqs: rodgen.Equations, state: dict) -> dict[str, np.ndarray]:
    t = sp.Symbol("t", real=True)
    inputs = [*eqs.q, *eqs.qd, *eqs.qdd, *eqs.u, *eqs.params, t]
    parts = {"M": list(eqs.M), "h": list(eqs.h), "G": list(eqs.G), "K": list(eqs.K), "D": list(eqs.D),
             "B": list(eqs.B), "E": [eqs.T, eqs.V],
             "points": [x for nm in sorted(eqs.points) for x in eqs.points[nm]]}
    flat = [x for v in parts.values() for x in v]
    vals = _program(eqs.assignments, flat, inputs)([state[s] for s in inputs])
    out, i = {}, 0
    for key, v in parts.items():
        out[key] = np.array(vals[i:i + len(v)], float)
        i += len(v)
    if eqs.inverse is not None:
        out["inverse"] = np.array(_program([*eqs.assignments, *eqs.inverse_assignments], list(eqs.inverse), inputs)(
            [state[s] for s in inputs]), float)
    if eqs.articulated is not None:
        fd = eqs.articulated
        out["qdd"] = np.array(_program(fd.assignments, list(fd.qdd), inputs)([state[s] for s in inputs]), float)
    return out


def _compare(model: rodgen.Model, seeds: Sequence[int] = (0, 1)) -> None:
    ref = rodgen.derive(model, method="planar")
    tree = rodgen.derive(model, method="recursive")
    assert (ref.method, tree.method) == ("planar", "recursive")
    for field in ("q", "qd", "qdd", "u", "params"):
        assert list(getattr(tree, field)) == list(getattr(ref, field)), field
    assert tree.param_values == ref.param_values
    assert [c.name for c in tree.coordinates] == [c.name for c in ref.coordinates]
    assert sorted(tree.points) == sorted(ref.points)
    assert all(tree.points[nm].shape == (2, 1) for nm in tree.points)
    assert (tree.articulated is None) == (ref.articulated is None), tree.articulated_reason
    assert (tree.inverse is None) == (ref.inverse is None)
    assert len(tree.constraints) == len(ref.constraints)
    t = sp.Symbol("t", real=True)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        state: dict = {s: rng.uniform(-1.5, 1.5) for s in [*ref.q, *ref.qd, *ref.qdd, *ref.u]}
        for c, s in zip(ref.coordinates, ref.q):
            if c.kind == "length":
                state[s] = rng.uniform(0.3, 1.2)
        state.update(ref.param_values)
        state[t] = 0.3
        a, b = _values(ref, state), _values(tree, state)
        assert sorted(a) == sorted(b)
        for key in a:
            scale = max(1.0, float(np.abs(a[key]).max(initial=0.0)))
            err = float(np.abs(a[key] - b[key]).max(initial=0.0))
            assert err <= 1e-10 * scale, f"{model.name}: {key} differs by {err:.3g}"


@pytest.mark.parametrize("name", PLANAR)
def test_example_models_on_the_spatial_tree(name: str) -> None:
    model = rodgen.load(EXAMPLES / name)
    if getattr(model, "spatial", False):
        pytest.skip("a spatial model")
    _compare(model)


@pytest.mark.parametrize("n", [1, 5, 12])
def test_vl_chain_on_the_spatial_tree(n: int) -> None:
    _compare(vl_chain(n), seeds=(0,))


def test_chain_with_absolute_angles_and_masses_inside_variable_segments() -> None:
    # absolute angles make the tree coordinates differences (T not the identity); a rod at the middle of a
    # variable segment adds a virtual node (no articulated-body algorithm on either path)
    _compare(rodgen.examples.chain(3, "rod_two_variable", angle="absolute"))
    _compare(rodgen.examples.chain(3, "telescopic", angle="absolute"))


def test_the_constraints_follow_the_tree_equations() -> None:
    # exo5_walk's feet: the constrained solve on the tree path's M and bias equals the planar path's
    model = rodgen.load(EXAMPLES / "exo5_walk.yaml")
    ref, tree = (rodgen.derive(model, method=m) for m in ("planar", "recursive"))
    cs_ref, cs_tree = ref.constrained_solve(), tree.constrained_solve()
    rng = np.random.default_rng(3)
    inputs = [*ref.q, *ref.qd, *ref.u, *ref.params, *cs_ref.gains, *cs_ref.targets]
    values = [rng.uniform(-1, 1) for _ in ref.q] + [rng.uniform(-1, 1) for _ in ref.qd] + \
        [rng.uniform(-1, 1) for _ in ref.u] + [ref.param_values[s] for s in ref.params] + \
        [1.0, 0.0, 10.0, 100.0] * len(cs_ref.targets) + [0.1] * len(cs_ref.targets)
    out = []
    for eqs, cs in ((ref, cs_ref), (tree, cs_tree)):
        f = _program([*eqs.assignments, *cs.assignments], [*cs.qdd, *cs.lam], [*inputs[:len(inputs) - 5 * len(
            cs.targets)], *cs.gains, *cs.targets])
        out.append(np.array(f(values), float))
    assert np.abs(out[0]).max() > 1e-3
    np.testing.assert_allclose(out[1], out[0], rtol=1e-10, atol=1e-10)


def test_lowered_nodes_turn_about_z_and_slide_in_the_plane() -> None:
    nodes, _ = expanded_tree(vl_chain(2))
    low = [lower_node(nd) for nd in nodes]
    assert [nd.revolute for nd in low] == [nd.revolute for nd in nodes]
    for nd, sn in zip(nodes, low):
        assert sn.p0[2] == 0 and sn.parent == nd.parent
        assert sn.axis == ([0, 0, 1] if nd.revolute else [nd.axis[0], nd.axis[1], 0])
        for m, c, Ic in sn.bodies:
            assert c[2] == 0 and Ic[0][0] == Ic[1][1] == 0


def test_the_planar_method_refuses_spatial_models() -> None:
    arm = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    with pytest.raises(ValueError, match="method 'planar' derives planar models"):
        rodgen.derive(arm, method="planar")


@pytest.mark.parametrize("method", ["matrix", "lagrange"])
def test_every_planar_method_takes_the_tree_articulated_body_algorithm(method: str) -> None:
    # the forward dynamics of the matrix and Lagrange methods are the spatial ABA over the lowered tree: the
    # same accelerations as the planar recursion's ABA
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    eqs, ref = rodgen.derive(model, method=method), rodgen.derive(model, method="planar")
    t = sp.Symbol("t", real=True)
    inputs = [*ref.q, *ref.qd, *ref.u, *ref.params, t]
    values = [0.4, -1.1, 0.7, 0.3] + [0.5] * len(ref.u) + [ref.param_values[s] for s in ref.params] + [0.0]
    got = [_program(e.articulated.assignments, list(e.articulated.qdd), inputs)(values) for e in (eqs, ref)]
    # the spatial recursion's names (6 x 6 articulated inertias, 3-vectors: Ia44, Ivf0; the planar one's: Ia22, Ivx)
    assert {"r_1_Ia44", "r_1_Ivf0"} <= {str(s) for s, _ in eqs.articulated.assignments}
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["vl_chain(5)", "exo5_walk.yaml"])
def test_the_tree_path_code_is_as_lean_as_the_planar_recursion(name: str) -> None:
    # the zeros of the plane must fold away: the generated forward dynamics (the ABA) and the constrained
    # solve count within 2 % of the operations of the planar recursion's code (today 0.3-0.5 % more)
    from rodgen.codegen import CodegenOptions, lower
    model = vl_chain(5) if name == "vl_chain(5)" else rodgen.load(EXAMPLES / name)
    specs = {m: lower(rodgen.derive(model, method=m), options=CodegenOptions(jacobian=False))
             for m in ("planar", "recursive")}
    assert specs["recursive"].forward == specs["planar"].forward == "aba"
    assert specs["recursive"].forward_ops <= 1.02 * specs["planar"].forward_ops
    for routine in ("mass_matrix", "bias", "inverse_dynamics", "energy"):
        assert specs["recursive"].routine(routine).ops <= 1.02 * specs["planar"].routine(routine).ops, routine
    if name == "exo5_walk.yaml":
        solve = [specs[m].routine("constrained_solve").ops for m in ("planar", "recursive")]
        assert solve[1] <= 1.02 * solve[0]
