"""The symbolic stage's result carries the articulated-body forward dynamics, or the reason it does not apply.

The recursion's accelerations are checked against M^-1 (B u - bias) of
Lagrange's equations (the independent reference, its own positions), so a
wrong recursion or wrong symbols cannot pass.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.examples import vl_chain
from rodgen.symbolic.equations import NOT_DERIVED, Equations

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: two exact evaluations in double precision of well-conditioned states
RTOL = 1e-10


def accelerations(eqs: Equations, q: np.ndarray, qd: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qdd of the articulated-body recursion, qdd = M^-1 (B u - bias)) at one state."""
    ex = eqs.expanded()
    p = [float(eqs.param_values[s]) for s in eqs.params]
    subs = dict(zip(eqs.q, q)) | dict(zip(eqs.qd, qd)) | dict(zip(eqs.u, u)) | dict(zip(eqs.params, p))
    fd = eqs.articulated
    assert fd is not None
    values: dict[sp.Symbol, sp.Expr] = {}
    for sym, e in fd.assignments:
        values[sym] = sp.Float(float(e.xreplace(values).xreplace(subs)), 17)
    aba = np.array([float(e.xreplace(values).xreplace(subs)) for e in fd.qdd])
    M = np.array(ex.M.xreplace(subs), dtype=float)
    f = np.array((ex.B * sp.Matrix(eqs.u) - ex.bias).xreplace(subs), dtype=float).ravel() if eqs.u else \
        -np.array(ex.bias.xreplace(subs), dtype=float).ravel()
    return aba, np.linalg.solve(M, f)


@pytest.mark.parametrize("model", [vl_chain(2), rodgen.load(EXAMPLES / "double_pendulum.yaml"),
                                   rodgen.load(EXAMPLES / "telescopic_arm.yaml")], ids=lambda m: m.name)
def test_recursion_solves_lagranges_equations(model: rodgen.Model) -> None:
    eqs = rodgen.derive(model, method="lagrange")
    assert eqs.articulated is not None and eqs.articulated_reason == ""
    rng = np.random.default_rng(11)
    n = len(eqs.q)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, n)
        for i, c in enumerate(eqs.coordinates):
            if c.kind == "length":
                q[i] = rng.uniform(0.4, 1.2)
        aba, ref = accelerations(eqs, q, rng.normal(size=n), rng.normal(size=len(eqs.u)))
        assert np.abs(aba - ref).max() < RTOL * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("name, reason", [("solar_panel", "couples coordinates"),
                                          ("two_link_masses", "intermediate fractions of variable segments")])
def test_reason_when_it_does_not_apply(name: str, reason: str) -> None:
    eqs = rodgen.derive(rodgen.load(EXAMPLES / f"{name}.yaml"), method="matrix")
    assert eqs.articulated is None and reason in eqs.articulated_reason
    assert eqs.expanded().articulated_reason == eqs.articulated_reason


def test_hand_made_equations_carry_none() -> None:
    eqs = rodgen.derive(vl_chain(1), method="matrix")
    plain = Equations(eqs.model, eqs.method, eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, eqs.param_values,
                      eqs.M, eqs.h, eqs.G, eqs.K, eqs.D, eqs.B, eqs.T, eqs.V, eqs.points)
    assert plain.articulated is None and plain.articulated_reason == NOT_DERIVED
    from rodgen.codegen import lower
    spec = lower(plain)
    assert spec.forward == "cholesky" and spec.forward_note == NOT_DERIVED
