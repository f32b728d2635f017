"""Coupled coordinates: the reduced equations against independent derivations.

* The solar-panel boom (Ruchkin & Ruchkina 2017; SEEDS.md section 2.3): the
  reduced equation M_1 = J(q1) q1'' + 1/2 J'(q1) q1'^2 with J = G^T H G,
  G = (1, -2, 2)^T, H the mass matrix of the three-link chain in relative
  angles, derived here by hand from the positions of the links.
* Virtual work: the generalized force of the reduced model equals J^T times
  the generalized forces the full model needs along the same motion.
* The reduced mass matrix is the Hessian of the substituted kinetic energy.
* The matrix and Lagrange methods agree after reduction.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.symbolic.numeric import lambdify_equations

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SEED = 20260512
# Both sides evaluate the same quantities in double precision along different
# algebraic routes (projection vs substitution); differences are rounding only.
RTOL_ROUNDING = 1e-10
ATOL_ROUNDING = 1e-10


def example(name: str) -> rodgen.Model:
    return rodgen.load(os.path.join(EXAMPLES, name))


# -- solar panel: closed form --------------------------------------------------------------

def solar_closed_form() -> tuple[sp.Expr, sp.Symbol, dict[str, sp.Symbol]]:
    """J(q1) = G^T H G from the positions of three uniform tube links written out by hand."""
    m, a, R1, R2 = sp.symbols("m a R1 R2", positive=True)
    q = sp.symbols("q1:4", real=True)
    qd = sp.symbols("qd1:4", real=True)
    t = sp.Symbol("t")
    I = m * a**2 / 12 + m * (R1**2 + R2**2) / 4          # central inertia about the hinge axis
    phi = [q[0], q[0] + q[1] + sp.pi, q[0] + q[1] + q[2]]  # absolute angles (offsets +pi, -pi)
    e = [sp.Matrix([sp.cos(p), sp.sin(p)]) for p in phi]
    cms = [a / 2 * e[0], a * e[0] + a / 2 * e[1], a * e[0] + a * e[1] + a / 2 * e[2]]
    # kinetic energy via time functions, then H as the Hessian in the rates
    qf = [sp.Function(f"q{i}")(t) for i in range(1, 4)]
    back = {**{sp.Derivative(qf[i], t): qd[i] for i in range(3)}, **{qf[i]: q[i] for i in range(3)}}
    T = sp.Integer(0)
    for cm, p in zip(cms, phi):
        v = cm.subs(dict(zip(q, qf))).diff(t)
        w = p.subs(dict(zip(q, qf))).diff(t)
        T += (m * (v.T * v)[0] + I * w**2) / 2
    T = T.subs(back)
    H = sp.hessian(T, qd)
    G = sp.Matrix([1, -2, 2])
    q1 = sp.Symbol("q1", real=True)
    J = (G.T * H * G)[0].subs({q[1]: -2 * q1, q[2]: 2 * q1, q[0]: q1})
    return sp.simplify(J), q1, {"m": m, "a": a, "R1": R1, "R2": R2}


@pytest.mark.parametrize("method", ["matrix", "lagrange"])
def test_solar_panel_reduced_equation_matches_closed_form(method: str) -> None:
    eqs = rodgen.derive(example("solar_panel.yaml"), method=method)
    assert [str(s) for s in eqs.q] == ["q1"]
    assert [str(s) for s in eqs.u] == ["M_1"]
    J, q1, syms = solar_closed_form()
    ours = {str(s): s for s in [*eqs.q, *eqs.qd, *eqs.params]}
    rename = {ours[k]: v for k, v in syms.items()} | {ours["q1"]: q1}
    qd1 = sp.Symbol("qd1")
    rename[ours["q1'"]] = qd1
    assert sp.simplify(eqs.M[0, 0].xreplace(rename) - J) == 0
    # M_1 = J q1'' + 1/2 J'(q1) q1'^2: the velocity term is 1/2 dJ/dq1 q1'^2
    assert sp.simplify(eqs.bias[0].xreplace(rename) - sp.diff(J, q1) * qd1**2 / 2) == 0
    assert eqs.B == sp.Matrix([[1]])
    # and the hand-simplified form 3 I + 19/4 m a^2 + 4 m a^2 cos(2 q1)
    m, a, R1, R2 = syms["m"], syms["a"], syms["R1"], syms["R2"]
    I = m * a**2 / 12 + m * (R1**2 + R2**2) / 4
    assert sp.simplify(J - (3 * I + sp.Rational(19, 4) * m * a**2 + 4 * m * a**2 * sp.cos(2 * q1))) == 0


def test_solar_panel_numbers() -> None:
    """Peak actuator torque at 90 deg/s: |M_1| = 4 m a^2 w^2 at q1 = pi/4 (q1'' = 0)."""
    num = lambdify_equations(rodgen.derive(example("solar_panel.yaml")))
    w = np.pi / 2
    tau = num.inverse_dynamics([np.pi / 4], [w], [0.0])[0]
    np.testing.assert_allclose(tau, -4 * 0.8143 * 1.0 * w**2, rtol=1e-12)
    np.testing.assert_allclose(num.full_coordinates([0.3]), [0.3, -0.6, 0.6])


# -- virtual work on a model with nonlinear couplings ------------------------------------

def coupled_exo() -> rodgen.Model:
    model = example("exo5.yaml")
    model.couple("phi_torso", "1.6 + 0.1*sin(phi_stance_thigh)")
    model.couple("l_swing_thigh_l", "l_thigh0 + 0.05*cos(phi_swing_thigh - phi_stance_thigh)")
    model.couple("phi_swing_shank", "phi_swing_thigh - 0.3*l_stance_shank_l")
    return model


def _jacobians(eqs_red: rodgen.Equations, full: rodgen.Equations,
               q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, ...]:
    """Full q, qd, qdd of the coupled motion, and J, from the coupling expressions (sympy, exact)."""
    f = [eqs_red.couplings.get(s, s) for s in full.q]
    J = sp.Matrix(f).jacobian(eqs_red.q)
    pv = dict(eqs_red.param_values)
    val = {**dict(zip(eqs_red.q, q)), **pv}
    Jn = np.array(J.xreplace(val).evalf(30), dtype=float)
    # Jd qd = d/dt (J) qd, with d/dt = sum_k qd_k d/dq_k
    Jd = sum((J.diff(s) * v for s, v in zip(eqs_red.q, qd)), sp.zeros(*J.shape))
    Jdn = np.array(Jd.xreplace(val).evalf(30), dtype=float)
    qf = np.array([float(sp.sympify(e).xreplace(val)) for e in f])
    return qf, Jn @ qd, Jn @ qdd + Jdn @ qd, Jn


@pytest.mark.parametrize("method", ["matrix", "lagrange", "recursive"])
def test_reduced_forces_equal_projected_full_forces(method: str) -> None:
    model = coupled_exo()
    red = rodgen.derive(model, method=method)
    plain = example("exo5.yaml")
    full = rodgen.derive(plain, method=method)
    assert len(red.q) == len(full.q) - 3
    nr, nf = lambdify_equations(red), lambdify_equations(full)
    rng = np.random.default_rng(SEED)
    for trial in range(4):
        q = np.array([c.initial.evaluate(nr.parameters) for c in red.coordinates]) + 0.2 * rng.standard_normal(nr.nq)
        qd, qdd = rng.standard_normal(nr.nq), rng.standard_normal(nr.nq)
        qf, qdf, qddf, J = _jacobians(red, full, q, qd, qdd)
        np.testing.assert_allclose(nr.full_coordinates(q), qf, rtol=1e-13, err_msg=f"seed {SEED}")
        Q_full = nf.inverse_dynamics(qf, qdf, qddf)
        Q_red = nr.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(Q_red, J.T @ Q_full, rtol=RTOL_ROUNDING, atol=ATOL_ROUNDING,
                                   err_msg=f"seed {SEED}, trial {trial}")
        # inputs: B_r = J^T B
        np.testing.assert_allclose(nr.input_map(q), J.T @ nf.input_map(qf), rtol=RTOL_ROUNDING,
                                   atol=ATOL_ROUNDING)
        # energies and points are those of the full model in the coupled configuration
        np.testing.assert_allclose(nr.energy(q, qd), nf.energy(qf, qdf), rtol=RTOL_ROUNDING)
        pr, pf = nr.points(q), nf.points(qf)
        for k in pf:
            np.testing.assert_allclose(pr[k], pf[k], rtol=RTOL_ROUNDING, atol=ATOL_ROUNDING)


def test_reduced_mass_matrix_is_hessian_of_reduced_energy_and_methods_agree() -> None:
    model = coupled_exo()
    mat = rodgen.derive(model, method="matrix")
    lag = rodgen.derive(coupled_exo(), method="lagrange")
    H = sp.hessian(mat.T, mat.qd)
    rng = np.random.default_rng(SEED)
    q = rng.uniform(0.1, 1.0, len(mat.q))
    val = {**dict(zip(mat.q, q)), **mat.param_values}
    np.testing.assert_allclose(np.array(mat.M.xreplace(val), dtype=float), np.array(H.xreplace(val), dtype=float),
                               rtol=RTOL_ROUNDING)
    nm, nl = lambdify_equations(mat), lambdify_equations(lag)
    Q = rng.standard_normal((5, nm.nq))
    Qd = rng.standard_normal((5, nm.nq))
    Qdd = rng.standard_normal((5, nm.nq))
    np.testing.assert_allclose(nm.inverse_dynamics(Q, Qd, Qdd), nl.inverse_dynamics(Q, Qd, Qdd),
                               rtol=RTOL_ROUNDING, atol=ATOL_ROUNDING, err_msg=f"seed {SEED}")


def test_springs_and_dampers_are_projected() -> None:
    """A linear coupling q2 = c q1 with springs and dampers on both joints: K_r, D_r by hand."""
    model = rodgen.Model("sd")
    model.parameter("k1", 3.0)
    model.parameter("k2", 5.0)
    model.parameter("c", -2.0)
    a = model.link("a", angle="relative",
                   joint=rodgen.Joint(spring=rodgen.Spring("k1", 0.1), damping=0.7))
    a.rigid("a_s", 1.0, rod=rodgen.Rod(mass=1.0))
    b = model.link("b", parent="a", angle="relative",
                   joint=rodgen.Joint(spring=rodgen.Spring("k2", -0.2), damping=0.4, actuated=False))
    b.rigid("b_s", 0.5, rod=rodgen.Rod(mass=2.0))
    model.couple("th_b", "c*th_a")
    eqs = rodgen.derive(model)
    x, xd = eqs.q[0], eqs.qd[0]
    c = -2
    pv = {s: sp.Rational(str(v)) for s, v in eqs.param_values.items()}
    expected = 3 * (x - sp.Rational(1, 10)) + c * 5 * (c * x + sp.Rational(1, 5))
    assert sp.simplify(eqs.K[0].xreplace(pv) - expected) == 0
    assert sp.simplify(eqs.D[0].xreplace(pv) - (sp.Rational(7, 10) + c * c * sp.Rational(2, 5)) * xd) == 0
    assert eqs.B == sp.Matrix([[1]])


# -- the model stage: builder, file key, errors --------------------------------------------

def test_builder_and_file_give_the_same_couplings() -> None:
    m = example("solar_panel.yaml")
    assert {k: v.text for k, v in m.validate().couplings.items()} == {"q2": "-2*q1", "q3": "2*q1"}
    assert [c.name for c in m.independent_coordinates()] == ["q1"]
    assert [c.name for c in m.coordinates()] == ["q1", "q2", "q3"]


def _bad(target: str, expr: object) -> str:
    m = example("double_pendulum.yaml")
    m.couple(target, expr)  # type: ignore[arg-type]
    with pytest.raises(rodgen.ModelError) as ei:
        m.validate()
    return str(ei.value)


def test_coupling_errors_name_the_field() -> None:
    assert "couplings.th_x: 'th_x' is not a coordinate of the model (coordinates: th_upper, th_lower)" \
        in _bad("th_x", "1")
    assert "couplings.th_lower: 'zz' is neither a coordinate nor a parameter" in _bad("th_lower", "2*zz")
    assert "'th_lower' is coupled to itself" in _bad("th_lower", "th_lower + 1")
    assert "is not allowed" in _bad("th_lower", "__import__('os')")
    assert "cannot be evaluated at the initial coordinates" in _bad("th_lower", "1/(th_upper + 1)")


def test_chains_are_refused() -> None:
    m = example("exo5.yaml")
    m.couple("phi_torso", "phi_stance_thigh")
    m.couple("phi_swing_thigh", "2*phi_torso")
    with pytest.raises(rodgen.ModelError, match=r"couplings\.phi_swing_thigh: 'phi_swing_thigh' is coupled to "
                                                 r"'phi_torso', which is itself coupled"):
        m.validate()


def test_all_coupled_is_refused(tmp_path: "os.PathLike[str]") -> None:
    p = os.path.join(str(tmp_path), "m.yaml")
    with open(p, "w") as fh:
        fh.write("name: one\nlinks:\n  - name: a\n    segments: [{name: s, length: 1, rod: {mass: 1}}]\n"
                 "couplings: {phi_a: 0.5}\n")
    with pytest.raises(rodgen.ModelError, match="every coordinate is coupled"):
        rodgen.load(p)
    with open(p, "w") as fh:
        fh.write("name: one\nlinks:\n  - name: a\n    segments: [{name: s, length: 1, rod: {mass: 1}}]\n"
                 "couplings: [phi_a]\n")
    with pytest.raises(rodgen.ModelError, match="couplings: expected a mapping coordinate: expression"):
        rodgen.load(p)
