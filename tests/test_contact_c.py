"""rodgen_contact.c (constrained dynamics, impact map, hybrid simulation) on hand-written models.

The C is compiled with gcc and the strict flags together with tests/contact_c/harness.c (a compass gait
and a four-bar as rodgen_model tables) and called through ctypes. Every number is checked against an
independent source: a SymPy derivation of the models, a numpy KKT solve, Newton's and the momentum laws,
the energy balance of the limit cycle.
"""
from __future__ import annotations

import subprocess

import _contact_c as cc
import numpy as np
import pytest
import sympy as sp
from _contact_c import COMPASS, COMPASS_P, FOURBAR, FOURBAR_P, FOURBAR_TWICE, POINT, POINT_P

pytestmark = pytest.mark.skipif(cc.CC is None, reason="no C compiler")

GAMMA = -COMPASS_P[5]  # slope angle, downhill towards +x
#: Goswami's limit cycle (m = 5, m_H = 10, a = b = 0.5, 3 degrees), just after heel strike:
#: stance and swing angles from the vertical and their rates
GOSWAMI = (0.2187, -0.3234, -1.0918, -0.3772)
#: The swing foot of the rigid compass gait rises 1.6 cm just after heel strike, then passes under the
#: ground at mid-stance; arming it above 2 cm lets it touch down at the next heel strike only.
COMPASS_ARM_GAP = 0.02


@pytest.fixture(scope="module")
def H(tmp_path_factory) -> cc.Harness:
    return cc.Harness(cc.build(tmp_path_factory.mktemp("contact-c")))


# ---- independent model derivations (SymPy, from the point masses) -----------------------------------


def _lagrange(points, masses, q, qd, g, extra_v=0):
    """M, h = C qd + G of point masses at `points` (sympy 2-vectors) under gravity -g y."""
    n = len(q)
    T = 0
    V = extra_v
    for m, p in zip(masses, points):
        v = p.jacobian(q) * qd
        T += m * (v.T * v)[0] / 2
        V += m * g * p[1]
    M = sp.hessian(T, qd)
    dTdqd = sp.Matrix([T.diff(v) for v in qd])
    h = dTdqd.jacobian(q) * qd - sp.Matrix([T.diff(v) for v in q]) + sp.Matrix([V.diff(v) for v in q])
    assert M.shape == (n, n)
    return M, h


def _compass_sympy():
    x, y, t1, t2, xd, yd, w1, w2 = sp.symbols("x y t1 t2 xd yd w1 w2")
    m, mH, a, b, g, s = sp.symbols("m mH a b g s")
    q, qd = sp.Matrix([x, y, t1, t2]), sp.Matrix([xd, yd, w1, w2])
    hip = sp.Matrix([x, y])
    e = [sp.Matrix([sp.sin(t1), -sp.cos(t1)]), sp.Matrix([sp.sin(t2), -sp.cos(t2)])]
    M, h = _lagrange([hip, hip + b * e[0], hip + b * e[1]], [mH, m, m], q, qd, g)
    tvec, nvec = sp.Matrix([sp.cos(s), sp.sin(s)]), sp.Matrix([-sp.sin(s), sp.cos(s)])
    rows = []
    for ei in e:
        foot = hip + (a + b) * ei
        rows += [tvec.dot(foot), nvec.dot(foot)]
    c = sp.Matrix(rows)
    J = c.jacobian(q)
    bias = (J * qd).jacobian(q) * qd
    args = (q, qd, (m, mH, a, b, g, s))
    return {k: sp.lambdify(args, v, "numpy") for k, v in {"M": M, "h": h, "c": c, "J": J, "b": bias}.items()}


def _fourbar_sympy(loops=1):
    th = sp.symbols("t1:4")
    w = sp.symbols("w1:4")
    l1, l2, l3, m1, m2, m3, g, px, py, lo = sp.symbols("l1 l2 l3 m1 m2 m3 g px py lo")
    q, qd = sp.Matrix(th), sp.Matrix(w)
    pts, r = [], sp.zeros(2, 1)
    for lk, tk in zip((l1, l2, l3), th):
        r = r + lk * sp.Matrix([sp.sin(tk), -sp.cos(tk)])
        pts.append(r)
    M, h = _lagrange(pts, [m1, m2, m3], q, qd, g)
    c = sp.Matrix([pts[2][0] - px, pts[2][1] - py] * loops + [th[0] - lo])
    J = c.jacobian(q)
    bias = (J * qd).jacobian(q) * qd
    args = (q, qd, (l1, l2, l3, m1, m2, m3, g, px, py, lo))
    return {k: sp.lambdify(args, v, "numpy") for k, v in {"M": M, "h": h, "c": c, "J": J, "b": bias}.items()}


def _ev(f, q, qd, p):
    return np.asarray(f(q, qd, p), dtype=float).squeeze()


@pytest.fixture(scope="module")
def compass_sym():
    return _compass_sympy()


def test_harness_models_match_sympy(H, compass_sym) -> None:
    rng = np.random.default_rng(1)
    for model, sym, p, ps in ((COMPASS, compass_sym, COMPASS_P, COMPASS_P[:6]),
                              (FOURBAR, _fourbar_sympy(), FOURBAR_P, FOURBAR_P),
                              (FOURBAR_TWICE, _fourbar_sympy(2), FOURBAR_P, FOURBAR_P)):
        nq = H.sizes(model)[0]
        for _ in range(3):
            q, qd = rng.normal(size=nq), rng.normal(size=nq)
            e = H.eval(model, p, q, qd)
            for key in ("M", "h", "c", "J", "b"):
                np.testing.assert_allclose(e[key], _ev(sym[key], q, qd, ps), rtol=1e-12, atol=1e-12,
                                           err_msg=f"model {model}, {key}")


# ---- constrained dynamics against a KKT solve --------------------------------------------------------


def _kkt(e, u, rows, qd, alpha, beta, target):
    M, J = e["M"], e["J"][rows]
    n, k = len(qd), len(rows)
    gamma = -e["b"][rows] - 2 * alpha * J @ qd - beta**2 * (e["c"][rows] - target[rows])
    A = np.block([[M, -J.T], [J, np.zeros((k, k))]])
    sol = np.linalg.solve(A, np.concatenate([e["B"] @ u - e["h"], gamma]))
    return sol[:n], sol[n:]


def _fourbar_closed(theta1, rate1=0.0, p=FOURBAR_P):
    """The closed four-bar at th1 = theta1 (hanging below its pivots), its rates from J qd = 0."""
    l, target = p[:3], p[7:9]
    p1 = l[0] * np.array([np.sin(theta1), -np.cos(theta1)])
    d = target - p1
    dist = np.hypot(*d)
    along = (dist**2 + l[1] ** 2 - l[2] ** 2) / (2 * dist)
    across = np.sqrt(l[1] ** 2 - along**2)
    perp = np.array([d[1], -d[0]]) / dist  # d turned clockwise: below the line when d points to +x
    p2 = p1 + along * d / dist + across * perp
    a, b = p2 - p1, target - p2
    q = np.array([theta1, np.arctan2(a[0], -a[1]), np.arctan2(b[0], -b[1])])
    J = np.array([l * np.cos(q), l * np.sin(q)])
    qd = np.array([rate1, *np.linalg.solve(J[:, 1:], -J[:, 0] * rate1)])
    tip = np.array([np.sum(l * np.sin(q)), -np.sum(l * np.cos(q))]) - target
    assert np.max(np.abs(tip)) < 1e-13
    return q, qd


@pytest.mark.parametrize("model, active", [(COMPASS, [1, 0]), (COMPASS, [0, 1]), (COMPASS, [1, 1]),
                                           (COMPASS, [0, 0]), (FOURBAR, [1, 0]), (FOURBAR, [1, 1])])
def test_constrained_dynamics_matches_kkt(H, model, active) -> None:
    rng = np.random.default_rng(7)
    nq, nu, _, _nc, nr = H.sizes(model)
    p = COMPASS_P if model == COMPASS else FOURBAR_P
    blocks = [(0, 2), (2, 2)] if model == COMPASS else [(0, 2), (2, 1)]
    rows = [r for (r0, k), a in zip(blocks, active) if a or (model == FOURBAR and r0 == 0)
            for r in range(r0, r0 + k)]
    for _ in range(5):
        q, qd, u = rng.normal(size=nq), rng.normal(size=nq), rng.normal(size=nu) * 10
        if model == COMPASS:
            q[2], q[3] = 0.3 * q[2], 0.3 * q[3] + 0.5  # feet apart
        target = rng.normal(size=nr) * 0.1
        for alpha, beta in ((0.0, 0.0), (10.0, 10.0), (3.0, 25.0)):
            status, qdd, lam = H.cfd(model, p, q, qd, u, active, target, alpha, beta)
            assert status == cc.OK
            e = H.eval(model, p, q, qd)
            qdd_ref, lam_ref = _kkt(e, u, rows, qd, alpha, beta, target)
            scale = 1 + np.max(np.abs(qdd_ref))
            np.testing.assert_allclose(qdd, qdd_ref, rtol=0, atol=1e-9 * scale)
            lam_scale = 1 + np.max(np.abs(lam_ref), initial=0.0)
            np.testing.assert_allclose(lam[rows], lam_ref, rtol=0, atol=1e-9 * lam_scale)
            assert np.all(lam[[r for r in range(nr) if r not in rows]] == 0.0)


@pytest.mark.parametrize("active", [[2, 0], [3, 0], [1, 3], [2, 2]])
def test_sliding_contact_dynamics_matches_kkt(H, active) -> None:
    """A sliding contact (active 2: tangential force +mu * normal, 3: -mu * normal) holds its gap only."""
    rng = np.random.default_rng(11)
    mu = COMPASS_P[6]
    for _ in range(5):
        q, qd, u = rng.normal(size=4), rng.normal(size=4), rng.normal(size=1) * 10
        q[2], q[3] = 0.3 * q[2], 0.3 * q[3] + 0.5
        target = rng.normal(size=4) * 0.1
        status, qdd, lam = H.cfd(COMPASS, COMPASS_P, q, qd, u, active, target, 10.0, 10.0)
        assert status == cc.OK
        e = H.eval(COMPASS, COMPASS_P, q, qd)
        held, force = [], []
        for i, a in enumerate(active):
            t, n = 2 * i, 2 * i + 1
            if a == 1:
                held += [t, n]
                force += [e["J"][t], e["J"][n]]
            elif a in (2, 3):
                held.append(n)
                force.append(e["J"][n] + (mu if a == 2 else -mu) * e["J"][t])
        J, W = e["J"][held], np.array(force)
        k = len(held)
        gamma = -e["b"][held] - 20.0 * J @ qd - 100.0 * (e["c"][held] - target[held])
        sol = np.linalg.solve(np.block([[e["M"], -W.T], [J, np.zeros((k, k))]]),
                              np.concatenate([e["B"] @ u - e["h"], gamma]))
        np.testing.assert_allclose(qdd, sol[:4], atol=1e-9 * (1 + np.max(np.abs(sol[:4]))))
        np.testing.assert_allclose(lam[held], sol[4:], atol=1e-9 * (1 + np.max(np.abs(sol[4:]))))
        for i, a in enumerate(active):
            if a in (2, 3):
                assert lam[2 * i] == pytest.approx((mu if a == 2 else -mu) * lam[2 * i + 1], rel=1e-14)


def test_default_target_holds_a_contact_where_it_is(H) -> None:
    """Without targets the tangential row of a contact is not pulled anywhere, the gap towards 0."""
    q, qd = np.array([0.3, 0.9, 0.2, -0.4]), np.array([0.5, -0.2, 1.0, 2.0])
    e = H.eval(COMPASS, COMPASS_P, q, qd)
    target = np.array([e["c"][0], 0.0, e["c"][2], 0.0])
    _, qdd_default, lam_default = H.cfd(COMPASS, COMPASS_P, q, qd, [3.0], [1, 0])
    _, qdd, lam = H.cfd(COMPASS, COMPASS_P, q, qd, [3.0], [1, 0], target)
    np.testing.assert_array_equal(qdd_default, qdd)
    np.testing.assert_array_equal(lam_default, lam)


def _compass_masses(q, qd, qdd=None, p=COMPASS_P):
    """Positions, velocities (and accelerations) of the hip and the two leg masses."""
    m, mH, b = p[0], p[1], p[3]
    hip, vhip = q[:2], qd[:2]
    out = [(mH, hip, vhip, None if qdd is None else qdd[:2])]
    for i in (2, 3):
        e, de = np.array([np.sin(q[i]), -np.cos(q[i])]), np.array([np.cos(q[i]), np.sin(q[i])])
        acc = None
        if qdd is not None:
            acc = qdd[:2] + b * (qdd[i] * de + qd[i] ** 2 * np.array([-np.sin(q[i]), np.cos(q[i])]))
        out.append((m, hip + b * e, vhip + b * qd[i] * de, acc))
    return out


def test_lambda_is_the_ground_reaction(H) -> None:
    """Newton: the contact forces (tangential, normal in the ground frame) = m (a_com - g)."""
    rng = np.random.default_rng(3)
    t, n = np.array([np.cos(-GAMMA), np.sin(-GAMMA)]), np.array([np.sin(-GAMMA) * -1, np.cos(-GAMMA)])
    mt = COMPASS_P[1] + 2 * COMPASS_P[0]
    for active in ([1, 0], [1, 1]):
        q, qd = np.array([0.1, 0.95, 0.3, -0.2]), rng.normal(size=4)
        status, qdd, lam = H.cfd(COMPASS, COMPASS_P, q, qd, [5.0], active)
        assert status == cc.OK
        force = sum(lam[2 * i] * t + lam[2 * i + 1] * n for i in range(2))
        ma = sum(m * a for m, _, _, a in _compass_masses(q, qd, qdd)) + mt * np.array([0.0, 9.81])
        np.testing.assert_allclose(force, ma, rtol=1e-10, atol=1e-9)


def _kkt_least_norm(e, u, rows, qd, target, alpha=10.0, beta=10.0):
    """The least-norm solution of the KKT system of the rows (numpy's lstsq): dependent rows have it."""
    M, J = e["M"], e["J"][rows]
    n, k = len(qd), len(rows)
    gamma = -e["b"][rows] - 2 * alpha * J @ qd - beta**2 * (e["c"][rows] - target[rows])
    A = np.block([[M, -J.T], [J, np.zeros((k, k))]])
    sol = np.linalg.lstsq(A, np.concatenate([e["B"] @ u - e["h"], gamma]), rcond=1e-12)[0]
    return sol[:n], sol[n:]


def test_redundant_constraints_take_the_least_norm_forces(H) -> None:
    """Dependent rows that some motion satisfies (the four-bar's loop twice, both feet of the compass on one point)
    give the unique motion and the least-norm forces of the KKT system (numpy's lstsq); rows that contradict each
    other (the two feet held at different places) are a status, never NaN."""
    q, qd = _fourbar_closed(0.2, 0.5)
    e = H.eval(FOURBAR_TWICE, FOURBAR_P, q, qd)
    status, qdd, lam = H.cfd(FOURBAR_TWICE, FOURBAR_P, q, qd, [0.0], [1, 1, 0])
    qdd_ref, lam_ref = _kkt_least_norm(e, np.zeros(1), [0, 1, 2, 3], qd, e["c"] * 0.0)
    assert status == cc.OK
    np.testing.assert_allclose(qdd, qdd_ref, rtol=0, atol=1e-9 * (1 + np.abs(qdd_ref).max()))
    np.testing.assert_allclose(lam[:4], lam_ref, rtol=0, atol=1e-9 * (1 + np.abs(lam_ref).max()))
    np.testing.assert_allclose(lam[:2], lam[2:4], rtol=1e-9)          # the two copies share the force
    status, qdp, imp, _after, _loss = H.impact(FOURBAR_TWICE, FOURBAR_P, q, qd + [1.0, 0.0, 0.0], [1, 1, 0])
    assert status == cc.OK and np.abs(e["J"][:4] @ qdp).max() < 1e-12
    np.testing.assert_allclose(imp[:2], imp[2:4], rtol=1e-9)
    # both feet of the compass at the same point: four rows, rank two
    q = np.array([0.0, 1.0, 0.2, 0.2])
    e = H.eval(COMPASS, COMPASS_P, q, np.zeros(4))
    status, qdd, lam = H.cfd(COMPASS, COMPASS_P, q, np.zeros(4), [0.0], [1, 1], e["c"])
    qdd_ref, lam_ref = _kkt_least_norm(e, np.zeros(1), [0, 1, 2, 3], np.zeros(4), e["c"])
    assert status == cc.OK
    np.testing.assert_allclose(qdd, qdd_ref, rtol=0, atol=1e-9 * (1 + np.abs(qdd_ref).max()))
    np.testing.assert_allclose(lam, lam_ref, rtol=0, atol=1e-9 * (1 + np.abs(lam_ref).max()))
    # the same two feet held 1 cm apart along the ground: no motion holds both
    status, qdd, lam = H.cfd(COMPASS, COMPASS_P, q, np.zeros(4), [0.0], [1, 1], e["c"] + [0.0, 0.0, 0.01, 0.0])
    assert status == cc.ERR_SINGULAR_CONSTRAINTS
    # the single loop is fine
    q, qd = _fourbar_closed(0.2, 0.5)
    status, qdd, _lam = H.cfd(FOURBAR, FOURBAR_P, q, qd, [0.0], [1, 0])
    assert status == cc.OK and np.all(np.isfinite(qdd))


# ---- impact map ---------------------------------------------------------------------------------------


def _compass_on_stance(th_stance, th_swing, w_stance, w_swing, stance=0):
    """State with the stance foot at the origin (held) and the hip velocity that keeps it there."""
    th = [th_stance, th_swing] if stance == 0 else [th_swing, th_stance]
    w = [w_stance, w_swing] if stance == 0 else [w_swing, w_stance]
    ts, ws = th[stance], w[stance]
    q = np.array([-np.sin(ts), np.cos(ts), *th])
    qd = np.array([-np.cos(ts) * ws, -np.sin(ts) * ws, *w])
    return np.concatenate([q, qd])


def _angular_momentum(q, qd, point):
    return sum(m * ((r - point)[0] * v[1] - (r - point)[1] * v[0]) for m, r, v, _ in _compass_masses(q, qd))


def test_heel_strike_conserves_angular_momentum_and_releases_the_trailing_foot(H) -> None:
    alpha = 0.271  # half the angle between the legs at heel strike
    y = _compass_on_stance(-GAMMA - alpha, -GAMMA + alpha, -1.09, -0.38)
    q, qdm = y[:4], y[4:]
    e = H.eval(COMPASS, COMPASS_P, q, qdm)
    assert abs(e["c"][3]) < 1e-15 and (e["J"] @ qdm)[3] < 0  # foot 2 on the ground, moving down
    status, qdp, imp, after, loss = H.impact(COMPASS, COMPASS_P, q, qdm, [1, 1])
    assert status == cc.OK
    assert list(after) == [False, True]  # the trailing foot's impulse would pull: released
    assert imp[0] == 0 and imp[1] == 0 and imp[3] > 0
    foot2 = e["r"][2]
    np.testing.assert_allclose(_angular_momentum(q, qdp, foot2), _angular_momentum(q, qdm, foot2),
                               rtol=1e-12)
    np.testing.assert_allclose((e["J"] @ qdp)[2:], 0.0, atol=1e-12)
    assert (e["J"] @ qdp)[1] > 0  # the trailing foot lifts
    # numpy: M (qd+ - qd-) = J2^T Lambda, J2 qd+ = 0
    M, J2 = e["M"], e["J"][2:]
    sol = np.linalg.solve(np.block([[M, -J2.T], [J2, np.zeros((2, 2))]]), np.concatenate([M @ qdm, [0, 0]]))
    np.testing.assert_allclose(qdp, sol[:4], atol=1e-12)
    np.testing.assert_allclose(imp[2:], sol[4:], rtol=1e-11)
    np.testing.assert_allclose(loss, 0.5 * qdm @ M @ qdm - 0.5 * qdp @ M @ qdp, rtol=1e-12)
    assert loss > 0


def test_limit_impact_and_release(H) -> None:
    lower = FOURBAR_P[9]
    q, qd = _fourbar_closed(lower, -0.8)
    status, qdp, imp, after, loss = H.impact(FOURBAR, FOURBAR_P, q, qd, [1, 1])
    assert status == cc.OK and list(after) == [True, True]
    np.testing.assert_allclose(qdp, 0.0, atol=1e-14)  # one degree of freedom: the limit stops it
    assert imp[2] > 0
    M = H.eval(FOURBAR, FOURBAR_P, q, qd)["M"]
    np.testing.assert_allclose(loss, 0.5 * qd @ M @ qd, rtol=1e-12)
    # moving inwards: the impulse would pull, the limit is released and nothing changes
    q, qd = _fourbar_closed(lower, 0.8)
    status, qdp, imp, after, loss = H.impact(FOURBAR, FOURBAR_P, q, qd, [1, 1])
    assert status == cc.OK and list(after) == [True, False]
    np.testing.assert_allclose(qdp, qd, atol=1e-14)
    assert imp[2] == 0 and abs(loss) < 1e-13


# ---- hybrid simulation --------------------------------------------------------------------------------


def _walk_from(H, start, t_end, dt, **kw):
    y0 = _compass_on_stance(*start)
    return H.simulate(COMPASS, COMPASS_P, y0, [1, 0], t_end, dt, disarmed0=[0, 1], arm_gap=COMPASS_ARM_GAP, **kw)


def _walk(H, t_end, dt, **kw):
    return _walk_from(H, GOSWAMI, t_end, dt, **kw)


def test_passive_compass_gait_walks_50_steps_on_its_limit_cycle(H) -> None:
    s = _walk(H, 40.0, 5e-3)
    assert s.status == cc.OK
    td = np.flatnonzero(s.ev_kind == cc.EVENT_TOUCHDOWN)
    assert len(td) >= 50
    # every heel strike releases the trailing foot at the same instant; feet alternate
    for k in td:
        assert s.ev_kind[k + 1] == cc.EVENT_LIFTOFF and s.ev_t[k + 1] == s.ev_t[k]
        assert s.ev_block[k + 1] == 1 - s.ev_block[k]
    assert np.all(np.diff(s.ev_block[td]) != 0)
    assert not np.any(s.ev_kind == cc.EVENT_SLIP)
    # one foot on the ground at all times, the gap of the held foot stays below 1e-8 m
    assert np.all(s.active.sum(axis=1) == 1)
    gaps = np.array([H.eval(COMPASS, COMPASS_P, y[:4], y[4:])["c"][[1, 3]] for y in s.y])
    assert np.max(np.abs(gaps[s.active.astype(bool)])) < 1e-8
    # energy balance of the limit cycle: the kinetic energy lost in a heel strike equals the potential
    # energy the walker loses in a step, m g (step length) sin(slope)
    k = td[-1]
    i = np.searchsorted(s.t, s.ev_t[k])  # the row before the jump
    c = H.eval(COMPASS, COMPASS_P, s.y[i, :4], s.y[i, 4:])["c"]
    step = abs(c[2] - c[0])
    mt = COMPASS_P[1] + 2 * COMPASS_P[0]
    np.testing.assert_allclose(s.ev_loss[k], mt * 9.81 * step * np.sin(GAMMA), rtol=1e-6)
    # the state just after the last heel strike is Goswami's fixed point (4 digits published)
    post = s.y[i + 1]
    stance = s.ev_block[k]
    th = post[2:4][[stance, 1 - stance]]
    w = post[6:8][[stance, 1 - stance]]
    np.testing.assert_allclose([*th, *w], GOSWAMI, atol=6e-4)
    periods = np.diff(s.ev_t[td])
    assert np.ptp(periods[-10:]) < 1e-8


def test_event_times_converge_with_dt_and_tolerance(H) -> None:
    """Heel-strike time: fourth order in dt (the step is integrated again to the event), within the
    tolerance of the root finding."""
    ref = _walk(H, 1.0, 1e-3, event_tol=1e-14).ev_t[0]
    errors = [abs(_walk(H, 1.0, dt, event_tol=1e-13).ev_t[0] - ref) for dt in (2e-2, 1e-2, 5e-3)]
    assert errors[1] < 1e-6  # with dt = 10 ms
    assert 8 < errors[0] / errors[1] < 32 and 8 < errors[1] / errors[2] < 32
    for tol in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7):
        s = _walk(H, 1.0, 5e-3, event_tol=tol)
        assert abs(s.ev_t[0] - ref) <= tol + 1e-8
        i = np.searchsorted(s.t, s.ev_t[0])
        gap = H.eval(COMPASS, COMPASS_P, s.y[i, :4], s.y[i, 4:])["c"][3]
        assert -2 * tol <= gap <= 0  # located on the late side of the crossing


def test_output_in_chunks_resumes_exactly(H) -> None:
    whole = _walk(H, 3.0, 1e-2)
    parts = _walk(H, 3.0, 1e-2, chunk=7)
    # the harness takes at most 3 nc + 2 = 8 events per call: the event log fills up too
    assert parts.calls > 40 and whole.calls > 1
    assert whole.status == parts.status == cc.OK
    for name in ("t", "y", "lam", "active", "ev_t", "ev_kind", "ev_block", "ev_imp", "ev_loss"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(parts, name), err_msg=name)
    # the pre- and post-jump rows share the event's time
    for te in whole.ev_t:
        assert np.sum(whole.t == te) >= 2
    # store_every keeps every k-th grid step, and all event rows
    sparse = _walk(H, 3.0, 1e-2, store_every=10)
    grid = sparse.t[~np.isin(sparse.t, sparse.ev_t)]
    np.testing.assert_allclose(grid, 0.1 * np.arange(len(grid)), atol=1e-12)
    assert len(sparse.t) == len(grid) + 2 * len(np.unique(sparse.ev_t))


def test_liftoff_when_the_normal_force_turns(H) -> None:
    """A hip torque flings the swing leg; the stance foot's normal force falls to zero: lift-off, then
    flight, where the centre of mass falls freely."""
    p = COMPASS_P.copy()
    p[6] = -1.0  # no friction limit
    y0 = _compass_on_stance(0.1 - GAMMA, 0.1 - GAMMA - 1.0, 0.0, 0.0)
    s = H.simulate(COMPASS, p, y0, [1, 0], 0.5, 1e-3, u=100.0, event_tol=1e-12)
    assert s.status == cc.OK
    assert s.ev_kind[0] == cc.EVENT_LIFTOFF and s.ev_block[0] == 0
    te = s.ev_t[0]
    i = np.searchsorted(s.t, te)
    assert s.active[i, 0] and not s.active[i + 1, 0]
    # normal force at the event: zero to the time tolerance times its rate
    rate = abs(s.lam[i - 1, 1] - s.lam[i, 1]) / (s.t[i] - s.t[i - 1])
    assert -1e-12 * rate * 10 <= s.lam[i, 1] <= 0
    assert np.all(s.lam[i + 1] == 0)
    # flight: nothing active, the centre of mass accelerates at g
    flight = np.flatnonzero((s.t > te) & (s.t < (s.ev_t[1] if len(s.ev_t) > 1 else 0.5)) & ~s.active.any(1))
    assert len(flight) > 20
    mt = p[1] + 2 * p[0]
    com = np.array([sum(m * r for m, r, _, _ in _compass_masses(y[:4], y[4:], p=p)) / mt for y in s.y[flight]])
    acc = np.diff(com, 2, axis=0) / 1e-3**2
    np.testing.assert_allclose(acc, np.tile([0.0, -9.81], (len(acc), 1)), atol=1e-5)


def _fourbar_energy(H, p, y):
    e = H.eval(FOURBAR, p, y[:3], y[3:])
    return e["T"] + e["V"]


def test_loop_drift_stays_bounded_with_the_default_baumgarte_gains(H) -> None:
    """10 s of a swinging four-bar (the limit out of reach): with alpha = beta = 10/s the loop stays
    closed to 1e-8 at dt = 5 ms, much better than without the correction; energy is kept."""
    p = FOURBAR_P.copy()
    p[9] = -10.0
    y0 = np.concatenate(_fourbar_closed(0.9, 0.0, p))

    def run(alpha, beta):
        s = H.simulate(FOURBAR, p, y0, [1, 0], 10.0, 5e-3, alpha=alpha, beta=beta)
        assert s.status == cc.OK and len(s.ev_t) == 0
        c = np.array([H.eval(FOURBAR, p, y[:3], y[3:])["c"][:2] for y in s.y])
        return s, np.max(np.abs(c))

    s, drift = run(10.0, 10.0)
    _, drift_uncorrected = run(0.0, 0.0)
    assert drift < 1e-8
    assert drift_uncorrected > 10 * drift
    energy = np.array([_fourbar_energy(H, p, y) for y in s.y[::20]])
    assert np.ptp(energy) < 1e-6 * np.max(np.abs(energy))
    assert np.ptp(s.y[:, 0]) > 1.0  # it does swing


def test_limit_reached_impact_then_release_or_rest(H) -> None:
    y0 = np.concatenate(_fourbar_closed(0.9, 0.0))
    lower = FOURBAR_P[9]
    # passive: hits the limit (the one degree of freedom stops), gravity pulls it off again at once
    s = H.simulate(FOURBAR, FOURBAR_P, y0, [1, 0], 1.0, 1e-3)
    assert s.status == cc.OK
    assert list(s.ev_kind[:2]) == [cc.EVENT_LIMIT, cc.EVENT_LIMIT_RELEASE] and list(s.ev_block[:2]) == [1, 1]
    te = s.ev_t[0]
    assert s.ev_t[1] == te
    i = np.searchsorted(s.t, te)
    assert -1e-9 < s.y[i, 0] - lower <= 0
    before = s.t < te
    energy = np.array([_fourbar_energy(H, FOURBAR_P, y) for y in s.y[before]])
    assert np.ptp(energy) < 1e-8 * np.max(np.abs(energy))
    kinetic = H.eval(FOURBAR, FOURBAR_P, s.y[i, :3], s.y[i, 3:])["T"]
    np.testing.assert_allclose(s.ev_loss[0], kinetic, rtol=1e-12)
    np.testing.assert_allclose(s.y[i + 1, 3:], 0.0, atol=1e-12)
    assert not s.active[i + 1, 1] and s.lam[i + 1, 2] == 0
    # pushed outwards by a torque: it stays on the limit, the forces hold it in static equilibrium
    s = H.simulate(FOURBAR, FOURBAR_P, y0, [1, 0], 1.0, 1e-3, u=-20.0)
    assert s.status == cc.OK and list(s.ev_kind) == [cc.EVENT_LIMIT]
    assert s.active[-1, 1]
    y = s.y[-1]
    e = H.eval(FOURBAR, FOURBAR_P, y[:3], y[3:])
    assert abs(e["c"][2]) < 1e-9 and np.max(np.abs(y[3:])) < 1e-9
    forces = np.linalg.solve(e["J"].T, e["h"] - e["B"][:, 0] * -20.0)
    np.testing.assert_allclose(s.lam[-1], forces, rtol=1e-7)
    assert forces[2] > 0


def test_initial_state_checks_name_the_block(H) -> None:
    y = _compass_on_stance(*GOSWAMI)  # Goswami's rounded angles put the swing foot 5 um below ground
    s = H.simulate(COMPASS, COMPASS_P, y, [1, 0], 1.0, 1e-2)
    assert (s.status, s.block) == (cc.ERR_INITIAL_STATE, 1) and len(s.t) == 0
    assert H.simulate(COMPASS, COMPASS_P, y, [1, 0], 0.1, 1e-2, disarmed0=[0, 1]).status == cc.OK
    lifted = y.copy()
    lifted[1] += 0.01  # the stance foot 1 cm above the ground but active
    s = H.simulate(COMPASS, COMPASS_P, lifted, [1, 0], 1.0, 1e-2, disarmed0=[0, 1])
    assert (s.status, s.block) == (cc.ERR_INITIAL_STATE, 0)
    sunk = y.copy()
    sunk[1] -= 0.01  # both feet below the ground, neither active
    s = H.simulate(COMPASS, COMPASS_P, sunk, [0, 0], 1.0, 1e-2, disarmed0=[0, 1])
    assert (s.status, s.block) == (cc.ERR_INITIAL_STATE, 0)
    assert H.simulate(COMPASS, COMPASS_P, sunk, [0, 0], 0.1, 1e-2, disarmed0=[1, 1]).status == cc.OK
    open_loop = np.concatenate(_fourbar_closed(0.9, 0.0))
    open_loop[1] += 0.01
    s = H.simulate(FOURBAR, FOURBAR_P, open_loop, [0, 0], 1.0, 1e-2)  # the loop is active regardless
    assert (s.status, s.block) == (cc.ERR_INITIAL_STATE, 0)


def test_slip_is_an_event_then_stop_or_continue(H) -> None:
    p = COMPASS_P.copy()
    p[6] = 0.1  # the stance foot needs |lambda_t| / lambda_n = 0.27 at the start
    y0 = _compass_on_stance(*GOSWAMI)
    kw = {"disarmed0": [0, 1], "arm_gap": COMPASS_ARM_GAP}
    s = H.simulate(COMPASS, p, y0, [1, 0], 3.0, 1e-3, **kw)
    assert (s.status, s.block) == (cc.ERR_FRICTION_CONE, 0)
    assert list(s.ev_kind) == [cc.EVENT_SLIP] and s.ev_t[0] == 0.0
    lt, ln = s.ev_imp[0]
    assert abs(lt) > 0.1 * ln > 0
    s = H.simulate(COMPASS, p, y0, [1, 0], 3.0, 1e-3, on_slip=cc.SLIP_CONTINUE, **kw)
    assert s.status == cc.OK
    assert np.sum(s.ev_kind == cc.EVENT_SLIP) >= 4 and np.sum(s.ev_kind == cc.EVENT_TOUCHDOWN) >= 4


def test_failures_stop_with_a_status(H) -> None:
    y0 = _compass_on_stance(*GOSWAMI)
    kw = {"disarmed0": [0, 1], "arm_gap": COMPASS_ARM_GAP}
    s = H.simulate(COMPASS, COMPASS_P, y0, [1, 0], 5.0, 1e-3, max_events=3, **kw)
    assert s.status == cc.ERR_TOO_MANY_EVENTS and len(s.ev_t) == 4
    assert s.t[-1] == s.ev_t[-1]  # the state it stopped at is the last row
    s = H.simulate(COMPASS, COMPASS_P, y0, [1, 0], 5.0, 1e-3, u=np.inf, **kw)
    assert s.status == 7 and len(s.t) == 1  # RODGEN_ERR_INPUT_NONFINITE


def test_runs_clean_under_address_and_undefined_behaviour_sanitizers(tmp_path) -> None:
    exe = tmp_path / "sanitized"
    flags = [*cc.STRICT, "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", f"-I{cc.CSRC}"]
    sources = [cc.HARNESS.parent / "sanitize_main.c", cc.HARNESS, cc.CSRC / "rodgen_contact.c",
               cc.CSRC / "rodgen_linalg.c"]
    built = subprocess.run([cc.CC, *flags, *map(str, sources), "-o", str(exe), "-lm"], check=False,
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"no sanitizer runtime: {built.stderr[:200]}")
    run = subprocess.run([str(exe)], check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    lines = [line.split() for line in run.stdout.splitlines()]
    # the redundant loops (the four-bar's twice) run through the least-norm solve
    assert [int(line[0]) for line in lines] == [cc.OK] * 5
    assert int(lines[0][2]) >= 20  # the compass took its steps (touchdowns and lift-offs)


def test_compass_gait_matches_the_independent_reference_walker(H) -> None:
    """tests/_compass_reference.py (SymPy Lagrangian in the slope frame, SciPy, momentum-conserving heel
    strike, Newton on the step map): its period-one gait is reproduced step after step."""
    from _compass_reference import Walker, fixed_point, step

    walker = Walker(m=COMPASS_P[0], m_hip=COMPASS_P[1], a=COMPASS_P[2], b=COMPASS_P[3], g=COMPASS_P[4],
                    slope=GAMMA)
    z, _ = fixed_point(walker, np.array([-0.2711, 1.0918, 0.3772]))
    _, period, _ = step(walker, z)

    # reference angles are from the slope normal, positive down the slope: theta = -theta_ref - slope
    def to_rodgen(x):
        return -x[0] - GAMMA, -x[1] - GAMMA, -x[2], -x[3]

    s = _walk_from(H, to_rodgen(z), 12.0, 2e-3)
    assert s.status == cc.OK
    td = np.flatnonzero(s.ev_kind == cc.EVENT_TOUCHDOWN)
    assert len(td) >= 15
    np.testing.assert_allclose(np.diff(np.concatenate([[0.0], s.ev_t[td]])), period, atol=1e-8)
    for k in td:
        post = s.y[np.searchsorted(s.t, s.ev_t[k]) + 1]
        stance = s.ev_block[k]
        state = [post[2 + stance], post[3 - stance], post[6 + stance], post[7 - stance]]
        np.testing.assert_allclose(state, to_rodgen(z), atol=1e-8)


def test_bad_options_are_refused(H) -> None:
    y0 = _compass_on_stance(*GOSWAMI)
    kw = {"disarmed0": [0, 1]}
    for bad in ({"dt": 0.0}, {"t_end": 0.0}, {"event_tol": 0.0}, {"arm_gap": -1.0}, {"store_every": 0},
                {"alpha": -1.0}, {"on_slip": 7}):
        args = {"t_end": 1.0, "dt": 1e-2, **kw, **bad}
        s = H.simulate(COMPASS, COMPASS_P, y0, [1, 0], args.pop("t_end"), args.pop("dt"), **args)
        assert s.status == 9, bad  # RODGEN_ERR_OPTIONS
        assert len(s.t) == 0


def test_sliding_friction_on_a_slope_follows_the_closed_form(H) -> None:
    """A point mass pushed up a 20 degree slope (mu = 0.2 < tan 20): it slides up decelerating at
    g (sin + mu cos), stops (STICK), cannot stick (SLIP) and slides down at g (sin - mu cos)."""
    m, g, slope, mu = POINT_P
    gam = -slope
    v0 = 2.0
    t_dir = np.array([np.cos(slope), np.sin(slope)])
    y0 = np.concatenate([[0.0, 0.0], -v0 * t_dir])
    s = H.simulate(POINT, POINT_P, y0, [cc.SLIDE_PLUS], 1.5, 1e-2, on_slip=cc.SLIP_SLIDE, event_tol=1e-12)
    assert s.status == cc.OK
    a_up, a_down = g * (np.sin(gam) + mu * np.cos(gam)), g * (np.sin(gam) - mu * np.cos(gam))
    t_stop = v0 / a_up
    assert list(s.ev_kind) == [cc.EVENT_STICK, cc.EVENT_SLIP]
    assert abs(s.ev_t[0] - t_stop) < 1e-11 and s.ev_t[1] == s.ev_t[0]
    lt, ln = s.ev_imp[1]  # the sticking force at the stop: -m g sin, m g cos
    np.testing.assert_allclose([lt, ln], [-m * g * np.sin(gam), m * g * np.cos(gam)], rtol=1e-9)
    along = s.y[:, :2] @ t_dir
    up, down = s.t < t_stop - 1e-9, s.t > t_stop + 1e-9
    np.testing.assert_allclose(along[up], -v0 * s.t[up] + a_up * s.t[up] ** 2 / 2, atol=1e-10)
    td = s.t[down] - t_stop
    np.testing.assert_allclose(along[down], -v0**2 / (2 * a_up) + a_down * td**2 / 2, atol=1e-9)
    # forces: normal m g cos, friction mu * normal against the motion; the codes of the phases
    np.testing.assert_allclose(s.lam[:, 1], m * g * np.cos(gam), rtol=1e-9)
    np.testing.assert_allclose(s.lam[up, 0], mu * s.lam[up, 1], rtol=1e-12)
    np.testing.assert_allclose(s.lam[down, 0], -mu * s.lam[down, 1], rtol=1e-12)
    assert np.all(s.active[up, 0] == cc.SLIDE_PLUS) and np.all(s.active[down, 0] == cc.SLIDE_MINUS)
    # gap held
    gap = s.y[:, :2] @ np.array([-np.sin(slope), np.cos(slope)])
    assert np.max(np.abs(gap)) < 1e-12
    # with mu = 0.5 > tan 20 it stops and stays
    p = POINT_P.copy()
    p[3] = 0.5
    s = H.simulate(POINT, p, y0, [cc.SLIDE_PLUS], 1.5, 1e-2, on_slip=cc.SLIP_SLIDE, event_tol=1e-12)
    assert s.status == cc.OK and list(s.ev_kind) == [cc.EVENT_STICK]
    t_stop = v0 / (g * (np.sin(gam) + 0.5 * np.cos(gam)))
    assert abs(s.ev_t[0] - t_stop) < 1e-11
    assert np.all(s.active[-1] == cc.STICK) and np.max(np.abs(s.y[-1, 2:])) < 1e-9
    np.testing.assert_allclose(s.lam[-1], [-m * g * np.sin(gam), m * g * np.cos(gam)], rtol=1e-9)


@pytest.mark.parametrize("vt0, slides", [(3.0, True), (-0.3, False)])
def test_point_dropped_on_a_slope_takes_a_coulomb_impact(H, vt0: float, slides: bool) -> None:
    """With on_slip = slide a touchdown whose sticking impulse leaves the cone slides through the impact:
    normal impulse -m v_n, tangential mu times it against the tangential velocity (|v_t| - mu |v_n| left,
    then sliding), inside the cone it sticks (the planar case of tests/test_slide_3d.py)."""
    m, g, slope, mu = POINT_P
    t_dir, n_dir = np.array([np.cos(slope), np.sin(slope)]), np.array([-np.sin(slope), np.cos(slope)])
    h0, vn0 = 0.3, -0.5
    r0, v0 = h0 * n_dir, vt0 * t_dir + vn0 * n_dir
    s = H.simulate(POINT, POINT_P, np.concatenate([r0, v0]), [0], 0.4, 1e-3, on_slip=cc.SLIP_SLIDE,
                   event_tol=1e-12)
    assert s.status == cc.OK
    # free fall: gap(t) = h0 + vn0 t - g n_y t^2 / 2 = 0
    a = 0.5 * g * n_dir[1]
    t_td = (vn0 + np.sqrt(vn0**2 + 4 * a * h0)) / (2 * a)
    assert s.ev_kind[0] == cc.EVENT_TOUCHDOWN and abs(s.ev_t[0] - t_td) < 1e-11
    v = v0 - np.array([0.0, g]) * t_td
    vt, vn = v @ t_dir, v @ n_dir
    lam_n = -m * vn
    lam_t = -np.sign(vt) * min(mu * lam_n, m * abs(vt))
    np.testing.assert_allclose(s.ev_imp[0], [lam_t, lam_n], rtol=1e-9)
    j = np.flatnonzero(s.t == s.ev_t[0])[-1]          # the state after the impact
    np.testing.assert_allclose(s.y[j, 2:], (vt + lam_t / m) * t_dir, atol=1e-9)
    assert abs(s.ev_loss[0] - 0.5 * m * (vt**2 + vn**2 - (vt + lam_t / m) ** 2)) < 1e-9
    assert (abs(vt) > mu * abs(vn)) == slides
    assert s.active[j, 0] == cc.SLIDE_MINUS          # slides downhill after it either way (mu < tan 20)
    if not slides:   # the impact stuck; then the sticking force leaves the cone at once
        assert s.ev_kind[1] == cc.EVENT_SLIP and s.ev_t[1] == s.ev_t[0]
    else:
        assert len(s.ev_kind) == 1 or s.ev_t[1] > s.ev_t[0]


def test_the_entries_refuse_values_not_finite_alike(H) -> None:
    """rodgen_constrained_dynamics, rodgen_impact and rodgen_hybrid_start make one set of checks: a NaN in q, qd, u
    (the dynamics' inputs) or p is RODGEN_ERR_NONFINITE_INPUT from each, and the run writes no rows."""
    y0 = _compass_on_stance(*GOSWAMI)
    for where in ("q", "qd", "u", "p"):
        y, p, u = np.array(y0, dtype=float), COMPASS_P.copy(), np.array([0.0])
        {"q": y[:4], "qd": y[4:], "u": u, "p": p}[where][0] = np.nan
        assert H.cfd(COMPASS, p, y[:4], y[4:], u, [1, 0])[0] == cc.ERR_NONFINITE_INPUT, where
        if where != "u":
            assert H.impact(COMPASS, p, y[:4], y[4:], [1, 0])[0] == cc.ERR_NONFINITE_INPUT, where
            s = H.simulate(COMPASS, p, y, [1, 0], 0.1, 1e-3, disarmed0=[0, 1])
            assert s.status == cc.ERR_NONFINITE_INPUT and len(s.t) == 0, where
