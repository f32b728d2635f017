"""CodegenOptions(routines=...): a build that leaves out the routines its caller never calls (the collocation of
rodgen.optimize calls rhs, rhs_jacobian, mass_matrix and input_map). What it keeps is checked against central
differences of its own right-hand side and against the full build's numbers at random states; what it leaves out
is not generated, raises an error naming it, and is part of the build's cache key."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen import contract, optimize
from rodgen.codegen import CodegenOptions
from rodgen.codegen.lower import lower
from rodgen.errors import CodegenError
from rodgen.toolchain import BuildOptions, key

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = ROOT / "examples" / "double_pendulum.yaml"
ONLY = CodegenOptions(jacobian=True, routines=optimize.ROUTINES)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    folder = tmp_path_factory.mktemp("routines")
    model = rodgen.load(DOUBLE)
    return (rodgen.build(model, build_dir=folder, codegen=ONLY),
            rodgen.build(model, build_dir=folder, codegen=CodegenOptions(jacobian=True)))


def test_the_routines_kept_compute_the_dynamics(builds: tuple) -> None:
    only, full = builds
    assert only.routines == {"mass_matrix", "input_map", "forward_dynamics", "rhs", "rhs_jacobian"}
    # no force elements, no constraint blocks here
    assert set(contract.ELECTIVE_ROUTINES) - {"element_forces", "constrained_response"} <= full.routines
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, u = rng.uniform(-1, 1, only.nq), rng.uniform(-2, 2, only.nq), rng.uniform(-3, 3, only.nu)
        y = np.r_[q, qd]
        J = only.rhs_jacobian(q, qd, u)
        h = 1e-6
        fd = np.column_stack([(only.rhs(0.0, y + h * e, u) - only.rhs(0.0, y - h * e, u)) / (2 * h)
                              for e in np.eye(len(y))])
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(only.forward_dynamics(q, qd, u), full.forward_dynamics(q, qd, u), rtol=1e-13,
                                   atol=1e-12)
        np.testing.assert_allclose(only.mass_matrix(q), full.mass_matrix(q), rtol=1e-14, atol=1e-14)
        # M qdd + bias = B u at the kept forward dynamics, with the full build's bias
        qdd = only.forward_dynamics(q, qd, u)
        np.testing.assert_allclose(only.mass_matrix(q) @ qdd + full.bias(q, qd), only.input_map(q) @ u,
                                   rtol=1e-10, atol=1e-10)


def test_a_routine_left_out_is_named_when_called(builds: tuple) -> None:
    only, _ = builds
    q, qd = np.full(only.nq, 0.3), np.full(only.nq, -0.2)
    for call, name in ((lambda: only.bias(q, qd), "bias"), (lambda: only.energy(q, qd), "energy"),
                       (lambda: only.points(q), "points"), (lambda: only.inverse_dynamics(q, qd, qd),
                                                           "inverse_dynamics")):
        with pytest.raises(NotImplementedError, match=rf"'double_pendulum' has no {name}: .*routines=\.\.\."):
            call()
    # a simulation still runs; its energy is unknown
    res = only.simulate(np.r_[q, qd], 0.01, 1e-3)
    assert res.ok and len(res.t) > 1 and np.isnan(res.kinetic).all()
    mixed = rodgen.MixedProblem(only, {only.coordinates[1]: lambda t: 0.1 * t})
    with pytest.raises(NotImplementedError, match="needs the bias of the model 'double_pendulum'"):
        mixed.simulate(np.r_[q[:1], qd[:1]], 0.01, dt=1e-3)


def test_the_selection_is_in_the_cache_key() -> None:
    vm = rodgen.load(DOUBLE).validate()
    opts = BuildOptions()
    base = key.model_key(vm, "recursive", CodegenOptions(jacobian=True), opts)
    only = key.model_key(vm, "recursive", ONLY, opts)
    assert only != base
    shuffled = CodegenOptions(jacobian=True, routines=tuple(reversed(optimize.ROUTINES)) + ("rhs",))
    assert key.model_key(vm, "recursive", shuffled, opts) == only
    with_energy = CodegenOptions(jacobian=True, routines=(*optimize.ROUTINES, "energy"))
    assert key.model_key(vm, "recursive", with_energy, opts) not in (base, only)


def test_bad_selections_are_named() -> None:
    with pytest.raises(CodegenError, match=r"unknown routine\(s\) 'energie'"):
        CodegenOptions(routines=("rhs", "energie"))
    with pytest.raises(CodegenError, match="a collection of routine names, got the string 'rhs'"):
        CodegenOptions(routines="rhs")


def test_a_constrained_model_keeps_its_bias() -> None:
    """The constrained dynamics of the runtime calls bias: a model with constraint blocks keeps it."""
    eqs = rodgen.derive(rodgen.load(ROOT / "examples" / "compass_gait.yaml"), method="recursive")
    names = {r.name for r in lower(eqs, options=CodegenOptions(jacobian=False, routines=("rhs",))).routines}
    assert "bias" in names and not names & {"energy", "points", "inverse_dynamics", "gravity"}
