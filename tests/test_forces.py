"""Force elements: point forces, viscous and regularised Coulomb friction, compliant ground contact.

Every number is checked against an independent source: the point Jacobians by central
finite differences of the compiled marker positions, the force laws by NumPy written
here from their definitions, closed forms (a block sliding to rest under Coulomb
friction, a box resting on compliant contacts) and the energy balance.
"""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.errors import ModelError
from rodgen.examples import snake
from rodgen.model.loader import load_dict

EPS = 1e-6


def point_jacobian(sys, q, name):
    """dr/dq of a named point by central differences of the compiled positions."""
    J = np.zeros((2, sys.nq))
    for k in range(sys.nq):
        d = np.zeros(sys.nq)
        d[k] = EPS
        J[:, k] = (sys.points(q + d)[name] - sys.points(q - d)[name]) / (2 * EPS)
    return J


def link_axis(sys, q, joint, end):
    """Unit vectors along and across a link from two of its points."""
    pts = sys.points(q)
    a = pts[end] - pts[joint]
    a = a / np.linalg.norm(a)
    return a, np.array([-a[1], a[0]])


# ---------------------------------------------------------------------------- a three-link arm
def arm_model() -> rodgen.Model:
    m = rodgen.Model("force_arm", gravity=(0, "-g"))
    for nm, v in (("g", 9.81), ("c_a", 0.7), ("c_c", 3.0), ("mu", 0.4), ("N", 5.0), ("vs", 0.05),
                  ("k", 3.0e4), ("cd", 0.8), ("mu_g", 0.6), ("kx", 2.0)):
        m.parameter(nm, v)
    parent = None
    for i in (1, 2, 3):
        lk = m.link(f"l{i}", parent=parent, angle="relative", initial=[-1.2, 0.5, 0.4][i - 1])
        lk.rigid(f"s{i}", 0.5, rod=rodgen.Rod(mass=1.0 + 0.2 * i, name=f"c{i}"))
        lk.marker(f"tip{i}", f"s{i}", 1.0, lateral=0.03 * i)
        parent = lk.name
    m.ground = rodgen.Ground(slope=0.1, height=-1.0)
    m.viscous_friction("visc", "c2", along="c_a", across="c_c")
    m.viscous_friction("visc_iso", "tip1", "c_a")
    m.coulomb_friction("coul", "tip2", along="mu", across="2*mu", normal="N", velocity_scale="vs")
    m.coulomb_friction("coul_iso", "c3", "mu", normal="N", velocity_scale="vs")
    m.ground_contact("foot", "tip3", stiffness="k", damping="cd", friction="mu_g", velocity_scale="vs")
    m.point_force("spring", "c1", ("-kx*th_l1", "0.5*th_l2_dot"))
    m.point_force("push", "tip3", inputs=True, frame="link")
    return m


@pytest.fixture(scope="module")
def arm():
    return rodgen.build(arm_model())


@pytest.fixture(scope="module")
def bare_arm():
    m = arm_model()
    m.forces = []
    return rodgen.build(m)


def laws(sys, q, qd, u, p):
    """The force of each element, written here from the laws' definitions (ground frame)."""
    v = {nm: point_jacobian(sys, q, nm) @ qd for nm in ("c1", "c2", "tip1", "tip2", "c3", "tip3")}
    a2, n2 = link_axis(sys, q, "l2.joint", "s2.end")
    a3, n3 = link_axis(sys, q, "l3.joint", "s3.end")
    out = {}
    vc = v["c2"]
    out["visc"] = -p["c_a"] * (a2 @ vc) * a2 - p["c_c"] * (n2 @ vc) * n2
    out["visc_iso"] = -p["c_a"] * v["tip1"]
    vt = v["tip2"]
    out["coul"] = -p["N"] * (p["mu"] * np.tanh((a2 @ vt) / p["vs"]) * a2
                             + 2 * p["mu"] * np.tanh((n2 @ vt) / p["vs"]) * n2)
    v3 = v["c3"]
    out["coul_iso"] = -p["mu"] * p["N"] * v3 / math.sqrt(v3 @ v3 + p["vs"] ** 2)
    s = 0.1
    t, nrm = np.array([math.cos(s), math.sin(s)]), np.array([-math.sin(s), math.cos(s)])
    r = sys.points(q)["tip3"]
    depth = -1.0 * math.cos(s) - nrm @ r
    rate = -(nrm @ v["tip3"])
    fn = p["k"] * depth ** 1.5 * (1 + p["cd"] * rate) if depth > 0 else 0.0
    fn = max(fn, 0.0)
    out["foot"] = fn * nrm - p["mu_g"] * fn * math.tanh((t @ v["tip3"]) / p["vs"]) * t
    out["spring"] = np.array([-p["kx"] * q[0], 0.5 * qd[1]])
    out["push"] = u[-2] * a3 + u[-1] * n3
    return out, v


def arm_state(rng, touching):
    q = np.array([-1.2, 0.5, 0.4]) + 0.3 * rng.normal(size=3)
    qd = 1.5 * rng.normal(size=3)
    if touching:  # put the tip 1 cm into the slope: the contact is active
        q = np.array([-1.3, 0.2, 0.1])
    return q, qd


@pytest.mark.parametrize("touching", [False, True])
def test_generalized_forces_are_jacobian_transpose_times_force(arm, bare_arm, touching):
    rng = np.random.default_rng(7 + touching)
    p = dict(arm.parameters)
    for _ in range(4):
        q, qd = arm_state(rng, touching)
        u = np.r_[rng.normal(size=3), rng.normal(size=2)]
        forces, _ = laws(arm, q, qd, u, p)
        # the element forces the model reports
        got = arm.contact_forces(q, qd, u)
        for nm, f in forces.items():
            np.testing.assert_allclose(got[nm], f, rtol=1e-6, atol=1e-6, err_msg=nm)
        # generalized forces: J^T F of every element, J by finite differences of the point
        at = {"visc": "c2", "visc_iso": "tip1", "coul": "tip2", "coul_iso": "c3", "foot": "tip3",
              "spring": "c1", "push": "tip3"}
        Q = sum(point_jacobian(arm, q, at[nm]).T @ f for nm, f in forces.items())
        # the equations: M qdd + bias = B u (+ F); with the bare arm's M, bias and B
        qdd = arm.forward_dynamics(q, qd, u)
        lhs = bare_arm.mass_matrix(q) @ qdd + bare_arm.bias(q, qd) - bare_arm.input_map(q) @ u[:3]
        np.testing.assert_allclose(lhs, Q, rtol=1e-6, atol=1e-6)
        # inverse dynamics gives back the same generalized forces
        np.testing.assert_allclose(arm.inverse_dynamics(q, qd, qdd), arm.input_map(q) @ u, rtol=1e-9,
                                   atol=1e-8)
        if touching:
            assert got["foot"][1] > 0


def test_input_force_columns_of_B(arm):
    q = np.array([-0.9, 0.3, 0.7])
    a3, n3 = link_axis(arm, q, "l3.joint", "s3.end")
    J = point_jacobian(arm, q, "tip3")
    B = arm.input_map(q)
    assert arm.inputs[-2:] == ["push_x", "push_y"]
    np.testing.assert_allclose(B[:, -2], J.T @ a3, atol=1e-8)
    np.testing.assert_allclose(B[:, -1], J.T @ n3, atol=1e-8)


def test_rhs_jacobian_differentiates_the_laws_exactly(arm):
    rng = np.random.default_rng(3)
    for touching in (False, True):
        q, qd = arm_state(rng, touching)
        u = rng.normal(size=5)
        y = np.r_[q, qd]
        J = arm.rhs_jacobian(q, qd, u)
        h = 1e-7
        Jn = np.column_stack([(arm.rhs(0, y + h * e, u) - arm.rhs(0, y - h * e, u)) / (2 * h) for e in np.eye(6)])
        np.testing.assert_allclose(J, Jn, rtol=1e-5, atol=1e-4 * np.abs(J).max())


def test_methods_agree_with_forces():
    m = arm_model()
    from rodgen.symbolic.numeric import lambdify_equations
    ref = lambdify_equations(rodgen.derive(m, "lagrange"))
    rng = np.random.default_rng(11)
    for method in ("matrix", "recursive"):
        other = lambdify_equations(rodgen.derive(m, method))
        for _ in range(3):
            q, qd = arm_state(rng, False)
            u = rng.normal(size=5)
            np.testing.assert_allclose(other.forward_dynamics(q, qd, u), ref.forward_dynamics(q, qd, u),
                                       rtol=1e-9, atol=1e-9)


def test_contact_never_pulls():
    m = rodgen.Model("pull", base="floating", gravity=(0, 0))
    lk = m.link("b")
    lk.rigid("s", 0.2, rod=rodgen.Rod(mass=1.0, name="cm"))
    m.ground_contact("c", "cm", stiffness=1e4, damping=2.0, exponent=1, friction=0.5)
    sys = rodgen.build(m)
    # 1 cm deep, leaving at 1 m/s: 1 + c*rate = 1 - 2 < 0, the law would pull: zero
    f = sys.contact_forces([0.0, -0.01, 0.0], [0.3, 1.0, 0.0])["c"]
    assert f[0] == 0 and f[1] == 0
    # above the ground: zero whatever the velocity
    f = sys.contact_forces([0.0, 0.01, 0.0], [0.3, -5.0, 0.0])["c"]
    assert f[0] == 0 and f[1] == 0
    # 1 cm deep, entering at 0.1 m/s: k d (1 + c * 0.1), friction against the sliding direction
    f = sys.contact_forces([0.0, -0.01, 0.0], [0.3, -0.1, 0.0])["c"]
    fn = 1e4 * 0.01 * 1.2
    np.testing.assert_allclose(f, [-0.5 * fn * math.tanh(0.3 / 0.01), fn], rtol=1e-12)


# ---------------------------------------------------------------------------- energy balance
def test_friction_only_dissipates_energy():
    sys = rodgen.build(snake(5, friction="coulomb"))
    rng = np.random.default_rng(5)
    names = [f"c{i}" for i in range(1, 6)]
    for _ in range(5):
        q = rng.normal(size=sys.nq) * 0.5
        qd = rng.normal(size=sys.nq)
        y = np.r_[q, qd]
        f = sys.rhs(0.0, y)
        h = 1e-6
        E = [sum(sys.energy((y + s * h * f)[:sys.nq], (y + s * h * f)[sys.nq:])) for s in (-1, 1)]
        dEdt = (E[1] - E[0]) / (2 * h)
        forces = sys.contact_forces(q, qd)
        pts = [sys.points(q + s * h * qd) for s in (-1, 1)]
        power = sum(forces[f"drag{i}"] @ ((pts[1][nm] - pts[0][nm]) / (2 * h)) for i, nm in enumerate(names, 1))
        assert power < 0
        np.testing.assert_allclose(dEdt, power, rtol=1e-5)
    # along a free motion the mechanical energy never increases
    y0 = np.r_[np.zeros(sys.nq), rng.normal(size=sys.nq)]
    res = sys.simulate(y0, 2.0, 1e-4, store_every=10)
    assert res.ok
    E = res.total_energy
    assert np.all(np.diff(E) <= 1e-12 * E[0])
    assert E[-1] < 0.5 * E[0]
    # the result carries the element forces; the dissipated energy is the integral of F.v
    P = np.zeros(len(res.t))
    pts = sys.points(res.q)
    for i, nm in enumerate(names, 1):
        J = np.stack([point_jacobian(sys, q, nm) for q in res.q[::50]])
        v = np.einsum("nij,nj->ni", J, res.qd[::50])
        P[::50] += np.einsum("ni,ni->n", res.element_forces[f"drag{i}"][::50], v)
    assert pts["c1"].shape == (len(res.t), 2)
    assert np.all(P[::50] <= 0)


# ---------------------------------------------------------------------------- closed forms
def block_model(kind: str) -> rodgen.Model:
    m = rodgen.Model(f"block_{kind}", base="floating", gravity=(0, 0))
    m.parameter("m", 2.0)
    m.parameter("g", 9.81)
    m.parameter("mu", 0.3)
    m.parameter("vs", 1e-3)
    lk = m.link("b")
    lk.rigid("s", 0.1, rod=rodgen.Rod(mass="m", name="cm"))
    if kind == "isotropic":
        m.coulomb_friction("floor", "cm", "mu", normal="m*g", velocity_scale="vs")
    else:
        m.coulomb_friction("floor", "cm", along="mu", across="3*mu", normal="m*g", velocity_scale="vs")
    return m


@pytest.mark.parametrize("kind", ["isotropic", "anisotropic"])
def test_sliding_block_stops_at_the_closed_form_time(kind):
    sys = rodgen.build(block_model(kind))
    v0, mu, g, vs = 1.5, 0.3, 9.81, 1e-3
    t_stop = v0 / (mu * g)                    # constant deceleration mu g
    x_stop = v0 ** 2 / (2 * mu * g)
    y0 = np.array([0, 0, 0, v0, 0, 0.0])      # sliding along the link axis (+x)
    res = sys.simulate(y0, 1.5 * t_stop, 1e-5, store_every=10)
    assert res.ok
    v = res.qd[:, 0]
    # before the stop: v = v0 - mu g t up to the regularisation (speeds within a few vs)
    before = res.t < t_stop - 0.02
    np.testing.assert_allclose(v[before], v0 - mu * g * res.t[before], atol=5 * vs)
    # it has stopped by t_stop plus a few regularisation times vs/(mu g), and stays there
    t_reg = vs / (mu * g)
    after = res.t > t_stop + 10 * t_reg
    assert np.all(np.abs(v[after]) < 2 * vs)
    first = res.t[np.argmax(v < 2 * vs)]
    assert abs(first - t_stop) < 5 * t_reg
    np.testing.assert_allclose(res.q[-1, 0], x_stop, atol=10 * vs * t_stop)
    np.testing.assert_allclose(res.q[:, 1], 0, atol=1e-12)


def test_box_rests_on_compliant_contacts():
    m = rodgen.Model("box_rest", base="floating", gravity=(0, "-g"))
    m.parameter("g", 9.81)
    m.parameter("k", 1e5)
    lk = m.link("body")
    lk.rigid("s", 0.4, rod=rodgen.Rod(mass=4.0, name="cm"))
    lk.marker("heel", "s", 0.0)
    lk.marker("toe", "s", 1.0)
    for nm in ("heel", "toe"):
        m.ground_contact(f"{nm}_c", nm, stiffness="k", exponent=1.5, damping=5.0, friction=0.8)
    sys = rodgen.build(m)
    res = sys.simulate(np.array([0, 0.02, 0, 0, 0, 0.0]), 2.0, 1e-4, store_every=100)
    assert res.ok
    # at rest each contact carries half the weight: k d^1.5 = m g / 2
    depth = (4.0 * 9.81 / 2 / 1e5) ** (1 / 1.5)
    np.testing.assert_allclose(res.q[-1, 1], -depth, rtol=1e-4)
    fn = res.element_forces["heel_c"][-1, 1] + res.element_forces["toe_c"][-1, 1]
    np.testing.assert_allclose(fn, 4.0 * 9.81, rtol=1e-6)
    np.testing.assert_allclose(res.element_forces["heel_c"][-1, 0], 0, atol=1e-9)


# ---------------------------------------------------------------------------- the snake
def serpenoid(sys, n, t_end, *, alpha=0.6, freq=0.5):
    t = np.arange(0.0, t_end + 1e-9, 0.01)
    q = np.zeros((len(t), sys.nq))
    qd = np.zeros_like(q)
    w, d = 2 * np.pi * freq, 2 * np.pi / (n - 1)
    for i in range(2, n + 1):
        j = sys.coordinates.index(f"th{i}")
        q[:, j] = alpha * np.sin(w * t + (i - 2) * d)
        qd[:, j] = alpha * w * np.cos(w * t + (i - 2) * d)
    return rodgen.PD(rodgen.Reference(t, q, qd), kp=20.0, kd=1.0)


def test_serpenoid_snake_crawls_only_with_anisotropic_friction():
    dist = {}
    for friction in ("anisotropic", "isotropic"):
        sys = rodgen.build(snake(5, friction=friction))
        res = sys.simulate(sys.initial_state(), 8.0, 1e-3, controller=serpenoid(sys, 5, 8.0), store_every=100)
        assert res.ok
        cm = np.mean([sys.points(res.q)[f"c{i}"] for i in range(1, 6)], axis=0)
        dist[friction] = cm[-1] - cm[len(cm) // 4]
        # a shape change alone cannot move the centre of mass with isotropic viscous friction
    assert dist["anisotropic"][0] > 0.5               # forward: towards the head (+x)
    assert np.linalg.norm(dist["isotropic"]) < 0.01 * np.linalg.norm(dist["anisotropic"])


# ---------------------------------------------------------------------------- model format
def test_yaml_round_trip_and_equations_show_forces(tmp_path, capsys):
    m = arm_model()
    text = rodgen.dump(m, tmp_path / "arm.yaml")
    assert "forces:" in text
    again = rodgen.load(tmp_path / "arm.yaml")
    assert again.validate().forces == m.validate().forces
    from rodgen.cli import main
    assert main(["equations", str(tmp_path / "arm.yaml")]) == 0
    out = capsys.readouterr().out
    assert "= B u + F" in out and "force element foot (ground_contact at tip3)" in out and "\nF =" in out


def base_dict():
    return {"name": "bad", "gravity": [0, 0], "parameters": {"c": 1.0},
            "links": [{"name": "a", "segments": [{"name": "s", "length": 1.0, "rod": {"mass": 1.0, "name": "cm"}}],
                       "markers": [{"name": "tip", "segment": "s", "fraction": 1}]}]}


@pytest.mark.parametrize("force, where, message", [
    ({"name": "f", "type": "viscous", "at": "cm", "along": -1, "across": 2}, "force 'f'.along", "must not be negative"),
    ({"name": "f", "type": "viscous", "at": "cm", "coefficient": "-c"}, "force 'f'.coefficient",
     "must not be negative"),
    ({"name": "f", "type": "viscous", "at": "cm", "coefficient": "c/0"}, "force 'f'.coefficient",
     "cannot be evaluated"),
    ({"name": "f", "type": "viscous", "at": "cm", "coefficient": "1e308*10"}, "force 'f'.coefficient",
     "not finite"),
    ({"name": "f", "type": "viscous", "at": "nose", "coefficient": 1}, "force 'f'.at", "unknown point 'nose'"),
    ({"name": "f", "type": "coulomb", "at": "cm", "coefficient": 1, "normal": 1, "velocity_scale": 0},
     "force 'f'.velocity_scale", "must be positive"),
    ({"name": "f", "type": "coulomb", "at": "cm", "coefficient": 1}, "force 'f'.normal", "missing 'normal'"),
    ({"name": "f", "type": "ground_contact", "at": "tip", "stiffness": 0}, "force 'f'.stiffness",
     "must be positive"),
    ({"name": "f", "type": "ground_contact", "at": "tip", "stiffness": 1, "exponent": 0.5},
     "force 'f'.exponent", "at least 1"),
    ({"name": "f", "type": "ground_contact", "at": "tip", "stiffness": 1, "damping": -0.1},
     "force 'f'.damping", "must not be negative"),
    ({"name": "f", "type": "viscous", "at": "cm", "coefficient": 1, "normal": 3}, "force 'f'",
     "unknown field 'normal'"),
    ({"name": "f", "type": "spring", "at": "cm"}, "force 'f'.type", "must be one of"),
    ({"name": "f", "type": "point_force", "at": "cm", "force": ["phi_b", 0]}, "force 'f'.force[0]",
     "'phi_b' is neither a parameter"),
    ({"name": "f", "type": "point_force", "at": "cm"}, "force 'f'", "either force"),
    ({"name": "f", "type": "point_force", "at": "cm", "inputs": True, "frame": "body"}, "force 'f'.frame",
     "must be one of world, link"),
])
def test_bad_force_elements_name_the_element_and_field(force, where, message):
    d = base_dict()
    d["forces"] = [force]
    with pytest.raises(ModelError) as exc:
        load_dict(d, source="bad.yaml")
    text = str(exc.value)
    assert where in text and message in text, text


def test_builder_refuses_a_field_of_another_type():
    m = rodgen.Model("x")
    with pytest.raises(TypeError, match="takes no field 'stiffness'"):
        m.force("f", "viscous", "cm", stiffness=1.0)


def test_duplicate_force_and_input_names():
    d = base_dict()
    d["forces"] = [{"name": "f", "type": "viscous", "at": "cm", "coefficient": 1},
                   {"name": "f", "type": "viscous", "at": "tip", "coefficient": 1}]
    with pytest.raises(ModelError, match="force name 'f' is used twice"):
        load_dict(d)
    d["forces"] = [{"name": "f", "type": "point_force", "at": "cm", "inputs": ["tau_a", "g"]}]
    with pytest.raises(ModelError, match="input 'tau_a' has the same name"):
        load_dict(d)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_generated_c_with_contacts_is_strict_c99(tmp_path):
    from rodgen import generate
    generate(arm_model(), tmp_path)
    src = [str(p) for p in tmp_path.glob("*.c")]
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", *src],
                   cwd=tmp_path, check=True, capture_output=True)


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_builder_refuses_non_finite_coefficients(value):
    m = rodgen.Model("x")
    m.link("a").rigid("s", 1.0, rod=rodgen.Rod(mass=1.0, name="cm"))
    m.viscous_friction("f", "cm", value)
    with pytest.raises(ModelError, match=r"force 'f'.coefficient: .* is not a finite number"):
        m.validate()


def test_coupled_model_forces_in_the_independent_coordinate():
    # the solar panel boom: q2 = -2 q1, q3 = 2 q1; drag at the tip, a force of q1 and its rate at link 2's end
    from rodgen.symbolic.numeric import lambdify_equations
    m = rodgen.load(EXAMPLES / "solar_panel.yaml")
    bare = lambdify_equations(rodgen.derive(m, "matrix"))
    m.parameter("c_t", 0.3)
    m.parameter("c_n", 2.0)
    m.viscous_friction("drag", "tube3.end", along="c_t", across="c_n")
    m.point_force("push", "tube2.end", ("0", "-2*q1 - q1_dot"))
    for method in ("matrix", "lagrange"):
        num = lambdify_equations(rodgen.derive(m, method))
        q, qd = np.array([0.3]), np.array([0.7])

        def J(name):
            return ((num.points(q + EPS)[name] - num.points(q - EPS)[name]) / (2 * EPS)).reshape(2, 1)
        pts = num.points(q)
        a = pts["tube3.end"] - pts["link3.joint"]
        a = a / np.linalg.norm(a)
        n = np.array([-a[1], a[0]])
        v = (J("tube3.end") @ qd)
        drag = -0.3 * (a @ v) * a - 2.0 * (n @ v) * n
        push = np.array([0.0, -2 * q[0] - qd[0]])
        f = num.contact_forces(q, qd)
        np.testing.assert_allclose(f["drag"], drag, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(f["push"], push, rtol=1e-12)
        Q = J("tube3.end").T @ drag + J("tube2.end").T @ push
        np.testing.assert_allclose(bare.bias(q, qd) - num.bias(q, qd), Q, rtol=1e-7, atol=1e-10)


def test_latex_shows_the_force_column():
    eqs = rodgen.derive(block_model("isotropic"), "matrix")
    tex = eqs.latex()
    assert r"= B(q)\,u + F(q,\dot{q})" in tex and "F = " in tex
