"""The generated Jacobian of the right-hand side against central finite differences, on every example.

dy = [qd, qdd(q, qd, u)]; the C computes d qdd/dx = -M^-1 d(M a + bias - B u)/dx at a = qdd from
generated derivatives. The reference here is independent: central differences of the compiled rhs.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import CodegenOptions
from rodgen.errors import RodgenError
from rodgen.toolchain import load_module

EXAMPLE_FILES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))
#: Step of the central differences, relative to the size of each state entry: truncation
#: error ~ h^2 |f'''| ~ 1e-12, round-off ~ eps |f| / h ~ 1e-10; both far below the tolerance.
H_FD = 1e-6
#: Relative agreement of the generated Jacobian and the differences (scaled by the largest entry of J).
RTOL_FD = 1e-6


def central_differences(sys_: Any, y: np.ndarray, u: np.ndarray) -> np.ndarray:
    J = np.empty((y.size, y.size))
    for k in range(y.size):
        h = H_FD * max(1.0, abs(y[k]))
        e = np.zeros_like(y)
        e[k] = h
        J[:, k] = (sys_.rhs(0.0, y + e, u) - sys_.rhs(0.0, y - e, u)) / (2 * h)
    return J


def random_state(sys_: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Around the model's initial posture (lengths stay positive), with random rates and inputs."""
    y = sys_.initial_state()
    y[: sys_.nq] += 0.2 * rng.standard_normal(sys_.nq)
    y[sys_.nq:] = rng.standard_normal(sys_.nq)
    return y, rng.standard_normal(sys_.nu)


@pytest.mark.parametrize("method", ["matrix", "recursive"])
@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_jacobian_matches_central_differences(build_dir: Any, name: str, method: str) -> None:
    sys_ = rodgen.build(rodgen.load(EXAMPLES / f"{name}.yaml"), build_dir=build_dir, method=method)
    assert sys_.has_jacobian
    seed = 20240 + len(name)
    rng = np.random.default_rng(seed)
    for trial in range(3):
        y, u = random_state(sys_, rng)
        J = sys_.rhs_jacobian(y[: sys_.nq], y[sys_.nq:], u)
        J_fd = central_differences(sys_, y, u)
        scale = np.abs(J).max()
        np.testing.assert_allclose(J, J_fd, rtol=0, atol=RTOL_FD * scale,
                                   err_msg=f"{name} ({method}), seed {seed}, trial {trial}")
        # the upper half is d qd / d[q, qd] = [0 I] exactly
        n = sys_.nq
        np.testing.assert_array_equal(J[:n], np.hstack([np.zeros((n, n)), np.eye(n)]))


@pytest.mark.parametrize("name", ["exo5", "suspended_chain"])
def test_a_portable_build_jacobian_matches_central_differences(build_dir: Any, name: str) -> None:
    """Without AVX (a portable build) the factor is right-looking over runs of ancestors and the block solve goes
    row by row, other C than the native build's vector kernels; suspended_chain takes qdd from the factor,
    exo5 from the articulated-body algorithm."""
    from rodgen.toolchain import BuildOptions
    sys_ = rodgen.build(rodgen.load(EXAMPLES / f"{name}.yaml"), build_dir=build_dir, method="recursive",
                        options=BuildOptions(arch=None), defer_jacobian=False)
    rng = np.random.default_rng(31)
    for _ in range(2):
        y, u = random_state(sys_, rng)
        J = sys_.rhs_jacobian(y[: sys_.nq], y[sys_.nq:], u)
        np.testing.assert_allclose(J, central_differences(sys_, y, u), rtol=0, atol=RTOL_FD * np.abs(J).max())


def test_batch_and_ode_jac_agree_with_single_calls(build_dir: Any) -> None:
    sys_ = rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir, method="recursive")
    rng = np.random.default_rng(7)
    ys = np.array([random_state(sys_, rng)[0] for _ in range(5)])
    u = rng.standard_normal(sys_.nu)
    n = sys_.nq
    batch = sys_.rhs_jacobian(ys[:, :n], ys[:, n:], u)
    assert batch.shape == (5, 2 * n, 2 * n)
    f = sys_.ode(u=u)
    for k in range(5):
        np.testing.assert_array_equal(batch[k], sys_.rhs_jacobian(ys[k, :n], ys[k, n:], u))
        np.testing.assert_array_equal(batch[k], f.jac(0.0, ys[k]))


def test_radau_with_the_generated_jacobian_agrees_with_dop853(build_dir: Any) -> None:
    """Implicit integration with jac=f.jac gives the explicit solution (and uses the Jacobian)."""
    sys_ = rodgen.build(rodgen.load(EXAMPLES / "telescopic_arm.yaml"), build_dir=build_dir)
    y0 = sys_.initial_state()
    u = np.full(sys_.nu, 0.1)
    f = sys_.ode(u=u)
    t_eval = np.linspace(0.0, 1.0, 11)
    radau = solve_ivp(f, (0.0, 1.0), y0, method="Radau", jac=f.jac, rtol=1e-10, atol=1e-12, t_eval=t_eval)
    ref = solve_ivp(f, (0.0, 1.0), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t_eval)
    assert radau.success and radau.njev > 0
    np.testing.assert_allclose(radau.y, ref.y, rtol=0, atol=1e-7)


def test_jacobian_can_be_switched_off(build_dir: Any) -> None:
    model = rodgen.load(EXAMPLES / "pendulum_vl.yaml")
    sys_ = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(jacobian=False))
    assert not sys_.has_jacobian
    assert "rhs_jacobian" not in sys_.header.read_text()
    with pytest.raises(RodgenError, match="built without the Jacobian of its right-hand side"):
        sys_.rhs_jacobian([0.1, 1.0], [0.0, 0.0])
    # automatic: every size (the tangent's code grows like the inverse dynamics); never in float
    assert CodegenOptions().wants_jacobian(12) and CodegenOptions().wants_jacobian(200)
    assert not CodegenOptions(jacobian=False).wants_jacobian(2) and not CodegenOptions(real="float").wants_jacobian(2)


def test_build_defers_the_jacobian_to_its_first_use(build_dir: Any) -> None:
    """rodgen.build compiles a small model without its Jacobian and builds it on the first call; the deferred
    Jacobian is the one compiled with the model (CodegenOptions(jacobian=True)) and agrees with differences."""
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    eager = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(jacobian=True))
    lazy = rodgen.build(model, build_dir=build_dir)
    assert lazy.has_jacobian and not lazy.jacobian_built and eager.jacobian_built
    assert "rhs_jacobian" not in lazy.header.read_text() and lazy.path != eager.path
    y, u = random_state(lazy, np.random.default_rng(7))
    n = lazy.nq
    f = lazy.ode(u=u)
    J = f.jac(0.0, y)                      # the first use builds it (here: found in the build cache)
    assert lazy.jacobian_built
    np.testing.assert_array_equal(J, eager.rhs_jacobian(y[:n], y[n:], u))
    np.testing.assert_allclose(J, central_differences(lazy, y, u), rtol=0, atol=RTOL_FD * np.abs(J).max())
    np.testing.assert_array_equal(lazy.rhs_jacobian(y[:n], y[n:], u), J)
    # a build found in the cache (by the key known before derivation) defers it the same way
    again = rodgen.build(model, build_dir=build_dir)
    assert again.path == lazy.path and again.has_jacobian and not again.jacobian_built
    np.testing.assert_array_equal(again.rhs_jacobian(y[:n], y[n:], u), J)
    # a library loaded by its path has no deferred build: it says how to get the Jacobian
    alone = load_module(lazy.path)
    assert not alone.has_jacobian
    with pytest.raises(RodgenError, match="built without the Jacobian of its right-hand side"):
        alone.rhs_jacobian(y[:n], y[n:], u)


def test_one_state_path_takes_lists_and_reports_failed_states(build_dir: Any) -> None:
    """One state per call goes through the table's one-state path: lists give the central differences too,
    a non-finite state still raises DynamicsError (NaN with check=False) as the batch path does."""
    sys_ = rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir, method="recursive")
    rng = np.random.default_rng(11)
    y, u = random_state(sys_, rng)
    n = sys_.nq
    J = sys_.rhs_jacobian(list(y[:n]), tuple(y[n:]), list(u))
    J_fd = central_differences(sys_, y, u)
    np.testing.assert_allclose(J, J_fd, rtol=0, atol=RTOL_FD * np.abs(J).max())
    bad = y[:n].copy()
    bad[1] = np.nan
    with pytest.raises(rodgen.DynamicsError, match="rhs_jacobian"):
        sys_.rhs_jacobian(bad, y[n:], u)
    assert np.isnan(sys_.rhs_jacobian(bad, y[n:], u, check=False)).all()


@pytest.mark.parametrize("straight", [True, False])
def test_rhs_jacobian_of_a_singular_mass_has_the_status(straight: bool, build_dir: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The factor's pivot check, as straight-line code over the tree's pairs (small trees) and as the loops over
    its tables: zero masses make M zero, rhs_jacobian's status is RODGEN_ERR_NOT_POSITIVE_DEFINITE; with the masses
    the same Jacobian from both forms, against central differences."""
    from rodgen.codegen import spec as spec_module
    from rodgen.codegen.lower import lower
    from rodgen.contract import StatusCode
    from rodgen.runtime.compiled import DynamicsError
    if not straight:
        monkeypatch.setattr(spec_module, "LTDL_STRAIGHT_MAX", 0)
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"))
    options = CodegenOptions(jacobian=True)
    spec = lower(eqs, options=options)
    assert (spec.ltdl_steps() is not None) == straight and spec.qdd_from_factor()
    robot = rodgen.build(eqs, build_dir=build_dir, codegen=options, defer_jacobian=False)
    with pytest.raises(DynamicsError) as err:
        robot.rhs_jacobian([0.1, 0.2], [0.3, -0.1], [0.0, 0.0], robot.parameter_vector(m1=0.0, m2=0.0))
    assert err.value.status == StatusCode.ERR_NOT_POSITIVE_DEFINITE
    y, u = np.array([0.1, 0.2, 0.3, -0.1]), np.array([0.5, -0.2])
    J = robot.rhs_jacobian(y[:2], y[2:], u)
    ref = central_differences(robot, y, u)
    assert np.abs(J - ref).max() <= 1e-6 * max(1.0, np.abs(ref).max())
