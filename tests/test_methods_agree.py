"""The matrix method and Lagrange's equations (independent reference, own Cartesian positions) give the same
equations and the same marker points."""
from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np
import pytest
import sympy as sp

import rodgen
from _num import numeric, random_state, rel_err

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.yaml")))
#: every model file, the 3-link chain of each link model included
ALL_EXAMPLES = EXAMPLES + sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "chains",
                                                        "*.yaml")))
#: both sides evaluate different but exact expressions in double precision
RTOL_METHODS = 1e-10


def points_of(eqs: Any) -> dict[str, Any]:
    """name -> f(q, qd, p) of every marker point."""
    args = [list(eqs.q), list(eqs.qd), list(eqs.params) or [sp.Dummy()]]
    return {name: (lambda f: lambda q, qd, p: np.asarray(f(list(q), list(qd), list(p)), float).ravel())(
        sp.lambdify(args, r, "numpy")) for name, r in eqs.expanded().points.items()}


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=lambda p: os.path.basename(p))
def test_matrix_equals_lagrange_on_examples(path: str) -> None:
    model = rodgen.load(path)
    a = numeric(rodgen.derive(model, method="matrix"))
    b = numeric(rodgen.derive(rodgen.load(path), method="lagrange"))
    pa, pb = points_of(a.eqs), points_of(b.eqs)
    seed = 1234
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q, qd = random_state(a.eqs, rng)
        p = a.p0
        for name, fa, fb in (("M", a.M, b.M), ("h", a.h, b.h), ("G", a.G, b.G), ("K", a.K, b.K),
                             ("D", a.D, b.D), ("B", a.B, b.B)):
            err = rel_err(fa(q, qd, p), fb(q, qd, p))
            assert err < RTOL_METHODS, f"{name} differs by {err:.2e} (seed {seed}, q={q}, qd={qd})"
        ea, eb = a.energy(q, qd), b.energy(q, qd)
        assert rel_err(ea, eb) < RTOL_METHODS
        # the marker points: Lagrange's own Cartesian positions against the shared kinematics
        assert list(pa) == list(pb)
        for name in pa:
            err = rel_err(pa[name](q, qd, p), pb[name](q, qd, p))
            assert err < RTOL_METHODS, f"point {name} differs by {err:.2e} (seed {seed})"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: os.path.basename(p))
def test_mass_matrix_symmetric_positive_definite(path: str) -> None:
    a = numeric(rodgen.derive(rodgen.load(path), method="matrix"))
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd = random_state(a.eqs, rng)
        M = a.mass(q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-14 * np.abs(M).max())
        assert np.linalg.eigvalsh(M).min() > 0


def test_kinetic_energy_is_quadratic_form_of_mass_matrix() -> None:
    """T = qd' M qd / 2 (definition of M), checked on the exoskeleton."""
    a = numeric(rodgen.derive(rodgen.load(EXAMPLES[[os.path.basename(p) for p in EXAMPLES].index("exo5.yaml")]),
                              method="matrix"))
    rng = np.random.default_rng(3)
    q, qd = random_state(a.eqs, rng)
    T, _ = a.energy(q, qd)
    assert abs(T - 0.5 * qd @ a.mass(q) @ qd) < 1e-12 * abs(T)


# Lagrange's equations of 4- and 5-link chains take minutes: slow (-m slow); n = 1..3 already couple every
# link with its parent and grandparent, and the matrix method meets Pinocchio on longer chains
@pytest.mark.parametrize("n", [1, 2, 3, *(pytest.param(n, marks=pytest.mark.slow) for n in (4, 5))])
@pytest.mark.parametrize("link_model", ["point_masses", "joint_masses", "rod_variable", "rod_two_variable",
                                        "telescopic", "rigid"])
def test_matrix_equals_lagrange_on_chains(link_model: str, n: int) -> None:
    """Chains of n = 1..5 links of every link model; relative angles for even n, absolute for odd n."""
    from rodgen.examples import chain
    angle = "absolute" if n % 2 else "relative"
    a = numeric(rodgen.derive(chain(n, link_model, angle=angle), method="matrix"))
    b = numeric(rodgen.derive(chain(n, link_model, angle=angle), method="lagrange"))
    seed = 500 + 10 * n
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, qd = random_state(a.eqs, rng)
        p = a.p0
        for name, fa, fb in (("M", a.M, b.M), ("h", a.h, b.h), ("G", a.G, b.G), ("B", a.B, b.B)):
            err = rel_err(fa(q, qd, p), fb(q, qd, p))
            assert err < RTOL_METHODS, f"{name} differs by {err:.2e} ({link_model}, n={n}, seed {seed})"
