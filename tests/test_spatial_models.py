"""Spatial models: a planar model described spatially gives the planar model's dynamics; Borisov's two-angle
link against hand-derived Lagrange equations (n = 1, 2); bad spatial models give ModelErrors naming the place."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen import PointMass, Rod

# -------------------------------------------------------------------------------------------------------------
# the planar special case
# -------------------------------------------------------------------------------------------------------------


def _planar() -> rodgen.Model:
    m = rodgen.Model("pl", gravity=(0.0, -9.81))
    m.parameter("L", 0.6)
    a = m.link("A", angle="relative", origin=(0.1, 0.2), offset=0.2)
    a.rigid("a1", "L", masses=[PointMass(0.7, fraction=0.5, name="amass")], rod=Rod(1.1))
    a.variable("a2", 0.4, masses=[PointMass(0.5, fraction=1.0)], rods=[Rod(0.3, inertia=0.01, fraction=1,
                                                                           offset=-0.1)])
    b = m.link("B", parent="A", angle="relative", offset=0.3)
    b.telescopic("b1", length=0.5, outer_length=0.4, outer_mass=0.6, inner_length=0.35, inner_mass=0.4)
    c = m.link("C", parent="A", at="a1", angle="relative")
    c.rigid("c1", 0.3, masses=[PointMass(0.4, fraction=1.0, name="ctip")])
    return m


def _spatial() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("sp", gravity=(0.0, -9.81, 0.0))
    m.parameter("L", 0.6)
    a = m.link("A", xyz=(0.1, 0.2, 0.0), offset=0.2)
    a.rigid("a1", "L", masses=[PointMass(0.7, fraction=0.5, name="amass")], rod=Rod(1.1))
    a.variable("a2", 0.4, masses=[PointMass(0.5, fraction=1.0)], rods=[Rod(0.3, inertia=0.01, fraction=1,
                                                                           offset=-0.1)])
    b = m.link("B", "A", offset=0.3)
    b.telescopic("b1", length=0.5, outer_length=0.4, outer_mass=0.6, inner_length=0.35, inner_mass=0.4)
    c = m.link("C", "A", at="a1")
    c.rigid("c1", 0.3, masses=[PointMass(0.4, fraction=1.0, name="ctip")])
    return m


def test_planar_model_described_spatially_has_the_same_dynamics(build_dir: Path) -> None:
    planar = rodgen.build(_planar(), build_dir=build_dir)
    spatial = rodgen.build(_spatial(), build_dir=build_dir)
    assert spatial.nq == planar.nq == spatial.nv and spatial.nu == planar.nu
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, planar.nq)
        q[[1, 3]] = rng.uniform(0.3, 0.7, 2)          # the variable and telescopic lengths
        qd, u = rng.normal(size=planar.nq), rng.normal(size=planar.nu)
        assert np.allclose(spatial.mass_matrix(q), planar.mass_matrix(q), rtol=1e-12, atol=1e-12)
        assert np.allclose(spatial.bias(q, qd), planar.bias(q, qd), rtol=1e-12, atol=1e-12)
        assert np.allclose(spatial.forward_dynamics(q, qd, u), planar.forward_dynamics(q, qd, u), rtol=1e-11,
                           atol=1e-11)
        assert np.allclose(spatial.energy(q, qd), planar.energy(q, qd), rtol=1e-12, atol=1e-12)
        p2, p3 = planar.points(q), spatial.points(q)
        for name in ("A.joint", "a1.end", "a2.end", "B.joint", "b1.end", "amass", "ctip"):
            assert np.allclose(p3[name], [*p2[name], 0.0], atol=1e-12), name


def test_planar_model_described_spatially_derives_the_same_equations() -> None:
    """The spatial recursion and the planar matrix method give the same M, h, G as expressions."""
    planar = rodgen.derive(_planar(), method="matrix").expanded()
    spatial = rodgen.derive(_spatial(), method="recursive").expanded()
    ren = dict(zip(spatial.q + spatial.qd, planar.q + planar.qd))
    rng = np.random.default_rng(9)
    x = dict(zip(planar.q + planar.qd, rng.uniform(0.3, 0.7, 2 * len(planar.q))))
    for name in ("M", "h", "G"):
        a = getattr(planar, name).xreplace(planar.param_values).xreplace(x)
        b = getattr(spatial, name).xreplace(spatial.param_values).xreplace(ren).xreplace(x)
        assert np.allclose(np.array(a.evalf(), dtype=float), np.array(b.evalf(), dtype=float), atol=1e-12)


# -------------------------------------------------------------------------------------------------------------
# Borisov's two-angle link
# -------------------------------------------------------------------------------------------------------------


def _borisov(n: int) -> rodgen.SpatialModel:
    m = rodgen.SpatialModel(f"borisov{n}")
    for i in range(1, n + 1):
        m.parameter(f"m{i}", 0.8 + 0.3 * i)
        m.parameter(f"l{i}", 0.5 + 0.2 * i)
        lk = m.two_angle_link(f"b{i}", None if i == 1 else f"b{i - 1}")
        lk.rigid(f"s{i}", f"l{i}", masses=[PointMass(f"m{i}", fraction=1.0)])
    return m


def _hand_lagrange(n: int) -> tuple[list[sp.Symbol], list[sp.Symbol], sp.Matrix, sp.Matrix, sp.Matrix]:
    """M, h, G written out by hand from T = sum m_k |r_k'|^2 / 2, r_k = sum_{i<=k} l_i e_i,
    e_i = (cos psi_i cos phi_i, cos psi_i sin phi_i, sin psi_i), V = g sum m_k z_k, q = (phi_1, psi_1, ...).

    With de/dphi = cos psi (-sin phi, cos phi, 0) and de/dpsi = (-sin psi cos phi, -sin psi sin phi, cos psi):
    de_i/dphi_i . de_j/dphi_j = cos psi_i cos psi_j cos(phi_i - phi_j),
    de_i/dphi_i . de_j/dpsi_j = cos psi_i sin psi_j sin(phi_i - phi_j),
    de_i/dpsi_i . de_j/dpsi_j = sin psi_i sin psi_j cos(phi_i - phi_j) + cos psi_i cos psi_j,
    each times mu_ij l_i l_j with mu_ij the mass beyond both links; h from M by Christoffel symbols."""
    phi = [sp.Symbol(f"phi_b{i}") for i in range(1, n + 1)]
    psi = [sp.Symbol(f"psi_b{i}") for i in range(1, n + 1)]
    mass = [0.8 + 0.3 * i for i in range(1, n + 1)]
    ln = [0.5 + 0.2 * i for i in range(1, n + 1)]
    q = [x for i in range(n) for x in (phi[i], psi[i])]
    qd = [sp.Symbol(f"{s}_d") for s in q]
    M = sp.zeros(2 * n, 2 * n)
    for i in range(n):
        for j in range(n):
            mu = sum(mass[max(i, j):])
            c = mu * ln[i] * ln[j]
            d, ci, cj, si, sj = phi[i] - phi[j], sp.cos(psi[i]), sp.cos(psi[j]), sp.sin(psi[i]), sp.sin(psi[j])
            M[2 * i, 2 * j] = c * ci * cj * sp.cos(d)
            M[2 * i, 2 * j + 1] = c * ci * sj * sp.sin(d)
            M[2 * i + 1, 2 * j] = -c * si * cj * sp.sin(d)
            M[2 * i + 1, 2 * j + 1] = c * (si * sj * sp.cos(d) + ci * cj)
    G = sp.zeros(2 * n, 1)
    for i in range(n):
        G[2 * i + 1] = 9.81 * sum(mass[i:]) * ln[i] * sp.cos(psi[i])
    h = sp.zeros(2 * n, 1)
    for a in range(2 * n):
        h[a] = sum((sp.diff(M[a, b], q[c]) - sp.diff(M[b, c], q[a]) / 2) * qd[b] * qd[c]
                   for b in range(2 * n) for c in range(2 * n))
    return q, qd, M, h, G


@pytest.mark.parametrize("n", [1, 2])
def test_two_angle_link_matches_hand_derived_lagrange(n: int, build_dir: Path) -> None:
    robot = rodgen.build(_borisov(n), build_dir=build_dir)
    assert robot.coordinates == [x for i in range(1, n + 1) for x in (f"phi_b{i}", f"psi_b{i}")]
    q_s, qd_s, M, h, G = _hand_lagrange(n)
    rng = np.random.default_rng(20 + n)
    for _ in range(4):
        q = rng.uniform(-1.2, 1.2, 2 * n)
        qd = rng.normal(size=2 * n)
        x = {**dict(zip(q_s, q)), **dict(zip(qd_s, qd))}
        Mh = np.array(M.xreplace(x).evalf(), dtype=float)
        bh = np.array((h + G).xreplace(x).evalf(), dtype=float).ravel()
        assert np.allclose(robot.mass_matrix(q), Mh, rtol=1e-12, atol=1e-12)
        assert np.allclose(robot.gravity(q), np.array(G.xreplace(x).evalf(), dtype=float).ravel(), atol=1e-12)
        assert np.allclose(robot.bias(q, qd), bh, rtol=1e-11, atol=1e-11)
        assert np.allclose(robot.forward_dynamics(q, qd), np.linalg.solve(Mh, -bh), rtol=1e-9, atol=1e-9)
    tip = robot.points(np.zeros(2 * n))[f"s{n}.end"]
    assert np.allclose(tip, [sum(0.5 + 0.2 * i for i in range(1, n + 1)), 0.0, 0.0])


def test_two_angle_link_lagrange_reference_agrees() -> None:
    """The spatial Lagrange reference (plain rotation matrices, absolute angles written directly) and the
    spatial recursion agree on the two-link chain."""
    rec = rodgen.derive(_borisov(2), method="recursive").expanded()
    lag = rodgen.derive(_borisov(2), method="lagrange")
    x = dict(zip(rec.q + rec.qd, [0.3, -0.4, 1.1, 0.2, 0.5, -0.7, 0.9, 0.1]))
    for name in ("M", "h", "G"):
        a = getattr(rec, name).xreplace(rec.param_values).xreplace(x)
        b = getattr(lag, name).xreplace(lag.param_values).xreplace(x)
        assert np.allclose(np.array(a.evalf(), dtype=float), np.array(b.evalf(), dtype=float), atol=1e-12)


# -------------------------------------------------------------------------------------------------------------
# bad spatial models
# -------------------------------------------------------------------------------------------------------------


def _good() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("arm")
    a = m.link("base", axis=(0, 0, 1))
    a.body(1.0, (0.1, 0, 0), (0.01, 0, 0, 0.02, 0, 0.02))
    b = m.link("upper", "base", axis=(0, 1, 0), xyz=(0, 0, 0.3))
    b.body(1.0, (0.2, 0, 0), (0.01, 0, 0, 0.02, 0, 0.02))
    b.variable("ext", 0.3, masses=[PointMass(0.5, fraction=1)])
    m.fixed("tool", "upper", xyz=(0.1, 0, 0))
    return m


def _edit(fn):  # type: ignore[no-untyped-def]
    m = _good()
    fn(m)
    return m


BAD = [
    (lambda m: setattr(m.links[1].joint, "type", "ball"), "link 'upper'.joint.type", "unknown joint type 'ball'"),
    (lambda m: setattr(m.links[1].joint, "axis", (0, 0, 0)), "link 'upper'.joint.axis", "zero vector"),
    (lambda m: setattr(m.links[1].joint, "xyz", (0, 0)), "link 'upper'.joint.xyz", "three components"),
    (lambda m: setattr(m.links[0].bodies[0], "inertia", (1, 0, 0, 0.1, 0, 0.1)), "link 'base'.bodies[0].inertia",
     "triangle inequality"),
    (lambda m: setattr(m.links[0].bodies[0], "inertia", [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]),
     "link 'base'.bodies[0].inertia", "symmetric"),
    (lambda m: setattr(m.links[0].bodies[0], "inertia", (1, 2, 0, 1, 0, 1)), "link 'base'.bodies[0].inertia",
     "not positive semidefinite"),
    (lambda m: setattr(m.links[0].bodies[0], "mass", -1), "link 'base'.bodies[0].mass", "must not be negative"),
    (lambda m: setattr(m.links[1], "parent", "nowhere"), "link 'upper'.parent", "unknown parent 'nowhere'"),
    (lambda m: setattr(m.links[0], "parent", "tool"), "link 'base'.parent", "cycle"),
    (lambda m: setattr(m.links[2].joint, "coordinate", "qt"), "link 'tool'.joint.coordinate",
     "fixed joint has no coordinate"),
    (lambda m: m.two_angle_link("ta", "upper"), "link 'ta'.joint.angles", "absolute angles need a parent"),
    (lambda m: m.link("empty", "tool", axis=(1, 0, 0)), "link 'empty'", "moves no mass"),
    (lambda m: setattr(m.links[1].segments[0].masses[0], "lateral", 0.1), "link 'upper', segment 'ext'.masses[0]",
     "lateral must be 0"),
    (lambda m: setattr(m, "gravity", (0, -9.81)), "gravity", "three components"),
    (lambda m: m.link("base", axis=(0, 0, 1)), "link 'base'", "duplicate link name"),
    (lambda m: setattr(m.links[1], "at", "elbow"), "link 'upper'.at", "unknown attachment point 'elbow'"),
    (lambda m: setattr(m.links[1].joint, "coordinate", "q_base"), "link 'upper'.joint.coordinate",
     "same name"),
    (lambda m: setattr(m.links[1].joint, "axis", ("k", 0, 1)), "link 'upper'.joint.axis[0]",
     "parameter 'k' is used but never defined"),
]


@pytest.mark.parametrize("edit,where,what", BAD, ids=[w for _, w, _ in BAD])
def test_bad_spatial_models_name_the_place(edit, where: str, what: str) -> None:  # type: ignore[no-untyped-def]
    m = _edit(edit)
    with pytest.raises(rodgen.ModelError) as err:
        m.validate()
    assert where in str(err.value) and what in str(err.value), str(err.value)


def test_validation_does_not_change_the_model() -> None:
    m = _good()
    before = copy.deepcopy(m)
    vm = m.validate()
    assert m == before
    assert [c.name for c in vm.coordinates()] == ["q_base", "q_upper", "l_ext"]
    assert [u.name for u in vm.inputs()] == ["tau_base", "tau_upper", "F_ext"]


def test_readme_spatial_example_runs_as_written(build_dir: Path) -> None:
    """The spatial example of docs/spatial.md: the tool point at q = 0 is where the link lengths put it by hand, and
    the shoulder's column of its Jacobian is z x r (a rotation about the vertical axis through the origin)."""
    import re
    text = (Path(__file__).resolve().parents[1] / "docs" / "spatial.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "SpatialModel" in b)
    ns: dict = {}
    exec(block.replace("rodgen.build(m)", f"rodgen.build(m, build_dir={str(build_dir)!r})"), ns)
    robot, q = ns["robot"], ns["q"]
    tcp = np.array([0.3 + 0.25 + 0.05, 0.0, 0.33])
    assert np.allclose(ns["pos"], tcp, atol=1e-12)
    assert np.allclose(ns["rot"], [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-4)   # Ry(1.5708)
    J = robot.frame_jacobians(q)["tcp"]
    assert np.allclose(J[:3, 0], np.cross([0, 0, 1], tcp), atol=1e-12) and np.allclose(J[3:, 0], [0, 0, 1])


def test_coupled_spatial_model_against_lagrange_and_finite_differences(build_dir: Path) -> None:
    """A coupling (a URDF mimic joint, q_c = 2 q_b + 0.1): the recursion reduced by virtual work agrees with
    Lagrange's equations of the reference, and the compiled frame Jacobians with central differences of the
    compiled frame positions."""
    m = rodgen.SpatialModel("coupled")
    a = m.link("a", axis=(0, 0, 1))
    a.body(1.0, (0.2, 0, 0), (0.01, 0, 0, 0.02, 0, 0.02))
    b = m.link("b", "a", axis=(0, 1, 0), xyz=(0.3, 0, 0))
    b.body(0.5, (0.1, 0, 0.05), (0.01, 0, 0, 0.01, 0, 0.01))
    c = m.link("c", "b", axis=(1, 0, 0), xyz=(0.2, 0, 0))
    c.body(0.3, (0.1, 0.02, 0), (0.002, 0, 0, 0.003, 0, 0.003))
    m.couple("q_c", "2*q_b + 0.1")
    rec = rodgen.derive(m, method="recursive").expanded()
    lag = rodgen.derive(m, method="lagrange")
    assert [str(s) for s in rec.q] == [str(s) for s in lag.q] == ["q_a", "q_b"]
    x = dict(zip(rec.q + rec.qd, [0.3, -0.5, 0.7, 0.2]))
    for name in ("M", "h", "G"):
        va = getattr(rec, name).xreplace(rec.param_values).xreplace(x)
        vb = getattr(lag, name).xreplace(lag.param_values).xreplace(x)
        assert np.allclose(np.array(va.evalf(), dtype=float), np.array(vb.evalf(), dtype=float), atol=1e-12)
    robot = rodgen.build(m, build_dir=build_dir)
    q, h = np.array([0.3, -0.5]), 1e-6
    jac = robot.frame_jacobians(q)["c.joint"]
    for j in range(2):
        dq = h * np.eye(2)[j]
        (p1, R1), (p0, R0) = robot.frames(q + dq)["c.joint"], robot.frames(q - dq)["c.joint"]
        assert np.allclose(jac[:3, j], (p1 - p0) / (2 * h), atol=1e-8)
        W = (R1 - R0) / (2 * h) @ robot.frames(q)["c.joint"][1].T     # skew matrix of the angular velocity
        assert np.allclose(jac[3:, j], [W[2, 1], W[0, 2], W[1, 0]], atol=1e-8)


@pytest.mark.parametrize("full", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_recursion_and_lagrange_agree_on_the_other_pieces(full: bool) -> None:
    """What Pinocchio's test leaves out, against the Lagrange reference: a relative two-angle link, a mass at
    an intermediate fraction of a variable segment (a virtual joint: the mass matrix path), a child at a
    marker turned by rpy, frames and Jacobians; in full (slow: a minute of Lagrange) also a telescopic
    segment and a prismatic joint with an offset."""
    m = rodgen.SpatialModel("pieces", gravity=(0.3, -1.0, -9.5))
    a = m.link("a", axis=(0, 0, 1))
    a.variable("va", 0.4, masses=[PointMass(0.5, fraction=0.6, name="mid"), PointMass(0.3, fraction=1)])
    a.marker("mk", "va", 0.5, xyz=(0.0, 0.05, 0.0), rpy=(0.0, 0.0, 0.5))
    t = m.two_angle_link("t", "a", angles="relative", at="mk")
    if full:
        t.telescopic("tel", length=0.5, outer_length=0.4, outer_mass=0.6, inner_length=0.35, inner_mass=0.4)
        p = m.link("p", "t", joint="prismatic", axis=(0, 1, 0), offset=0.1)
        p.body(0.4, (0.0, 0.0, 0.1), (0.003, 0.0, 0.0, 0.004, 0.0, 0.002))
    else:
        t.variable("tel", 0.5, masses=[PointMass(0.6, fraction=1)])
    rec = rodgen.derive(m, method="recursive")
    assert rec.articulated is None          # the mass at fraction 0.6 of a variable segment
    rec = rec.expanded()
    lag = rodgen.derive(m, method="lagrange")
    rng = np.random.default_rng(3)
    x = dict(zip(rec.q + rec.qd, rng.uniform(-0.8, 0.8, 2 * len(rec.q))))
    x[rec.q[1]] = 0.45                        # the length of va
    x[rec.q[4]] = 0.5                         # the length of tel

    def num(e: sp.Matrix, eqs) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.array(e.xreplace(eqs.param_values).xreplace(x).evalf(), dtype=float)

    for name in ("M", "h", "G"):
        assert np.allclose(num(getattr(rec, name), rec), num(getattr(lag, name), lag), atol=1e-12), name
    assert np.isclose(float(num(sp.Matrix([rec.T + rec.V]), rec)[0, 0]),
                      float(num(sp.Matrix([lag.T + lag.V]), lag)[0, 0]), atol=1e-12)
    assert set(rec.frames) == set(lag.frames) >= {"mid", "mk", "t.joint", "tel.end"}
    for name in rec.frames:
        for i in range(2):
            assert np.allclose(num(rec.frames[name][i], rec), num(lag.frames[name][i], lag), atol=1e-12), name
        assert np.allclose(num(rec.frame_jacobians[name], rec), num(lag.frame_jacobians[name], lag),
                           atol=1e-12), name


@pytest.mark.parametrize("g", [(0.0, 0.0, 1.0), (-1.0, 0.0, 0.0), (0.0, 2.5, 0.0)])
def test_gravity_in_any_direction_against_lagrange(g: tuple[float, float, float], build_dir: Path) -> None:
    """Gravity other than the default, with a component of exactly 1 or -1 (the articulated-body recursion
    once crashed on -1 * 1 against an identity rotation): the compiled gravity, bias and accelerations of
    examples/spatial/arm3.yaml against the Lagrange reference evaluated by SymPy."""
    m = rodgen.load(Path(__file__).resolve().parents[1] / "examples" / "spatial" / "arm3.yaml")
    m.gravity = g
    robot = rodgen.build(m, build_dir=build_dir)
    assert robot.forward == "aba"
    lag = rodgen.derive(m, method="lagrange")
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd = rng.uniform(-1.5, 1.5, 3), rng.normal(size=3)
        x = {**lag.param_values, **dict(zip(lag.q, q)), **dict(zip(lag.qd, qd))}

        def num(e: sp.Matrix) -> np.ndarray:
            return np.array(e.xreplace(x).evalf(), dtype=float)

        M, G, bias = num(lag.M), num(lag.G).ravel(), num(lag.h + lag.G + lag.D).ravel()
        assert np.abs(G).max() > 0.1
        assert np.allclose(robot.gravity(q), G, atol=1e-12)
        assert np.allclose(robot.bias(q, qd), bias, atol=1e-12)
        assert np.allclose(robot.forward_dynamics(q, qd), np.linalg.solve(M, -bias), atol=1e-10)
