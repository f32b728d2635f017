"""Equations of motion against closed forms written out by hand."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import rodgen
from _num import numeric, rel_err
from rodgen.model.loader import load_dict

METHODS = ["matrix", "lagrange"]


def _zero(expr: sp.Expr) -> bool:
    return sp.simplify(sp.expand_trig(sp.expand(expr))) == 0


@pytest.mark.parametrize("method", METHODS)
def test_variable_length_pendulum(method: str) -> None:
    """m l^2 phi'' + 2 m l l' phi' + m g l cos(phi) = tau ;  m l'' - m l phi'^2 + m g sin(phi) = F."""
    e = rodgen.derive(rodgen.load("examples/pendulum_vl.yaml"), method=method)
    phi, l = e.q
    dphi, dl = e.qd
    m, g = sp.Symbol("m", real=True), sp.Symbol("g", real=True)
    expected_M = sp.Matrix([[m * l**2, 0], [0, m]])
    expected_h = sp.Matrix([2 * m * l * dl * dphi, -m * l * dphi**2])
    expected_G = sp.Matrix([m * g * l * sp.cos(phi), m * g * sp.sin(phi)])
    for got, exp in ((e.M, expected_M), (e.h, expected_h), (e.G, expected_G), (e.B, sp.eye(2))):
        for a, b in zip(got, exp):
            assert _zero(a - b), (a, b)


@pytest.mark.parametrize("method", METHODS)
def test_rigid_double_pendulum(method: str) -> None:
    """Textbook double pendulum of two uniform rods, relative angles, gravity along -y."""
    e = rodgen.derive(rodgen.load("examples/double_pendulum.yaml"), method=method)
    t1, t2 = e.q
    d1, d2 = e.qd
    m1, m2, L1, L2, g = sp.symbols("m1 m2 L1 L2 g", real=True)
    c1, c2 = L1 / 2, L2 / 2
    I1, I2 = m1 * L1**2 / 12, m2 * L2**2 / 12
    M11 = I1 + I2 + m1 * c1**2 + m2 * (L1**2 + c2**2 + 2 * L1 * c2 * sp.cos(t2))
    M12 = I2 + m2 * (c2**2 + L1 * c2 * sp.cos(t2))
    M22 = I2 + m2 * c2**2
    h1 = -m2 * L1 * c2 * sp.sin(t2) * (2 * d1 * d2 + d2**2)
    h2 = m2 * L1 * c2 * sp.sin(t2) * d1**2
    G1 = m1 * g * c1 * sp.cos(t1) + m2 * g * (L1 * sp.cos(t1) + c2 * sp.cos(t1 + t2))
    G2 = m2 * g * c2 * sp.cos(t1 + t2)
    for a, b in zip(list(e.M) + list(e.h) + list(e.G), [M11, M12, M12, M22, h1, h2, G1, G2]):
        assert _zero(a - b), (a, b)


def _model3_chain(n: int) -> dict:
    """n links of Borisov's model 3 (massless variable part l_i, then a rigid rod b_i), absolute angles."""
    params = {}
    links = []
    for i in range(1, n + 1):
        params.update({f"m{i}": 1.0 + 0.3 * i, f"b{i}": 0.2 + 0.05 * i, f"I{i}": 0.01 * i})
        links.append({
            "name": f"L{i}", "parent": None if i == 1 else f"L{i-1}", "coordinate": f"phi{i}",
            "segments": [
                {"name": f"v{i}", "type": "variable", "coordinate": f"l{i}", "length": 0.3},
                {"name": f"r{i}", "length": f"b{i}", "rod": {"mass": f"m{i}", "inertia": f"I{i}"}},
            ]})
    return {"name": f"model3_{n}", "parameters": params, "links": links}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("method", METHODS)
def test_thesis_closed_form_model3(n: int, method: str) -> None:
    """Angle block of M against Borisov (3.218):
    A_ii = I_i + m_i lam_i1^2 + (sum_{k>i} m_k) lam_i^2,
    A_ij = lam_i (m_j lam_j1 + (sum_{k>j} m_k) lam_j) cos(phi_i - phi_j),  lam_i1 = l_i + b_i/2, lam_i = l_i + b_i."""
    data = _model3_chain(n)
    e = rodgen.derive(load_dict(data), method=method)
    num = numeric(e)
    rng = np.random.default_rng(100 + n)
    m = np.array([1.0 + 0.3 * i for i in range(1, n + 1)])
    b = np.array([0.2 + 0.05 * i for i in range(1, n + 1)])
    inertia = np.array([0.01 * i for i in range(1, n + 1)])
    angle_rows = [i for i, c in enumerate(e.coordinates) if c.kind == "angle"]
    length_rows = [i for i, c in enumerate(e.coordinates) if c.kind == "length"]
    for _ in range(4):
        q = np.zeros(2 * n)
        phi = rng.uniform(-np.pi, np.pi, n)
        lens = rng.uniform(0.1, 0.8, n)
        q[angle_rows], q[length_rows] = phi, lens
        lam1, lam = lens + b / 2, lens + b
        A = np.zeros((n, n))
        for i in range(n):
            A[i, i] = inertia[i] + m[i] * lam1[i] ** 2 + m[i + 1:].sum() * lam[i] ** 2
            for j in range(i + 1, n):
                A[i, j] = A[j, i] = lam[i] * (m[j] * lam1[j] + m[j + 1:].sum() * lam[j]) * np.cos(phi[i] - phi[j])
        M = num.mass(q)
        err = rel_err(M[np.ix_(angle_rows, angle_rows)], A)
        assert err < 1e-12, f"n={n}: angle block differs from (3.218) by {err:.2e}"


@pytest.mark.parametrize("method", METHODS)
def test_two_link_point_masses_free_base(method: str) -> None:
    """Borisov section 3.8.1, equations (3.228)-(3.233), with signed first moments:
    eta_1 = sum m_1b (1 - a_1b), zeta_1 = sum m_1b (1 - a_1b)^2, eta_2 = -sum m_2b a_2b, zeta_2 = sum m_2b a_2b^2."""
    import yaml
    with open("examples/two_link_masses.yaml") as fh:
        data = yaml.safe_load(fh)
    data["base"] = "floating"
    e = rodgen.derive(load_dict(data), method=method)
    assert [str(s) for s in e.q] == ["x", "y", "phi_1", "l_1", "phi_2", "l_2"]
    P = {str(s): v for s, v in e.param_values.items()}
    m1, a1 = np.array([P["m10"], P["m11"], P["m12"]]), np.array([P["a10"], P["a11"], P["a12"]])
    m2, a2 = np.array([P["m20"], P["m21"], P["m22"]]), np.array([P["a20"], P["a21"], P["a22"]])
    theta = m1.sum() + m2.sum()
    eta = [np.sum(m1 * (1 - a1)), -np.sum(m2 * a2)]
    zeta = [np.sum(m1 * (1 - a1) ** 2), np.sum(m2 * a2 ** 2)]
    num = numeric(e)
    rng = np.random.default_rng(38)
    for _ in range(4):
        x, y, p1, l1, p2, l2 = rng.uniform(0.2, 1.4, 6)
        dx, dy, dp1, dl1, dp2, dl2 = rng.normal(size=6)
        q, qd = np.array([x, y, p1, l1, p2, l2]), np.array([dx, dy, dp1, dl1, dp2, dl2])
        qdd = rng.normal(size=6)
        ddx, ddy, ddp1, ddl1, ddp2, ddl2 = qdd
        phis, ls, dps, dls, ddps, ddls = (p1, p2), (l1, l2), (dp1, dp2), (dl1, dl2), (ddp1, ddp2), (ddl1, ddl2)
        rows = [theta * ddx, theta * ddy, 0.0, 0.0, 0.0, 0.0]
        for i in range(2):
            s, c = np.sin(phis[i]), np.cos(phis[i])
            et, ze, l, dl, dp = eta[i], zeta[i], ls[i], dls[i], dps[i]
            rows[0] += et * l * s * ddps[i] + et * l * c * dp**2 + 2 * et * s * dl * dp - et * c * ddls[i]
            rows[1] += -et * l * c * ddps[i] + et * l * s * dp**2 - 2 * et * c * dl * dp - et * s * ddls[i]
            rows[2 + 2 * i] = et * l * s * ddx - et * l * c * ddy + ze * l**2 * ddps[i] + 2 * ze * l * dl * dp
            rows[3 + 2 * i] = -et * c * ddx - et * s * ddy + ze * ddls[i] - ze * l * dp**2
        got = num.mass(q) @ qdd + num.bias(q, qd)
        assert rel_err(got, rows) < 1e-12, (got, rows)
