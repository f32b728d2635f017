"""Derivatives of the inverse dynamics of spatial models by differentiating the recursive Newton-Euler algorithm
(``Equations.inverse_dynamics_derivatives``, ``rodgen.symbolic.rnea_derivatives``) and the RHS Jacobian built on
them (``<prefix>_rhs_jacobian`` with the L^T D L factor along the tree of the velocities).

References: Pinocchio's analytic derivatives (``computeRNEADerivatives``, ``computeABADerivatives``) on URDF
robots with fixed and floating bases and on a chain with spherical and planar joints; for what Pinocchio has no
model of (absolute two-angle links and masses at intermediate fractions of variable segments, whose tree
coordinates are not the model's; springs, dampers, inputs and force elements) the full forward-mode derivative
of the inverse dynamics, every variable carried at once through its own straight-line code
(``Equations.inverse_dynamics_jacobian``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from _robots import robot_file
from conftest import EXAMPLES
from rodgen.codegen import CodegenOptions
from rodgen.codegen import spec as spec_module
from rodgen.codegen.lower import lower
from rodgen.codegen.slots import slots_of
from rodgen.model.core import PointMass, Spring

pin = pytest.importorskip("pinocchio")

#: agreement of two exact derivatives, relative to the largest entry (round-off only)
RTOL = 1e-9


def _function(args: list[list[Any]], outputs: list[Any], assignments: list[tuple[Any, Any]]) -> Any:
    """A NumPy-free Python function of straight-line code (one line per assignment: thousands of them compile in
    well under a second, unlike one lambdified expression)."""
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter
    names: dict[Any, sp.Symbol] = {}

    def safe(sym: Any) -> sp.Symbol:
        if sym not in names:
            names[sym] = sp.Symbol(f"_v{len(names)}")
        return names[sym]
    printer = PythonCodePrinter({"fully_qualified_modules": False})
    lines = ["def f(" + ", ".join(f"_a{g}" for g in range(len(args))) + "):"]
    for g, group in enumerate(args):
        for i, s in enumerate(group):
            lines.append(f"    {safe(s)} = _a{g}[{i}]")
    for s, e in assignments:
        e = sp.sympify(e)
        lines.append(f"    {safe(s)} = {printer.doprint(e.xreplace({x: safe(x) for x in e.free_symbols}))}")
    outs = [sp.sympify(o) for o in outputs]
    lines.append("    return [" + ", ".join(printer.doprint(o.xreplace({x: safe(x) for x in o.free_symbols}))
                                          for o in outs) + "]")
    scope: dict[str, Any] = dict(vars(math))     # sin, cos, sqrt, copysign, tanh, ... of the force laws
    exec("\n".join(lines), scope)
    return scope["f"]


def _evaluator(eqs: Any) -> Any:
    """(q, v, a, u) -> (d g/d q, d g/d qd) of the generated straight-line code, evaluated in Python."""
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None
    n = len(eqs.qd)
    f = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t]], list(d.dq) + list(d.dv), d.assignments)
    p = [eqs.param_values[s] for s in eqs.params]

    def run(q: Any, v: Any, a: Any, u: Any, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        out = np.array(f(list(q), list(v), list(a), list(u), p, [t]), dtype=float)
        return out[:n * n].reshape(n, n), out[n * n:].reshape(n, n)
    return run


def _pair_evaluator(eqs: Any) -> Any:
    """(q, v, a, u) -> (d g/d q, d g/d qd) from the pair products' data (``InverseDynamicsDerivatives.pairs``):
    the rest of dg and the per-velocity vectors evaluated in Python, then the pairs' dot products in NumPy as the
    C loop adds them."""
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.pairs is not None
    lp, n = d.pairs, len(eqs.qd)
    f = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t]],
                  list(lp.dq) + list(lp.dv) + [x for vec in lp.vectors for x in vec], d.assignments)
    p = [eqs.param_values[s] for s in eqs.params]

    def run(q: Any, v: Any, a: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
        out = np.array(f(list(q), list(v), list(a), list(u), p, [0.0]), dtype=float)
        dq, dv = out[:n * n].reshape(n, n), out[n * n:2 * n * n].reshape(n, n)
        J, dAdq, dVdq, dAdv, Fq, Fv, Fa, Fy = np.moveaxis(out[2 * n * n:].reshape(n, 8, 6), 1, 0)
        for dd in range(n):
            for aa in lp.ancestors[dd]:
                dq[aa, dd] += J[aa] @ Fq[dd]
                dv[aa, dd] += J[aa] @ Fv[dd]
                dq[dd, aa] += Fa[dd] @ dAdq[aa] + Fy[dd] @ dVdq[aa]
                dv[dd, aa] += Fa[dd] @ dAdv[aa] + Fy[dd] @ J[aa]
        return dq, dv
    return run


def _node_evaluator(eqs: Any) -> Any:
    """(q, v, a, u, t) -> (d g/d q, d g/d qd) from the per-node form (``InverseDynamicsDerivatives.nodes``) as the C
    loops run it: the rest of dg in Python, each node's forward step from its parent's state and its kind's
    constants, its bodies' sums added into its parent's on the way in, then the pairs' dot products."""
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.nodes is not None and d.pairs is not None
    L, n, N = d.nodes, len(eqs.qd), len(d.nodes.kind)
    rest = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t]], list(L.dq) + list(L.dv), d.assignments)
    fw = [_function([L.P, L.K, [L.x, L.xd, L.xdd], eqs.params], k.forward[1], k.forward[0]) for k in L.kinds]
    bw = [_function([L.C, L.V, eqs.params], k.backward[1], k.backward[0]) for k in L.kinds]
    p = [eqs.param_values[s] for s in eqs.params]

    def run(q: Any, v: Any, a: Any, u: Any, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        out = np.array(rest(list(q), list(v), list(a), list(u), p, [t]), dtype=float)
        dq, dv = out[:n * n].reshape(n, n), out[n * n:].reshape(n, n)
        st, vec, sums = np.zeros((N, 24)), np.zeros((n, 48)), np.zeros((N, len(L.C)))
        for i in range(N):
            par, j = L.parent[i], L.velocity[i]
            K = list(L.constants[i]) + [0.0] * (len(L.K) - len(L.constants[i]))
            o = np.array(fw[L.kind[i]](list(st[par] if par >= 0 else np.zeros(24)), K,
                                       [q[L.coordinate[i]], v[j], a[j]], p), dtype=float)
            st[i], vec[j, :24], sums[i] = o[:24], o[24:48], o[48:]
        for i in reversed(range(N)):
            j = L.velocity[i]
            o = np.array(bw[L.kind[i]](list(sums[i]), list(vec[j, :24]), p), dtype=float)
            vec[j, 24:] = o[:24]
            dq[j, j] += o[24]
            dv[j, j] += o[25]
            if L.parent[i] >= 0:
                sums[L.parent[i]] += sums[i]
        J, dAdq, dVdq, dAdv, Fq, Fv, Fa, Fy = np.moveaxis(vec.reshape(n, 8, 6), 1, 0)
        for dd in range(n):
            for aa in d.pairs.ancestors[dd]:
                dq[aa, dd] += J[aa] @ Fq[dd]
                dv[aa, dd] += J[aa] @ Fv[dd]
                dq[dd, aa] += Fa[dd] @ dAdq[aa] + Fy[dd] @ dVdq[aa]
                dv[dd, aa] += Fa[dd] @ dAdv[aa] + Fy[dd] @ J[aa]
        return dq, dv
    return run


def _urdf(relative: str, floating: bool, keep: Any = None) -> tuple[Any, Any]:
    path = str(robot_file(relative))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    names = [nm for nm in pm.names[1:] if nm != "root_joint"]
    locked = [nm for nm in names if keep is not None and not keep(nm)]
    if locked:
        pm = pin.buildReducedModel(pm, [pm.getJointId(nm) for nm in locked], pin.neutral(pm))
    model = rodgen.from_urdf(path, floating=floating, lock={nm: 0.0 for nm in locked} or None, mimic=False)
    return model, pm


def _maps(coords: list[str], nq: int, nv: int, pm: Any) -> tuple[list[int], list[int]]:
    base_q, base_v = (list(range(7)), list(range(6))) if nq != nv else ([], [])
    joints = coords[len(base_q):]
    return (base_q + [pm.idx_qs[pm.getJointId(c)] for c in joints],
            base_v + [pm.idx_vs[pm.getJointId(c)] for c in joints])


ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False, None),
          "panda": ("panda_description/urdf/panda.urdf", False, lambda j: "finger" not in j),
          "solo12": ("solo_description/robots/solo12.urdf", True, None)}


@pytest.mark.parametrize("name", list(ROBOTS))
def test_inverse_dynamics_derivatives_match_pinocchio(name: str) -> None:
    model, pm = _urdf(*ROBOTS[name])
    eqs = rodgen.derive(model)
    run, pairs = _evaluator(eqs), _pair_evaluator(eqs)
    # a free base has six columns on one node: no per-node form; the fixed-base arms have one
    assert (eqs.inverse_dynamics_derivatives().nodes is None) == ROBOTS[name][1]
    forms = (run, pairs) if ROBOTS[name][1] else (run, pairs, _node_evaluator(eqs))
    nq, nv = len(eqs.q), len(eqs.qd)
    qi, vi = _maps([str(s) for s in eqs.q], nq, nv, pm)
    data = pm.createData()
    rng = np.random.default_rng(5)
    pin.seed(5)
    for _ in range(3):
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        pv, pa = rng.normal(size=nv), rng.normal(size=nv)
        pin.computeRNEADerivatives(pm, data, pq, pv, pa)
        Pq, Pv = data.dtau_dq[np.ix_(vi, vi)], data.dtau_dv[np.ix_(vi, vi)]
        scale = max(1.0, np.abs(Pq).max(), np.abs(Pv).max())
        for ev in forms:     # the straight-line form, the loop form's vectors and pairs, the per-node form
            dq, dv = ev(pq[qi], pv[vi], pa[vi], np.zeros(len(eqs.u)))
            assert np.abs(dq - Pq).max() <= RTOL * scale
            assert np.abs(dv - Pv).max() <= RTOL * scale


def test_spherical_and_planar_joints_match_pinocchio() -> None:
    from test_floating_spatial import _ball_and_slider, _from_pin
    model, pm = _ball_and_slider()
    eqs = rodgen.derive(model)
    run, pairs = _evaluator(eqs), _pair_evaluator(eqs)
    # several velocities on one node: no pair among a node's own columns (revolute 1, ball 3, planar 3, revolute 1)
    assert eqs.inverse_dynamics_derivatives().pairs.count == 3 * 1 + 3 * 4 + 1 * 7
    data = pm.createData()
    rng = np.random.default_rng(8)
    pin.seed(8)
    for _ in range(3):
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a = rng.normal(size=8), rng.normal(size=8)
        pin.computeRNEADerivatives(pm, data, pq, v, a)
        scale = max(1.0, np.abs(data.dtau_dq).max())
        for ev in (run, pairs):
            dq, dv = ev(_from_pin(pq), v, a, np.zeros(len(eqs.u)))
            assert np.abs(dq - data.dtau_dq).max() <= RTOL * scale
            assert np.abs(dv - data.dtau_dv).max() <= RTOL * scale


def _pieces() -> rodgen.SpatialModel:
    """Absolute two-angle links (an undo node: tree coordinates phi - phi_parent), a mass at an intermediate
    fraction of a variable segment (a virtual node: coordinate a*l), a prismatic joint with an offset, a
    spring, dampers, inputs and force elements, two trees with two branches."""
    m = rodgen.SpatialModel("pieces_d", gravity=(0.3, -1.0, -9.5))
    m.parameter("k", 3.0)
    a = m.link("a", axis=(0, 0, 1), input="tau_a", damping=0.2, spring=Spring(2.0, 0.1))
    a.variable("va", 0.4, masses=[PointMass(0.5, fraction=0.6, name="mid"), PointMass(0.3, fraction=1)])
    a.marker("mk", "va", 0.5, xyz=(0.0, 0.05, 0.0), rpy=(0.0, 0.0, 0.5))
    t1 = m.two_angle_link("t1", None)
    t1.rigid("s1", 0.5, masses=[PointMass(0.7, fraction=1.0, name="tip1")])
    t2 = m.two_angle_link("t2", "t1")
    t2.rigid("s2", 0.4, masses=[PointMass(0.4, fraction=1.0, name="tip2")])
    p = m.link("p", "a", joint="prismatic", axis=(0, 1, 0), offset=0.1, input="f_p", damping=0.3)
    p.body(0.4, (0.0, 0.0, 0.1), (0.003, 0.0, 0.0, 0.004, 0.0, 0.002))
    m.point_force("push", "tip2", ("0.3*t", "k*q_a", "-1"))
    m.spring_damper("tendon", "mid", "tip1", stiffness=40.0, damping=0.9, rest_length=0.3)
    return m


def test_tree_coordinates_and_the_rest_of_g_match_the_full_derivative() -> None:
    eqs = rodgen.derive(_pieces())
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and eqs.forces and eqs.u
    # the undo and virtual nodes: the tree is not the velocities one to one, so M factorises densely
    assert d.parents == tuple(range(-1, len(eqs.qd) - 1))
    run = _evaluator(eqs)
    assignments, rows = eqs.inverse_dynamics_jacobian()
    n = len(eqs.q)
    full = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t]], [x for r in rows for x in r],
                     assignments)
    p = [eqs.param_values[s] for s in eqs.params]
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v, a = rng.uniform(-0.8, 0.8, n), rng.normal(size=n), rng.normal(size=n)
        q[[str(s) for s in eqs.q].index("l_va")] = 0.45
        u, t = rng.normal(size=len(eqs.u)), 0.7
        dq, dv = run(q, v, a, u, t)
        ref = np.array(full(list(q), list(v), list(a), list(u), p, [t]), dtype=float).reshape(n, 2 * n)
        scale = max(1.0, np.abs(ref).max())
        assert np.abs(np.hstack([dq, dv]) - ref).max() <= RTOL * scale


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def test_inertia_rate_blocks_are_the_full_b() -> None:
    """B x = v ×* (Y x) - Y (v × x) + x ×* (Y v), built here as a 6x6 from spatial algebra's matrices, equals the
    two blocks the derivative keeps, [[B_w, 0], [-2 [p]×, 0]] with p the momentum, for random bodies and
    velocities; its columns of linear motion are zero (the pairs' loop leaves F_y = Bᵀ J's linear half out)."""
    import sympy as sp

    from rodgen.symbolic.spatial import _inertia, _inertia_rate, _rate_mv, _rate_tmv
    rng = np.random.default_rng(7)
    for _ in range(5):
        m = float(rng.uniform(0.1, 3.0))
        h = rng.normal(size=3)
        A = rng.normal(size=(3, 3))
        Ib = A @ A.T + np.eye(3)
        v = rng.normal(size=6)
        # spatial algebra, angular first: Y = [[Ib, [h]x], [-[h]x, m 1]]; v x = [[w]x, 0], [[nu]x, [w]x]];
        # v x* = -(v x)^T
        Y = np.block([[Ib, _skew(h)], [-_skew(h), m * np.eye(3)]])
        vx = np.block([[_skew(v[:3]), np.zeros((3, 3))], [_skew(v[3:]), _skew(v[:3])]])
        Yv = Y @ v
        fx_Yv = np.block([[_skew(Yv[:3]), _skew(Yv[3:])], [_skew(Yv[3:]), np.zeros((3, 3))]])   # x ×* f = -[f]x̄ x
        B = -vx.T @ Y - Y @ vx - fx_Yv
        assert np.abs(B[:, 3:]).max() < 1e-12
        S = [sp.Float(x) for x in (m, *h, *Ib.ravel(), *v)]
        ms, hs, Is, vs = S[0], S[1:4], [S[4:7], S[7:10], S[10:13]], S[13:19]
        Bw, pm = _inertia_rate(ms, hs, Is, vs, _inertia(ms, hs, Is, vs))
        np.testing.assert_allclose(np.array(Bw, dtype=float), B[:3, :3], atol=1e-12)
        np.testing.assert_allclose(-2 * _skew(np.array(pm, dtype=float)), B[3:, :3], atol=1e-12)
        x = rng.normal(size=6)
        xs = [sp.Float(y) for y in x]
        np.testing.assert_allclose(np.array(_rate_mv(Bw, pm, xs), dtype=float), B @ x, atol=1e-12)
        np.testing.assert_allclose(np.array(_rate_tmv(Bw, pm, xs), dtype=float), B.T @ x, atol=1e-12)


def test_velocity_tree_of_a_floating_robot() -> None:
    """solo12: the base's six velocities a chain, each leg's three a chain below the base's last."""
    model, _ = _urdf(*ROBOTS["solo12"])
    eqs = rodgen.derive(model)
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None
    assert d.parents == (-1, 0, 1, 2, 3, 4, 5, 6, 7, 5, 9, 10, 5, 12, 13, 5, 15, 16)
    spec = lower(eqs, options=CodegenOptions(jacobian=True))
    tree = spec.velocity_tree()
    assert tree["anc"][tree["anc_start"][10]:tree["anc_start"][11]] == (9, 5, 4, 3, 2, 1, 0)
    assert tree["runs"][2 * tree["run_start"][10]:2 * tree["run_start"][11]] == (9, 9, 5, 0)
    # descendants: all twelve leg velocities below the base's last, the foot below a knee
    assert tree["desc"][tree["desc_start"][5]:tree["desc_start"][6]] == tuple(range(6, 18))
    assert tree["desc"][tree["desc_start"][10]:tree["desc_start"][11]] == (11,)
    assert tree["desc_start"][17] == tree["desc_start"][18]
    # the C tables' order, farthest first
    assert tree["anc_far"][tree["anc_start"][10]:tree["anc_start"][11]] == (0, 1, 2, 3, 4, 5, 9)
    assert tree["desc_far"][tree["desc_start"][5]:tree["desc_start"][6]] == tuple(range(17, 5, -1))
    # the block solve's pairs of rows: from the leaves i with i - 1 where i is its parent's only child (the base's
    # last velocity, 5, has four: no pair 6-5); from the roots i with i + 1 where i is i + 1's parent
    assert tree["pair_up"] == (0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1)
    assert tree["pair_down"] == (1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0)
    # every entry of M off a branch of that tree is zero
    M = eqs.M
    for i in range(18):
        for j in range(i):
            a, on = i, False
            while a >= 0:
                on = on or a == j
                a = d.parents[a]
            assert on or M[i, j] == 0, (i, j)


def test_planar_models_take_the_newton_euler_derivative() -> None:
    """A planar model's lowered tree gives the derivative; the planar recursion (kept for comparison) and coupled
    coordinates keep the tangent of the inverse dynamics."""
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    for method, ne in (("recursive", True), ("matrix", True), ("planar", False)):
        eqs = rodgen.derive(model, method=method)
        assert (eqs.inverse_dynamics_derivatives() is not None) == ne, method
        names = {r.name for r in lower(eqs, options=CodegenOptions(jacobian=True)).routines}
        assert ("inverse_dynamics_derivatives" in names) == ne, method
        assert ("inverse_dynamics_tangent" in names) == (not ne), method
    assert rodgen.derive(rodgen.load(EXAMPLES / "solar_panel.yaml"), method="recursive"
                         ).inverse_dynamics_derivatives() is None


def _tangent_evaluator(eqs: Any) -> Any:
    """(q, v, a, u, t) -> d g/d[q, qd] of the tangent path's code (``Equations.inverse_dynamics_tangent``), run
    once per unit direction as rhs_jacobian runs it."""
    tc = eqs.inverse_dynamics_tangent()
    f = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t], tc.seeds], tc.outputs,
                  list(tc.primal) + list(tc.tangent))
    p = [eqs.param_values[s] for s in eqs.params]

    def run(q: Any, v: Any, a: Any, u: Any, t: float) -> np.ndarray:
        cols = []
        for k in range(len(tc.seeds)):
            dx = [1.0 if j == k else 0.0 for j in range(len(tc.seeds))]
            cols.append(f(list(q), list(v), list(a), list(u), p, [t], dx))
        return np.array(cols, dtype=float).T
    return run


PLANAR_EXAMPLES = sorted(p.stem for p in EXAMPLES.glob("*.yaml") if p.stem != "solar_panel")   # coupled


@pytest.mark.parametrize("name", PLANAR_EXAMPLES + ["vl_chain5"])
def test_planar_newton_euler_derivative_matches_the_tangent(name: str) -> None:
    """Both paths of a planar model's RHS Jacobian give the same ∂g/∂[q, qd] to round-off: variable segments
    (vl_chain, pendulum_vl, telescopic_arm), masses at fractions of segments, elastic links (flexible_arm),
    floating bases (compass gait, exo5_walk, gait2d), springs, dampers and force elements (gait2d, snake)."""
    from rodgen.examples import vl_chain
    model = vl_chain(5) if name == "vl_chain5" else rodgen.load(EXAMPLES / f"{name}.yaml")
    eqs = rodgen.derive(model, method="recursive")
    assert eqs.inverse_dynamics_derivatives() is not None
    ne, tangent = _evaluator(eqs), _tangent_evaluator(eqs)
    n = len(eqs.q)
    q0 = np.array(slots_of(eqs, "M").initial_q)       # the model's posture: variable lengths positive
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = q0 + 0.1 * rng.normal(size=n)
        v, a, u = rng.normal(size=n), rng.normal(size=n), rng.normal(size=len(eqs.u))
        dq, dv = ne(q, v, a, u, 0.3)
        ref = tangent(q, v, a, u, 0.3)
        assert np.abs(np.hstack([dq, dv]) - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), name


@pytest.mark.parametrize("name", ["snake", "telescopic_arm", "suspended_chain"])
def test_per_node_form_of_planar_models_matches_the_tangent(name: str) -> None:
    """The per-node form on planar trees: prismatic nodes (telescopic_arm), force elements and inputs (snake),
    against the tangent of the inverse dynamics run once per direction."""
    eqs = rodgen.derive(rodgen.load(EXAMPLES / f"{name}.yaml"), method="recursive")
    nodes, tangent = _node_evaluator(eqs), _tangent_evaluator(eqs)
    n = len(eqs.q)
    q0 = np.array(slots_of(eqs, "M").initial_q)
    rng = np.random.default_rng(9)
    for _ in range(2):
        q = q0 + 0.1 * rng.normal(size=n)
        v, a, u = rng.normal(size=n), rng.normal(size=n), rng.normal(size=len(eqs.u))
        dq, dv = nodes(q, v, a, u, 0.4)
        ref = tangent(q, v, a, u, 0.4)
        assert np.abs(np.hstack([dq, dv]) - ref).max() <= RTOL * max(1.0, np.abs(ref).max()), name


def _parametric_chain(links: int = 5) -> rodgen.SpatialModel:
    """Kinds of node whose constants are parameters (the link length L, a mass m2), tilted axes, a prismatic joint
    with an offset, springs, dampers and inputs."""
    m = rodgen.SpatialModel("param_chain", gravity=(0.2, -0.5, -9.6))
    m.parameter("L", 0.3)
    m.parameter("m2", 0.8)
    parent = None
    for i in range(links):
        kw: dict[str, Any] = {"joint": "prismatic", "offset": 0.05} if i == 2 else {}
        lk = m.link(f"l{i}", parent, axis=(0, 0.6, 0.8) if i % 2 else (1, 0, 0), xyz=("L", 0, 0.1) if parent else
                    (0, 0, 0), rpy=(0.1 * i, 0, 0.2), input=f"u{i}", damping=0.1 * (i + 1), **kw)
        lk.body("m2" if i == 3 else 1.0 + 0.1 * i, (0.1, 0.02, -0.03), (0.01, 1e-3, -2e-3, 0.02, 3e-4, 0.015))
        parent = lk.name
    return m


def test_per_node_form_with_parameters_matches_the_full_derivative() -> None:
    eqs = rodgen.derive(_parametric_chain())
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.nodes is not None
    # the nodes with L in their translation or m2 as their mass: kinds whose code names the parameters
    for name in ("L", "m2"):
        par = eqs.params[[str(s) for s in eqs.params].index(name)]
        assert any(par in e.free_symbols for k in d.nodes.kinds for _, e in k.forward[0]), name
    run = _node_evaluator(eqs)
    assignments, rows = eqs.inverse_dynamics_jacobian()
    n = len(eqs.q)
    full = _function([eqs.q, eqs.qd, eqs.qdd, eqs.u, eqs.params, [eqs.t]], [x for r in rows for x in r],
                     assignments)
    p = [eqs.param_values[s] for s in eqs.params]
    rng = np.random.default_rng(12)
    for _ in range(3):
        q, v, a, u = rng.uniform(-0.8, 0.8, n), rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        dq, dv = run(q, v, a, u, 0.2)
        ref = np.array(full(list(q), list(v), list(a), list(u), p, [0.2]), dtype=float).reshape(n, 2 * n)
        assert np.abs(np.hstack([dq, dv]) - ref).max() <= RTOL * max(1.0, np.abs(ref).max())


def _force_articulated_qdd(monkeypatch: pytest.MonkeyPatch) -> None:
    """rhs_jacobian's qdd by the forward dynamics, not from the factor: with the node loop, M then comes out of
    the derivative routine (ModelSpec.mass_from_derivative), as for the long chains that choose it themselves."""
    monkeypatch.setattr(spec_module, "qdd_from_factor_pays", lambda *args: False)


@pytest.mark.parametrize("links", [5, 11])
@pytest.mark.parametrize("mass_from_derivative", [False, True])
def test_per_node_loop_in_c_matches_central_differences(mass_from_derivative: bool, links: int, build_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled loop over the joints with kinds that read the parameters, at parameters other than the
    defaults, with inputs, springs and dampers: against central differences of the compiled forward dynamics;
    with M from the factor's mass_matrix, and with M from the derivative's pairs. 11 links: runs of ancestors
    longer than a vector of 8 (the pairs' loop's whole vectors and its tail), and the factorisation as its loops
    (the row kernels over the first 8 columns and over all 11)."""
    eqs = rodgen.derive(_parametric_chain(links))
    options = CodegenOptions(jacobian=True, node_loop_min=0)
    if links > 8:
        monkeypatch.setattr(spec_module, "LTDL_STRAIGHT_MAX", 0)
    if mass_from_derivative:
        _force_articulated_qdd(monkeypatch)
    spec = lower(eqs, options=options)
    names = {r.name for r in spec.routines}
    assert "inverse_dynamics_rest" in names and "node_forward0" in names and "inverse_dynamics_vectors" not in names
    assert spec.mass_from_derivative() == mass_from_derivative
    robot = rodgen.build(eqs, build_dir=build_dir, codegen=options, defer_jacobian=False)
    n = robot.nq
    p = {"L": 0.45, "m2": 1.7}
    rng = np.random.default_rng(4)
    q, v, u = rng.uniform(-0.8, 0.8, n), rng.normal(size=n), rng.normal(size=n)
    J = robot.rhs_jacobian(q, v, u, p)
    h = 1e-6
    for k in range(2 * n):
        dy = np.zeros(2 * n)
        dy[k] = h
        fp = robot.forward_dynamics(q + dy[:n], v + dy[n:], u, p)
        fm = robot.forward_dynamics(q - dy[:n], v - dy[n:], u, p)
        col = (fp - fm) / (2 * h)
        assert np.abs(J[n:, k] - col).max() <= 1e-6 * max(1.0, np.abs(col).max()), k


def test_pair_products_need_velocities_one_to_one() -> None:
    """Undo and virtual nodes (tree coordinates that are not the velocities): no loop form, the straight-line code."""
    eqs = rodgen.derive(_pieces())
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.pairs is None
    names = {r.name for r in lower(eqs, options=CodegenOptions(jacobian=True, pair_loop_min=0)).routines}
    assert "inverse_dynamics_derivatives" in names and "inverse_dynamics_vectors" not in names


@pytest.mark.parametrize("name, loop", [("ur5", False), ("solo12", False), ("ur5", True), ("ur5", "nodes"),
                                        ("ur5", "nodes, M"), pytest.param("solo12", True, marks=pytest.mark.slow)])
def test_rhs_jacobian_matches_computeABADerivatives(name: str, loop: Any, build_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The three forms of the derivative routine: the pairs' products as straight-line code, as a loop, and the
    per-node terms as a loop over the joints too, that one also with M from its pairs ("nodes, M")."""
    model, pm = _urdf(*ROBOTS[name])
    nodes = loop in ("nodes", "nodes, M")
    options = CodegenOptions(jacobian=True, pair_loop_min=0 if loop else 10 ** 6,
                             node_loop_min=0 if nodes else 10 ** 6)
    if loop == "nodes, M":
        _force_articulated_qdd(monkeypatch)
    eqs = rodgen.derive(model)
    spec = lower(eqs, options=options)
    names = {r.name for r in spec.routines}
    assert ("inverse_dynamics_vectors" in names) == (loop is True)
    assert ("inverse_dynamics_rest" in names) == nodes
    assert spec.mass_from_derivative() == (loop == "nodes, M")
    robot = rodgen.build(eqs, build_dir=build_dir, codegen=options, defer_jacobian=False)
    nq, nv = robot.nq, robot.nv
    qi, vi = _maps(list(robot.coordinates), nq, nv, pm)
    data = pm.createData()
    rng = np.random.default_rng(3)
    pin.seed(3)
    for _ in range(3):
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        pv = rng.normal(size=nv)
        u = rng.normal(size=robot.nu)
        tau = np.zeros(nv)
        tau[np.array(vi)[nv - robot.nu:]] = u
        J = robot.rhs_jacobian(pq[qi], pv[vi], u)
        pin.computeABADerivatives(pm, data, pq, pv, tau)
        dq, dv = data.ddq_dq[np.ix_(vi, vi)], data.ddq_dv[np.ix_(vi, vi)]
        scale = max(1.0, np.abs(dq).max(), np.abs(dv).max())
        np.testing.assert_array_equal(J[:nv], np.hstack([np.zeros((nv, nv)), np.eye(nv)]))
        assert np.abs(J[nv:, :nv] - dq).max() <= RTOL * scale
        assert np.abs(J[nv:, nv:] - dv).max() <= RTOL * scale


def test_a_tree_over_the_pair_limit_keeps_the_tangent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_PAIRS pairs of joints on one branch the code would grow like n * depth: the tangent instead."""
    from rodgen.symbolic import rnea_derivatives
    model, _ = _urdf(*ROBOTS["ur5"])
    monkeypatch.setattr(rnea_derivatives, "MAX_PAIRS", 20)      # UR5: 6 * 7 / 2 = 21 pairs
    eqs = rodgen.derive(model)
    assert eqs.inverse_dynamics_derivatives() is None
    names = {r.name for r in lower(eqs, options=CodegenOptions(jacobian=True)).routines}
    assert "inverse_dynamics_tangent" in names and "inverse_dynamics_derivatives" not in names
    monkeypatch.setattr(rnea_derivatives, "MAX_PAIRS", 21)
    assert rodgen.derive(model).inverse_dynamics_derivatives() is not None


@pytest.mark.parametrize("bad", [-1, 2.5, True, "300"])
def test_pair_loop_min_must_be_a_count(bad: Any) -> None:
    from rodgen.errors import CodegenError
    with pytest.raises(CodegenError, match="pair_loop_min must be a non-negative integer"):
        CodegenOptions(pair_loop_min=bad)
    with pytest.raises(CodegenError, match="node_loop_min must be a non-negative integer"):
        CodegenOptions(node_loop_min=bad)


def test_the_node_loop_is_derived_only_where_the_code_uses_it(tmp_path: Path) -> None:
    """The per-node form costs about as much SymPy as the rest of the derivative: a model below
    ``node_loop_min`` nodes builds its RHS Jacobian without deriving it; asked for, it is there, with the nodes
    ``node_count`` announced."""
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"))
    rodgen.generate(eqs, tmp_path, options=CodegenOptions(jacobian=True))
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.node_count == 2 and "nodes" not in vars(d)
    assert d.nodes is not None and len(d.nodes.kind) == d.node_count
