"""Closed-form equations of spatial models (``derive(spatial_model, method="matrix")``), against hand derivations:
each mechanism's Lagrangian written here with SymPy from its own geometry (rotation matrices, the body's
angular velocity, the mass point's position), M = d²T/dq̇², h = d/dt(dT/dq̇) - dT/dq (at q̈ = 0), G = dV/dq.
The printed forms (``rodgen equations``, LaTeX) hold the model's parameters and coordinates only."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.symbolic import closed_form as cf

G0 = sp.Rational(981, 100)


def _lagrange(T: sp.Expr, V: sp.Expr, q: list[sp.Symbol], qd: list[sp.Symbol]
              ) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    n = len(q)
    dT = [sp.diff(T, x) for x in qd]
    M = sp.Matrix(n, n, lambda i, j: sp.diff(dT[i], qd[j]))
    h = sp.Matrix([sum(sp.diff(dT[i], q[j]) * qd[j] for j in range(n)) - sp.diff(T, q[i]) for i in range(n)])
    G = sp.Matrix([sp.diff(V, x) for x in q])
    return M, h, G


def _Rx(a: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[1, 0, 0], [0, sp.cos(a), -sp.sin(a)], [0, sp.sin(a), sp.cos(a)]])


def _Ry(a: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[sp.cos(a), 0, sp.sin(a)], [0, 1, 0], [-sp.sin(a), 0, sp.cos(a)]])


def _Rz(a: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[sp.cos(a), -sp.sin(a), 0], [sp.sin(a), sp.cos(a), 0], [0, 0, 1]])


def _own_symbols(eqs: "rodgen.symbolic.Equations") -> set[sp.Symbol]:
    return set(eqs.q) | set(eqs.qd) | set(eqs.params)


def _same(eqs: "rodgen.symbolic.Equations", a: sp.Matrix, b: sp.Matrix, seed: int) -> None:
    """a = b at random coordinates, rates and parameter values (b nonzero somewhere)."""
    args = [list(eqs.q), list(eqs.qd), list(eqs.params)]
    fa, fb = sp.lambdify(args, a, "numpy"), sp.lambdify(args, b, "numpy")
    rng = np.random.default_rng(seed)
    n, k = len(eqs.q), len(eqs.params)
    big = 0.0
    for _ in range(6):
        x = [rng.uniform(-3, 3, n), rng.normal(size=n), rng.uniform(0.2, 2.0, k)]
        va, vb = np.asarray(fa(*x), float), np.asarray(fb(*x), float)
        assert np.abs(va - vb).max() <= 1e-12 * max(1.0, np.abs(vb).max())
        big = max(big, np.abs(vb).max())
    assert big > 0.1


def _universal_double_pendulum() -> rodgen.SpatialModel:
    """A body on a universal joint (x, then y, at the origin) hanging along -z, a second link hinged about y
    at its lower end carrying a point mass."""
    m = rodgen.SpatialModel("udp")
    for nm, v in (("m1", 1.3), ("L", 0.6), ("Ixx", 0.02), ("Iyy", 0.03), ("Izz", 0.01), ("m2", 0.7), ("L2", 0.4)):
        m.parameter(nm, v)
    m.link("cross", axis=(1, 0, 0), coordinate="q1")
    b = m.link("upper", "cross", axis=(0, 1, 0), coordinate="q2")
    b.body("m1", com=(0, 0, "-L/2"), inertia=("Ixx", 0, 0, "Iyy", 0, "Izz"))
    c = m.link("lower", "upper", axis=(0, 1, 0), xyz=(0, 0, "-L"), coordinate="q3", along=(0, 0, -1))
    c.rigid("rod", "L2", masses=[rodgen.PointMass("m2", fraction=1)])
    return m


def test_universal_double_pendulum_has_the_hand_derived_closed_form() -> None:
    eqs = rodgen.derive(_universal_double_pendulum(), method="matrix")
    assert eqs.method == "matrix" and not eqs.assignments and not eqs.closed_form_reason
    for mat in (eqs.M, eqs.h, eqs.G):
        assert all(x.free_symbols <= _own_symbols(eqs) for x in mat)
    s = {str(x): x for x in [*eqs.q, *eqs.qd, *eqs.params]}
    q = [s["q1"], s["q2"], s["q3"]]
    qd = [s["q1'"], s["q2'"], s["q3'"]]
    m1, L, Ixx, Iyy, Izz, m2, L2 = (s[k] for k in ("m1", "L", "Ixx", "Iyy", "Izz", "m2", "L2"))
    R = _Rx(q[0]) * _Ry(q[1])                                      # the upper body's axes
    c1 = R * sp.Matrix([0, 0, -L / 2])
    p2 = R * (sp.Matrix([0, 0, -L]) + _Ry(q[2]) * sp.Matrix([0, 0, -L2]))
    w = _Ry(q[1]).T * sp.Matrix([qd[0], 0, 0]) + sp.Matrix([0, qd[1], 0])   # body axes

    def rate(v: sp.Matrix) -> sp.Matrix:
        return sum((v.diff(x) * xd for x, xd in zip(q, qd)), sp.zeros(3, 1))
    v1, v2 = rate(c1), rate(p2)
    T = (m1 * v1.dot(v1) + m2 * v2.dot(v2) + (w.T * sp.diag(Ixx, Iyy, Izz) * w)[0]) / 2
    V = G0 * (m1 * c1[2] + m2 * p2[2])
    M, h, G = _lagrange(T, V, q, qd)
    assert sp.simplify(eqs.G - G) == sp.zeros(3, 1)
    _same(eqs, eqs.M, M, 1)
    _same(eqs, eqs.h, h, 2)


def _variable_pendulum() -> rodgen.SpatialModel:
    """A spherical pendulum of variable length: yaw about z, pitch about y, a mass at the end of a
    variable-length part along the link's x axis, with a rod on a rigid part before it."""
    m = rodgen.SpatialModel("vpend")
    for nm, v in (("m", 0.8), ("mr", 0.5), ("a", 0.3), ("J", 0.004)):
        m.parameter(nm, v)
    m.link("yaw", axis=(0, 0, 1), coordinate="phi")
    p = m.link("arm", "yaw", axis=(0, 1, 0), coordinate="th")
    p.rigid("base", "a", rods=[rodgen.Rod("mr", inertia="J")])
    p.variable("ext", 0.4, masses=[rodgen.PointMass("m", fraction=1)], coordinate="r")
    return m


def test_variable_length_spherical_pendulum_has_the_hand_derived_closed_form() -> None:
    eqs = rodgen.derive(_variable_pendulum(), method="matrix")
    assert eqs.method == "matrix" and not eqs.assignments
    s = {str(x): x for x in [*eqs.q, *eqs.qd, *eqs.params]}
    q, qd = [s["phi"], s["th"], s["r"]], [s["phi'"], s["th'"], s["r'"]]
    m, mr, a, J = (s[k] for k in ("m", "mr", "a", "J"))
    for mat in (eqs.M, eqs.h, eqs.G):
        assert all(x.free_symbols <= _own_symbols(eqs) for x in mat)
    R = _Rz(q[0]) * _Ry(q[1])
    ex = sp.Matrix([1, 0, 0])
    pm, pr = R * ex * (a + q[2]), R * ex * a / 2                   # the mass, the rod's centre

    def rate(v: sp.Matrix) -> sp.Matrix:
        return sum((v.diff(x) * xd for x, xd in zip(q, qd)), sp.zeros(3, 1))
    # the rod turns with the link: J about both axes across it (y, z), none about x
    w = _Ry(q[1]).T * sp.Matrix([0, 0, qd[0]]) + sp.Matrix([0, qd[1], 0])
    T = (m * rate(pm).dot(rate(pm)) + mr * rate(pr).dot(rate(pr)) + J * (w[1] ** 2 + w[2] ** 2)) / 2
    V = G0 * (m * pm[2] + mr * pr[2])
    M, h, G = _lagrange(T, V, q, qd)
    assert sp.simplify(eqs.G - G) == sp.zeros(3, 1)
    assert sp.simplify(eqs.M[1, 1] - M[1, 1]) == 0
    _same(eqs, eqs.M, M, 3)
    _same(eqs, eqs.h, h, 4)
    assert eqs.M[2, 2] == m                                          # the sliding mass alone, as printed


def test_printed_equations_hold_no_intermediates(tmp_path: Path) -> None:
    """``rodgen equations`` and the LaTeX of a spatial model file: the matrix method, the model's own names."""
    src = tmp_path / "vpend.yaml"
    rodgen.dump(_variable_pendulum(), src)
    out = subprocess.run([sys.executable, "-m", "rodgen.cli", "equations", str(src)], capture_output=True,
                         text=True, check=True).stdout
    assert "(matrix method)" in out
    assert "r_" not in out.replace("r'", "").replace("r = ", "") and "_CI" not in out and "_W" not in out
    tex = rodgen.derive(rodgen.load(src)).latex()
    assert r"\cos{\left(th \right)}" in tex and "CI" not in tex


def test_large_spatial_models_keep_the_recursive_form_and_say_why() -> None:
    m = rodgen.SpatialModel("chain")
    parent = None
    for i in range(cf.MAX_COORDINATES + 1):
        m.link(f"l{i}", parent, axis=(0, 1, 0) if i % 2 else (1, 0, 0), xyz=(0, 0, 0.3)).body(1.0, (0, 0, 0.1),
                                                                                            (0.1, 0, 0, 0.1, 0, 0.1))
        parent = f"l{i}"
    eqs = rodgen.derive(m, method="matrix")
    assert eqs.method == "recursive" and eqs.assignments
    assert f"{cf.MAX_COORDINATES + 1} velocities" in eqs.closed_form_reason


@pytest.mark.parametrize("v, text", [(0.034999999999999996, "0.035"), (0.0349999, "0.0349999"),
                                     (0.0002955202066613396, "0.0002955202066613396"), (-1.25e-7, "-1.25e-07")])
def test_decimal_text_drops_rounding_noise_only(v: float, text: str) -> None:
    assert cf.decimal_text(v) == text
    assert abs(float(text) - v) <= 1e-15 * abs(v)


URDF = """<robot name="slider">
  <link name="base"/>
  <link name="carriage">
    <inertial><origin xyz="0 0 0"/><mass value="0.035"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <link name="arm">
    <inertial><origin xyz="0.0349999 0 0"/><mass value="0.035"/>
      <inertia ixx="0.0011" ixy="0" ixz="0" iyy="0.0012" iyz="0" izz="0.0013"/></inertial>
  </link>
  <joint name="lift" type="prismatic"><parent link="base"/><child link="carriage"/>
    <origin xyz="0 0 0.0349999"/><axis xyz="0 0 1"/><limit lower="0" upper="1" effort="1" velocity="1"/></joint>
  <joint name="turn" type="revolute"><parent link="carriage"/><child link="arm"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""


def test_urdf_numbers_print_as_the_file_wrote_them(tmp_path: Path) -> None:
    """Equations, LaTeX and C of a URDF: its decimals (and their exact sums and products) as decimals, no
    binary rounding noise (0.0349999999...) and no fractions (7/200)."""
    from decimal import Decimal
    path = tmp_path / "slider.urdf"
    path.write_text(URDF)
    out = subprocess.run([sys.executable, "-m", "rodgen.cli", "equations", str(path)], capture_output=True,
                         text=True, check=True).stdout
    m, c, izz = Decimal("0.035"), Decimal("0.0349999"), Decimal("0.0013")

    def d(x: Decimal) -> str:
        return format(x.normalize(), "f")
    assert f"[0,0] {d(m + m)}\n" in out                                # both bodies slide: 0.07
    assert f"[1,1] {d(izz + m * c * c)}\n" in out                      # 0.00134287475500035
    assert f"[0] {d((m + m) * Decimal('9.81'))}\n" in out              # 0.6867
    assert f"{d(m)}*lift'**2" in out                                    # T = 0.035 lift'^2 + ...
    assert "99999999" not in out and "/200" not in out
    tex = rodgen.derive(rodgen.from_urdf(path)).latex()
    assert d(izz + m * c * c) in tex and "99999999" not in tex and r"\frac{7}" not in tex
    rodgen.generate(rodgen.from_urdf(path), tmp_path / "c")
    code = (tmp_path / "c" / "slider.c").read_text()
    assert "0.0349999" in code and "349999.0/" not in code and "99999999" not in code


@pytest.mark.parametrize("seed", [0, 1])
def test_decimal_literals_are_the_exact_rationals(seed: int) -> None:
    """A rational printed as a decimal is that rational exactly, so C rounds it to the double of p/q."""
    from fractions import Fraction

    from rodgen.codegen.printer import decimal_literal
    rng = np.random.default_rng(seed)
    seen = 0
    for _ in range(3000):
        a, b = (int(x) for x in rng.integers(0, 30, 2))
        f = Fraction(int(rng.integers(-10 ** 9, 10 ** 9)), 2 ** a * 5 ** b)
        text = decimal_literal(f.numerator, f.denominator)
        if text is not None:
            seen += 1
            assert Fraction(text) == f and float(text) == f.numerator / f.denominator
    assert seen > 1000
    assert decimal_literal(1, 2) is None and decimal_literal(1, 3) is None and decimal_literal(7, 200) == "0.035"


def test_closed_form_compiles_to_the_recursive_numbers(build_dir: Path) -> None:
    """build(method="matrix") of a spatial model prints the closed form; its mass matrix and bias equal the
    recursive method's (another derivation, another code) at random states."""
    a = rodgen.build(_variable_pendulum(), method="matrix", build_dir=build_dir)
    b = rodgen.build(_variable_pendulum(), method="recursive", build_dir=build_dir)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, v = rng.uniform(-2, 2, 3), rng.normal(size=3)
        np.testing.assert_allclose(a.mass_matrix(q), b.mass_matrix(q), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(a.bias(q, v), b.bias(q, v), rtol=1e-13, atol=1e-13)
