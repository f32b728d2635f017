"""Which algorithm the generated forward dynamics uses, its operation count, and its failure statuses.

The articulated-body algorithm (ABA) is generated wherever it applies: every
joint of the expanded tree is a coordinate (vl_chain, exo5). Masses at
intermediate fractions of variable segments (two_link_masses) and coupled
coordinates (solar_panel) keep the mass matrix and a Cholesky solve.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.codegen import CodegenOptions, ForwardAlgorithm, lower
from rodgen.errors import CodegenError
from rodgen.examples import vl_chain

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: M qdd + bias = B u holds to rounding: M, bias and B are evaluated by other generated routines
#: than the ABA's qdd, in double precision, on well-conditioned states
RTOL_IDENTITY = 1e-10


def spec_of(source: Any, **options: Any) -> Any:
    model = rodgen.load(EXAMPLES / f"{source}.yaml") if isinstance(source, str) else source
    return lower(rodgen.derive(model, method="recursive"), options=CodegenOptions(**options))


@pytest.mark.parametrize("source, expected", [(vl_chain(3), "aba"), ("exo5", "aba"),
                                              ("two_link_masses", "cholesky"), ("solar_panel", "cholesky")])
def test_algorithm_choice(source: Any, expected: str) -> None:
    spec = spec_of(source)
    assert spec.forward == expected
    names = [r.name for r in spec.routines]
    assert ("articulated" in names) == (expected == "aba")
    if expected == "cholesky":
        assert spec.forward_note        # the header says why
    assert dict(spec.meta)["FORWARD"] == repr(expected)


def test_forward_option() -> None:
    assert spec_of(vl_chain(2), forward="cholesky").forward == "cholesky"
    assert spec_of(vl_chain(2), forward=ForwardAlgorithm.ABA).forward == "aba"
    with pytest.raises(CodegenError, match="the articulated-body algorithm does not apply"):
        spec_of("two_link_masses", forward="aba")
    with pytest.raises(CodegenError, match="forward must be one of"):
        CodegenOptions(forward="lu")


def test_header_names_the_algorithm() -> None:
    from rodgen.codegen import render
    files = render(spec_of(vl_chain(2)))
    assert "Forward dynamics: articulated-body algorithm." in files.files["vl_chain2.h"]
    files = render(spec_of("solar_panel"))
    assert "Forward dynamics: mass matrix and Cholesky solve." in files.files["solar_panel.h"]


def test_operation_count_grows_at_most_quadratically() -> None:
    """From n = 10 to n = 20 links (twice the coordinates) an n^2 count grows 4x; allow 4.5x."""
    ops = {n: spec_of(vl_chain(n), jacobian=False).forward_ops for n in (10, 20)}
    assert ops[20] < 4.5 * ops[10], ops
    # the Cholesky path counts its loops: for comparison it grows faster than n^2 here
    chol = {n: spec_of(vl_chain(n), jacobian=False, forward="cholesky").forward_ops for n in (10, 20)}
    assert chol[20] > 4.5 * chol[10], chol


@pytest.fixture(scope="module")
def exo5_both(build_dir: Path) -> tuple[Any, Any]:
    model = rodgen.load(EXAMPLES / "exo5.yaml")
    return (rodgen.build(model, build_dir=build_dir),
            rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(forward="cholesky")))


def test_exo5_aba_agrees_with_cholesky_and_inverse_dynamics(exo5_both: tuple[Any, Any]) -> None:
    aba, chol = exo5_both
    assert (aba.forward, chol.forward) == ("aba", "cholesky")
    seed = 812
    rng = np.random.default_rng(seed)
    q0 = aba.initial_state()[:aba.nq]
    for _ in range(5):
        q, qd, u = q0 + 0.2 * rng.normal(size=aba.nq), rng.normal(size=aba.nq), 10 * rng.normal(size=aba.nu)
        a, c = aba.forward_dynamics(q, qd, u), chol.forward_dynamics(q, qd, u)
        scale = np.abs(c).max()
        assert np.abs(a - c).max() < RTOL_IDENTITY * scale, f"seed {seed}"
        # M qdd + bias = B u, with M, bias, B from the other generated routines
        lhs = aba.inverse_dynamics(q, qd, a)
        rhs = aba.input_map(q) @ u
        assert np.abs(lhs - rhs).max() < RTOL_IDENTITY * np.abs(rhs).max(), f"seed {seed}"
        # the Jacobian of the rhs (mass matrix + Cholesky inside) is that of the ABA's rhs
        J = aba.rhs_jacobian(q, qd, u)
        np.testing.assert_allclose(J, chol.rhs_jacobian(q, qd, u), rtol=1e-12, atol=1e-12 * np.abs(J).max())


def test_zero_masses_give_the_singular_status(exo5_both: tuple[Any, Any]) -> None:
    """All masses zero: every articulated inertia D_i is 0, reported like a singular mass matrix."""
    aba, _ = exo5_both
    q = aba.initial_state()[:aba.nq]
    qdd = aba.forward_dynamics(q, np.zeros(aba.nq), p=np.zeros(aba.np), check=False)
    assert np.isnan(qdd).all()
    with pytest.raises(rodgen.DynamicsError, match="the mass matrix is not positive definite"):
        aba.forward_dynamics(q, np.zeros(aba.nq), p=np.zeros(aba.np))


def test_one_state_path_keeps_the_checked_behaviour(exo5_both: tuple[Any, Any]) -> None:
    """The one-state fast path and the checked path give the same numbers for every kind of argument."""
    aba, _ = exo5_both
    rng = np.random.default_rng(77)
    q = aba.initial_state()[:aba.nq] + 0.1 * rng.normal(size=aba.nq)
    qd = rng.normal(size=aba.nq)
    want = aba.forward_dynamics(q[None, :], qd[None, :])[0]          # batch kernel
    ro = q.copy()
    ro.setflags(write=False)
    strided = np.repeat(q, 2)[::2]
    swapped = q.astype(">f8")                     # the same values in the other byte order
    raw = np.zeros(8 * aba.nq + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)          # not aligned to 8 bytes
    unaligned[:] = q

    class Sub(np.ndarray):
        pass

    for args in [(q, qd), (list(q), list(qd)), (ro, qd), (strided, qd), (tuple(q), qd), (swapped, qd),
                 (q, qd.astype(">f8")), (unaligned, qd), (q.view(Sub), qd.view(Sub)), (q[None, :][0], qd)]:
        np.testing.assert_array_equal(aba.forward_dynamics(*args), want)
    q32 = q.astype(np.float32)                      # converted as the checked path converts it
    np.testing.assert_array_equal(aba.forward_dynamics(q32, qd), aba.forward_dynamics(q32.astype(float), qd))
    np.testing.assert_array_equal(aba.forward_dynamics(q, qd, np.zeros(aba.nu), aba.parameter_vector()), want)
    np.testing.assert_array_equal(aba.forward_dynamics(q, qd, p={}), want)
    y = np.concatenate([q, qd])
    np.testing.assert_array_equal(aba.rhs(0.0, y)[aba.nq:], want)
    np.testing.assert_array_equal(aba.rhs(np.float64(1.0), y)[aba.nq:], want)
    np.testing.assert_array_equal(aba.mass_matrix(q), aba.mass_matrix(q[None, :])[0])
    np.testing.assert_array_equal(aba.bias(q, qd), aba.bias(q[None, :], qd)[0])
    with pytest.raises(ValueError, match=r"Input 'q' has length 3; the model 'exo5' expects 9 coordinates"):
        aba.forward_dynamics(q[:3], qd)
    with pytest.raises(ValueError, match=r"Input 'p' has length 2"):
        aba.forward_dynamics(q, qd, p=np.zeros(2))
    out = np.empty(aba.nq)
    assert aba.forward_dynamics(q, qd, out=out) is out
    np.testing.assert_array_equal(out, want)
