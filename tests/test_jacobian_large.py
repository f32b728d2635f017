"""The RHS Jacobian of large elastic models (24 and 48 coordinates) against two independent references.

The compiled Jacobian differentiates the recursive Newton-Euler algorithm over the lowered tree
(``Equations.inverse_dynamics_derivatives``) or, with the planar recursion (``method="planar"``), runs the
generated tangent of the inverse dynamics once per column (``Equations.inverse_dynamics_tangent``). References:

* central finite differences of the compiled right-hand side (forward dynamics by the
  articulated-body algorithm, a different routine from the inverse dynamics differentiated);
* the full symbolic Jacobian d(M a + bias - B u)/d[q, qd] of ``Equations.inverse_dynamics_jacobian``
  (every variable carried at once through the chain, a separate derivation), evaluated in NumPy
  and solved with the compiled mass matrix.

The models: a hub turned by a torque carrying a B_n elastic beam (hinge springs and dampers,
gravity), with force elements at the beam's points: viscous and regularised Coulomb friction,
a Hunt-Crossley ground contact at the tip (in contact, away from the switch of its law) and a
point force given by two inputs.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from test_jacobian import central_differences

import rodgen
from rodgen.codegen import CodegenOptions
from rodgen.symbolic import derive
from rodgen.symbolic.numeric import ChainModel

#: Agreement with the differences, relative to the largest entry of J (step 1e-6: truncation
#: ~1e-12, round-off ~1e-10 relative; the stiff contact raises both, so a looser bound than 1e-6).
RTOL_FD = 1e-5
#: Agreement of two exact derivatives (round-off only).
RTOL_EXACT = 1e-9


def beam_model(n: int, *, forces: bool) -> rodgen.Model:
    m = rodgen.Model(f"beam_jac{n}{'f' if forces else ''}", gravity=(0.0, -9.81))
    hub = m.link("hub", initial=-math.pi / 2)
    hub.rigid("hubs", 0.1, rod=rodgen.Rod(mass=1.0))
    m.elastic("beam", parent="hub", length=1.0, EJ=2.0, mass=0.5, rule="B", n=n - 1, damping=0.01)
    if forces:
        m.ground = rodgen.Ground(slope=0.0, height=-1.05)     # the hanging tip is 0.05 m into the ground
        mid = f"beam_rod{n // 2}"
        m.viscous_friction("drag", mid, along=0.3, across=2.0)
        m.coulomb_friction("rub", f"beam_rod{n // 3}", along=0.2, across=0.5, normal=3.0, velocity_scale=0.05)
        m.ground_contact("foot", "beam_tip", stiffness=2.0e3, exponent=1.5, damping=3.0, friction=0.6,
                         velocity_scale=0.05)
        m.point_force("push", f"beam_rod{n - 2}", inputs=True)
    return m


def near_rest(sys_: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Small hinge angles about the hanging posture (the tip stays in the ground), random rates and inputs."""
    n = sys_.nq
    y = sys_.initial_state()
    y[:n] += 0.01 * rng.standard_normal(n)
    y[n:] = 0.3 * rng.standard_normal(n)
    return y, rng.standard_normal(sys_.nu)


def symbolic_reference(eqs: Any, sys_: Any, q: np.ndarray, qd: np.ndarray, u: np.ndarray) -> np.ndarray:
    """d qdd/d[q, qd] = -M^-1 dg/d[q, qd] from the full symbolic derivative (every variable at once)."""
    assignments, rows = eqs.inverse_dynamics_jacobian()
    n = len(eqs.q)
    f = ChainModel._lam((eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params), [x for r in rows for x in r], assignments)
    p = np.array([eqs.param_values[s] for s in eqs.params])
    qdd = sys_.forward_dynamics(q, qd, u)
    G = np.array(f(q, qd, qdd, u, p), dtype=float).reshape(n, 2 * n)
    return np.vstack([np.hstack([np.zeros((n, n)), np.eye(n)]), -np.linalg.solve(sys_.mass_matrix(q), G)])


def test_tangent_jacobian_of_24_coordinates_with_force_elements(build_dir: Any) -> None:
    sys_ = rodgen.build(beam_model(24, forces=True), build_dir=build_dir, codegen=CodegenOptions(jacobian=True))
    assert sys_.nq == 24 and sys_.nu == 3 and sys_.jacobian_built
    rng = np.random.default_rng(24)
    for trial in range(2):
        y, u = near_rest(sys_, rng)
        q, qd = y[:24], y[24:]
        assert sys_.points(q)["beam_tip"][1] < -1.0   # in contact: the law's smooth branch
        J = sys_.rhs_jacobian(q, qd, u)
        np.testing.assert_allclose(J, central_differences(sys_, y, u), rtol=0, atol=RTOL_FD * np.abs(J).max(),
                                   err_msg=f"trial {trial}")


# the full derivative of 24 coordinates (the reference) takes most of a minute of SymPy: slow
@pytest.mark.parametrize("n,forces,method", [(5, True, "planar"), (5, True, "recursive"),
                                             pytest.param(24, False, "planar", marks=pytest.mark.slow)])
def test_tangent_jacobian_equals_the_full_symbolic_derivative(build_dir: Any, n: int, forces: bool,
                                                              method: str) -> None:
    """Two exact derivatives agree to round-off (the full one with force elements only where affordable:
    it carries every variable through the expanded force laws): the tangent (``method="planar"``) and the
    Newton-Euler derivative (``method="recursive"``)."""
    eqs = derive(beam_model(n, forces=forces), method=method)
    assert (eqs.inverse_dynamics_derivatives() is None) == (method == "planar")
    sys_ = rodgen.build(eqs, build_dir=build_dir, codegen=CodegenOptions(jacobian=True))
    rng = np.random.default_rng(n)
    y, u = near_rest(sys_, rng)
    q, qd = y[:n], y[n:]
    J = sys_.rhs_jacobian(q, qd, u)
    np.testing.assert_allclose(J, symbolic_reference(eqs, sys_, q, qd, u), rtol=0, atol=RTOL_EXACT * np.abs(J).max())


def test_tangent_jacobian_of_48_coordinates_is_deferred_and_exact(build_dir: Any) -> None:
    """The default build defers the Jacobian of 48 coordinates (no limit on the size any more) and the
    first use builds it."""
    sys_ = rodgen.build(beam_model(48, forces=False), build_dir=build_dir)
    assert sys_.nq == 48 and sys_.has_jacobian and not sys_.jacobian_built
    rng = np.random.default_rng(48)
    y, u = near_rest(sys_, rng)
    J = sys_.rhs_jacobian(y[:48], y[48:], u)
    assert sys_.jacobian_built
    np.testing.assert_allclose(J, central_differences(sys_, y, u), rtol=0, atol=1e-6 * np.abs(J).max())
    A, _ = sys_.linearize(y[:48], y[48:], u)      # linearize's A is this Jacobian
    np.testing.assert_array_equal(A, J)


def test_jacobian_code_grows_like_the_inverse_dynamics() -> None:
    """The tangent's routines grow linearly with the coordinates of a chain (the tangent is as long as
    the inverse dynamics), not like nq times it: operations at 24 against 12 coordinates."""
    from rodgen.codegen.lower import lower
    ops = {}
    for n in (12, 24):
        spec = lower(derive(beam_model(n, forces=False), method="planar"), options=CodegenOptions(jacobian=True))
        ops[n] = (sum(spec.routine(r).ops for r in ("inverse_dynamics_partials", "inverse_dynamics_tangent")),
                  spec.routine("inverse_dynamics").ops)
    growth = ops[24][0] / ops[12][0]
    assert growth < 2.4, ops      # linear: 2 (plus the fixed part); nq times the inverse dynamics: 4
    assert ops[24][0] < 4 * ops[24][1], ops


@pytest.mark.parametrize("n", [24])
def test_linearize_and_modes_of_a_large_beam(build_dir: Any, n: int) -> None:
    """modes from the compiled Jacobian equal modes from the symbolic chain (no compiling) at rest."""
    model = beam_model(n, forces=False)
    sys_ = rodgen.build(model, build_dir=build_dir)
    q0 = sys_.initial_state()[:n]
    a, b = sys_.modes(q0), rodgen.modes(model, q0)
    assert a.omega[1:6] == pytest.approx(b.omega[1:6], rel=1e-9)
