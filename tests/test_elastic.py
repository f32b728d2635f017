"""Elastic links (Leontiev's discrete rod models), linearisation and modal analysis.

Independent references:
* the rules' tables against the defining system sum a_i lambda_i**(s-1) = 1/s (SEEDS.md §3.1);
* the natural frequencies of a clamped uniform cantilever, omega_k = (beta_k L)**2 sqrt(EJ/(m L**3))
  with beta_k L = 1.8751, 4.6941, 7.8548 (Euler–Bernoulli), and single-hinge closed forms;
* M and K of the linearised chain written by hand here (a Gram matrix of the transverse
  displacement of each segment, springs on the diagonal), solved by scipy.linalg.eigh;
* central finite differences of the compiled right-hand side for linearize().
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sl

import rodgen
from rodgen.errors import ModelError, RodgenError
from rodgen.model.elastic import exact_powers, rule_table

#: beta_k L of the clamped-free Euler–Bernoulli beam (roots of cos b cosh b = -1)
BETA = np.array([1.8751040687, 4.6940911330, 7.8547574382])


def cantilever(rule: str | None, n: int | None, *, L: float = 1.0, EJ: float = 1.0, mass: float = 1.0,
               **kw: object) -> rodgen.Model:
    m = rodgen.Model("cantilever", gravity=(0.0, 0.0))
    m.elastic("beam", length=L, EJ=EJ, mass=mass, rule=rule, n=n, **kw)
    return m


def beam_errors(rule: str, n: int, k: int = 3) -> np.ndarray:
    """omega_model / omega_exact - 1 of the first k frequencies of a unit cantilever."""
    md = rodgen.modes(cantilever(rule, n))
    k = min(k, len(md.omega))
    return md.omega[:k] / BETA[:k] ** 2 - 1.0


# -- the rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("rule,n", [("Cp", 1), ("E", 4), ("B", 3), ("B", 6), ("G", 1), ("G", 3), ("G", 7),
                                    ("R", 2), ("R", 5), ("Ch", 3), ("Ch", 7), ("Ch", 9), ("M", 3), ("M", 6)])
def test_rules_solve_the_defining_system(rule: str, n: int) -> None:
    """Each rule meets the static conditions SEEDS.md §3.1 names for it (and G_n, R_n no more)."""
    xs, cs = rule_table(rule, n)
    assert len(xs) == len(cs) == n and list(xs) == sorted(xs) and xs[0] >= 0 and xs[-1] < 1
    lam, a = 1.0 - np.array(xs), 1.0 / np.array(cs)
    tol = 5e-6 if (rule, n) == ("M", 6) else 1e-12  # M_6 is printed to 4-5 digits
    for s in exact_powers(rule, n):
        assert abs(np.sum(a * lam ** (s - 1)) - 1.0 / s) < tol, s
    if rule in ("G", "R"):  # Gauss is exact to N = 2n, Radau to 2n - 1, not beyond
        s = max(exact_powers(rule, n)) + 1
        assert abs(np.sum(a * lam ** (s - 1)) - 1.0 / s) > 1e-10


def test_rule_tables_against_printed_values() -> None:
    """Values written out in SEEDS.md §3.1 and classical tables (Gauss 2-point nodes 1/2 -+ 1/(2 sqrt 3))."""
    assert rule_table("B", 3)[1][0] == pytest.approx(6 * 9 / 8)
    assert rule_table("E", 3) == ((0.0, 1 / 3, 2 / 3), (3.0, 3.0, 3.0))
    xs, cs = rule_table("G", 2)
    assert xs == pytest.approx((0.5 - 0.5 / math.sqrt(3), 0.5 + 0.5 / math.sqrt(3))) and cs == pytest.approx((2, 2))
    xs, cs = rule_table("R", 2)  # Radau on [0,1] with the node at the root: weights 1/4, 3/4 at lambda 1, 1/3
    assert xs == pytest.approx((0.0, 2 / 3)) and cs == pytest.approx((4.0, 4 / 3))
    assert rule_table("Ch", 3)[0] == pytest.approx((0.5 - 0.5 / math.sqrt(2), 0.5, 0.5 + 0.5 / math.sqrt(2)))


# -- the expansion and bad input ---------------------------------------------------------------------

def test_expansion_masses_and_springs() -> None:
    m = rodgen.Model("arm", gravity=(0.0, 0.0))
    m.parameter("EJ", 2.0)
    links = m.elastic("beam", length=1.5, EJ="EJ", mass_per_length=0.4, rule="G", n=2)
    assert [lk.name for lk in links] == ["beam_0", "beam_1", "beam_2"]
    vm = m.validate()
    x1, x2 = 1.5 * (0.5 - 0.5 / math.sqrt(3)), 1.5 * (0.5 + 0.5 / math.sqrt(3))
    lengths = [sg.length.evaluate({"EJ": 2.0}) for lk in vm.links for sg in lk.segments]
    assert lengths == pytest.approx([x1, x2 - x1, 1.5 - x2])
    masses = [rd.mass.evaluate({"EJ": 2.0}) for lk in vm.links for sg in lk.segments for rd in sg.rods]
    assert masses == pytest.approx([0.4 * v for v in lengths]) and sum(masses) == pytest.approx(0.6)
    springs = [lk.joint.spring.stiffness.evaluate({"EJ": 2.0}) for lk in vm.links[1:]]
    assert springs == pytest.approx([2.0 / 1.5 * 2, 2.0 / 1.5 * 2])
    assert [c.name for c in vm.independent_coordinates()] == ["th_beam_1", "th_beam_2"]  # the root is clamped


@pytest.mark.parametrize("kw,where,text", [
    ({"rule": "Ch", "n": 8}, "link 'beam'.n", "not available"),
    ({"rule": "M", "n": 4}, "link 'beam'.n", "not available"),
    ({"rule": "Q", "n": 4}, "link 'beam'.rule", "unknown rule"),
    ({"rule": "Cp", "n": 2}, "link 'beam'.n", "not available"),
    ({"rule": "G", "n": 3, "EJ": 0.0}, "link 'beam'.EJ", "positive"),
    ({"rule": "G", "n": 3, "EJ": -1.0}, "link 'beam'.EJ", "positive"),
    ({"rule": "G", "n": 3, "mass": 0.0}, "link 'beam'.mass", "positive"),
    ({"rule": "G", "n": 3, "length": -1.0}, "link 'beam'.length", "positive"),
    ({"rule": None, "n": None, "positions": [0.0, 0.5], "stiffnesses": [1.0]}, "link 'beam'.stiffnesses", "2"),
    ({"rule": None, "n": None, "positions": [0.5, 0.2], "stiffnesses": [1.0, 1.0]}, "link 'beam'.positions[1]",
     "increasing"),
    ({"rule": "E", "n": 3, "clamped": False}, "link 'beam'.clamped", "hub"),
])
def test_bad_input_names_link_and_field(kw: dict, where: str, text: str) -> None:
    args = {"L": 1.0, "EJ": 1.0, "mass": 1.0, **{k: v for k, v in kw.items() if k != "length"}}
    if "length" in kw:
        args["L"] = kw["length"]
    with pytest.raises(ModelError) as exc:
        cantilever(args.pop("rule"), args.pop("n"), **args)
    assert exc.value.where == where and text in str(exc.value)


def test_yaml_elastic_link(tmp_path: Path) -> None:
    text = """
name: flexbeam
gravity: [0, 0]
parameters: {EJ: 3.0}
links:
  - name: beam
    type: elastic
    length: 2.0
    EJ: EJ
    mass: 1.5
    rule: B
    n: 3
"""
    p = tmp_path / "flexbeam.yaml"
    p.write_text(text)
    model = rodgen.load(p)
    assert [lk.name for lk in model.links] == ["beam_1", "beam_2", "beam_3"]
    md = rodgen.modes(model)
    ref = rodgen.modes(cantilever("B", 3, L=2.0, EJ=3.0, mass=1.5))
    assert md.omega == pytest.approx(ref.omega, rel=1e-12)
    rodgen.dump(model, tmp_path / "dumped.yaml")  # dump writes the expanded chain; it loads back the same
    assert rodgen.modes(rodgen.load(tmp_path / "dumped.yaml")).omega == pytest.approx(md.omega, rel=1e-12)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("rule: B", "rule: Ch").replace("n: 3", "n: 10"))
    with pytest.raises(ModelError, match=r"bad.yaml: (line \d+, )?link 'beam'.n: rule Ch_10 is not available"):
        rodgen.load(bad)
    bad.write_text(text.replace("mass: 1.5", "mass: -1.5"))
    with pytest.raises(ModelError, match=r"link 'beam'.mass: must be positive"):
        rodgen.load(bad)


# -- modes -------------------------------------------------------------------------------------------

def hand_chain(xs: np.ndarray, cs: np.ndarray, L: float, m: float) -> tuple[np.ndarray, np.ndarray]:
    """M, K of a straight clamped chain in its hinge angles, written from scratch.

    Transverse displacement at s on the segment after hinge j: w = sum_{i<=j} theta_i (s - x_i);
    T = 1/2 int (m/L) w_dot**2 ds over the rod (a rigid uniform segment: translation and rotation).
    """
    n = len(xs)
    ends = list(xs[1:]) + [L]
    M = np.zeros((n, n))
    for j in range(n):
        a, b = xs[j], ends[j]
        for r in range(j + 1):
            for c in range(j + 1):
                f = lambda s: s ** 3 / 3 - (xs[r] + xs[c]) * s ** 2 / 2 + xs[r] * xs[c] * s  # noqa: E731
                M[r, c] += m / L * (f(b) - f(a))
    return M, np.diag(cs)


@pytest.mark.parametrize("rule,n", [("G", 3), ("M", 6), ("B", 4)])
def test_modes_agree_with_hand_built_eigenproblem(rule: str, n: int) -> None:
    L, EJ, mass = 1.3, 2.5, 0.8
    md = rodgen.modes(cantilever(rule, n, L=L, EJ=EJ, mass=mass))
    xs, cl = rule_table(rule, n)
    M, K = hand_chain(L * np.array(xs), EJ / L * np.array(cl), L, mass)
    assert md.M == pytest.approx(M, rel=1e-10, abs=1e-12)
    assert md.K == pytest.approx(K, rel=1e-10, abs=1e-12)
    w2 = sl.eigh(K, M, eigvals_only=True)
    assert md.omega == pytest.approx(np.sqrt(w2), rel=1e-9)
    assert md.hz == pytest.approx(np.sqrt(w2) / (2 * np.pi), rel=1e-9)
    assert md.shapes.T @ M @ md.shapes == pytest.approx(np.eye(n), abs=1e-9)


def test_single_hinge_closed_forms() -> None:
    """Cp: one hinge at the root with C = 3EJ/L under a uniform rod: omega**2 = C/(m L**2/3) = 9 EJ/(m L**3)."""
    L, EJ, mass = 0.7, 1.9, 0.3
    md = rodgen.modes(cantilever("Cp", 1, L=L, EJ=EJ, mass=mass))
    assert md.omega[0] == pytest.approx(3.0 * math.sqrt(EJ / (mass * L ** 3)), rel=1e-12)


def test_tip_mass_against_the_beam_with_a_tip_mass() -> None:
    """Cp with a tip mass: omega**2 = (3 EJ/L) / (m L**2/3 + M L**2). G_8 against the Euler–Bernoulli
    cantilever with a tip mass M = mu m: 1 + cos b cosh b + mu b (cos b sinh b - sin b cosh b) = 0."""
    from scipy.optimize import brentq
    L, EJ, m, M = 1.2, 3.0, 0.9, 0.45
    md = rodgen.modes(cantilever("Cp", 1, L=L, EJ=EJ, mass=m, tip_mass=M))
    assert md.omega[0] == pytest.approx(math.sqrt(3 * EJ / L / (m * L ** 2 / 3 + M * L ** 2)), rel=1e-12)
    mu = M / m

    def freq_eq(b: float) -> float:
        return 1 + math.cos(b) * math.cosh(b) + mu * b * (math.cos(b) * math.sinh(b) - math.sin(b) * math.cosh(b))
    b1, b2 = brentq(freq_eq, 0.5, 2.5), brentq(freq_eq, 2.5, 5.5)
    exact = np.array([b1, b2]) ** 2 * math.sqrt(EJ / (m * L ** 3))
    g8 = rodgen.modes(cantilever("G", 8, L=L, EJ=EJ, mass=m, tip_mass=M))
    err = g8.omega[:2] / exact - 1
    assert abs(err[0]) < 2e-5 and abs(err[1]) < 1e-3, err
    with pytest.raises(ModelError, match=r"link 'beam'.tip_mass: must be positive"):
        cantilever("G", 2, tip_mass=-1.0)


def test_gravity_stiffness_of_a_hanging_rod() -> None:
    """A rigid rod hanging from a hinge with a spring: omega**2 = (k + m g L/2) / (m L**2/3)."""
    m = rodgen.Model("hang", gravity=(0.0, -9.81))
    m.elastic("rod", length=0.8, mass=0.5, rule=None, positions=[0.0], stiffnesses=[2.0], initial=-math.pi / 2)
    md = rodgen.modes(m)
    assert md.omega[0] == pytest.approx(math.sqrt((2.0 + 0.5 * 9.81 * 0.4) / (0.5 * 0.64 / 3)), rel=1e-12)
    with pytest.raises(RodgenError, match="not an equilibrium"):
        rodgen.modes(m, [-1.0])


def test_cantilever_converges_to_euler_bernoulli() -> None:
    """The first three frequencies converge with n at each rule's rate (SEEDS.md §3.1's grading).

    E_n: first order (error ~ 1/n); B_n: second order; G_n and R_n: fourth order in the first
    frequency. Rates are the slopes of log|error| against log n between the two largest n.
    """
    def order(e1: float, e2: float, n1: int, n2: int) -> float:
        return math.log(abs(e1) / abs(e2)) / math.log(n2 / n1)

    e = {n: beam_errors("E", n) for n in (4, 8, 16)}
    assert all(np.all(np.abs(e[b]) < np.abs(e[a])) for a, b in ((4, 8), (8, 16)))
    assert order(e[8][0], e[16][0], 8, 16) == pytest.approx(1.0, abs=0.15)
    assert np.max(np.abs(e[16])) < 0.06

    b = {n: beam_errors("B", n) for n in (4, 8, 16)}
    assert all(np.all(np.abs(b[y]) < np.abs(b[x])) for x, y in ((4, 8), (8, 16)))
    assert order(b[8][0], b[16][0], 8, 16) == pytest.approx(2.0, abs=0.15)
    assert abs(b[16][0]) < 5e-4 and np.max(np.abs(b[16])) < 0.01

    for rule in ("G", "R"):
        g = {n: beam_errors(rule, n) for n in (4, 6, 8)}
        assert all(np.all(np.abs(g[y]) < np.abs(g[x])) for x, y in ((4, 6), (6, 8)))
        assert order(g[6][0], g[8][0], 6, 8) > 3.5
        assert abs(g[8][0]) < 1e-5 and np.max(np.abs(g[8])) < 5e-3

    # the grading at equal n: E far worst, then B; Gauss and Radau best on the first frequency
    assert abs(e[4][0]) > abs(b[4][0]) > abs(beam_errors("R", 4)[0]) > abs(beam_errors("G", 4)[0])
    assert abs(beam_errors("M", 6)[0]) < 1e-5 and abs(beam_errors("Ch", 9)[0]) < 2e-5


def test_composite_elements_converge() -> None:
    """A rod split into k elements, each discretised by the rule (the seed's "2 x M_3"): the errors
    fall with k, fourth order for G_2 in the first frequency; 2 x M_3 beats M_3 in omega_1 and omega_2."""
    def errs(rule: str, n: int, k: int) -> np.ndarray:
        md = rodgen.modes(cantilever(rule, n, elements=k))
        return md.omega[:3] / BETA ** 2 - 1.0

    g = {k: errs("G", 2, k) for k in (2, 4, 8)}
    assert np.all(np.abs(g[8]) < np.abs(g[4])) and np.all(np.abs(g[4]) < np.abs(g[2]))
    assert math.log(abs(g[4][0]) / abs(g[8][0])) / math.log(2) > 3.5 and abs(g[8][0]) < 1e-6
    m3 = beam_errors("M", 3)
    assert np.all(np.abs(errs("M", 3, 2)[:2]) < np.abs(m3[:2]))  # (omega_3: 2.2 % against 2.05 %)
    xs, _ = rule_table("M", 3)
    links = cantilever("M", 3, elements=2).links
    assert len(links) == 6  # 2 x 3 hinges, the first at the clamp: no root piece
    ends = np.cumsum([lk.segments[0].length for lk in links])
    assert ends[:-1] == pytest.approx([xs[1] / 2, xs[2] / 2, 0.5, 0.5 + xs[1] / 2, 0.5 + xs[2] / 2])
    with pytest.raises(ModelError, match=r"link 'beam'.elements: elements must be"):
        cantilever("G", 2, elements=0)


def test_mode_shape_plot(tmp_path: Path) -> None:
    from rodgen.runtime.plot import mode_lines
    md = rodgen.modes(cantilever("G", 4, L=2.0))
    s, w = mode_lines(md, "beam")
    assert s[0] == pytest.approx(0.0) and s[-1] == pytest.approx(2.0)
    assert np.all(np.diff(s) > 0) and w.shape == (4, s.size)
    # the first mode of a cantilever bends one way: no sign change, largest at the tip
    assert np.all(w[0] >= -1e-12) and w[0, -1] == pytest.approx(1.0)
    assert np.sum(np.diff(np.sign(w[1][np.abs(w[1]) > 1e-9])) != 0) == 1  # the second has one node
    fig = md.plot(tmp_path / "modes.png", link="beam")
    assert (tmp_path / "modes.png").stat().st_size > 1000 and fig is not None


# -- compiled: linearize and modes from the exact Jacobian ---------------------------------------------

@pytest.fixture(scope="module")
def flexarm(build_dir: Path) -> tuple[rodgen.Model, object]:
    from rodgen.codegen import CodegenOptions
    m = rodgen.Model("flexarm")
    m.parameter("EJ", 2.0)
    hub = m.link("hub", initial=-math.pi / 2)
    hub.rigid("hubs", 0.1, rod=rodgen.Rod(mass=1.0))
    m.elastic("beam", parent="hub", length=1.0, EJ="EJ", mass=0.5, rule="G", n=3, damping=0.01)
    return m, rodgen.build(m, build_dir=build_dir, codegen=CodegenOptions(jacobian=True))


def test_linearize_against_finite_differences(flexarm: tuple) -> None:
    _, sys_ = flexarm
    rng = np.random.default_rng(3)
    q, qd, u = rng.normal(0, 0.3, 4), rng.normal(0, 0.5, 4), np.array([0.7])
    A, B = sys_.linearize(q, qd, u)
    y = np.concatenate([q, qd])
    h = 1e-6
    Af = np.array([(sys_.rhs(0, y + h * e, u) - sys_.rhs(0, y - h * e, u)) / (2 * h) for e in np.eye(8)]).T
    Bf = np.array([(sys_.rhs(0, y, u + h * e) - sys_.rhs(0, y, u - h * e)) / (2 * h) for e in np.eye(1)]).T
    assert A.shape == (8, 8) and B.shape == (8, 1)
    assert np.max(np.abs(A - Af)) < 1e-6 * np.max(np.abs(A))
    assert np.max(np.abs(B - Bf)) < 1e-6 * np.max(np.abs(B))


def test_compiled_modes_agree_with_model_modes(flexarm: tuple) -> None:
    """Three ways to K: the C Jacobian, the symbolic chain derivative, differences of the compiled bias."""
    m, sys_ = flexarm
    q0 = np.array([-math.pi / 2, 0.0, 0.0, 0.0])
    a, b = sys_.modes(q0), rodgen.modes(m, q0)
    assert a.omega == pytest.approx(b.omega, rel=1e-9)
    from rodgen.runtime.linear import _stiffness_fd
    K = _stiffness_fd(sys_, q0, np.zeros(1), None)
    assert a.K == pytest.approx(K, rel=1e-6, abs=1e-6 * np.max(np.abs(K)))
    w2 = sl.eigh(0.5 * (K + K.T), sys_.mass_matrix(q0), eigvals_only=True)
    assert a.omega == pytest.approx(np.sqrt(w2), rel=1e-6)


def test_flexible_arm_example(tmp_path: Path, build_dir: Path) -> None:
    """The example: hub-locked frequencies match the beam; after the slew the tip rings at the first one.

    The ringing frequency comes from the time simulation of the mixed problem (hub prescribed, beam
    free), an independent path from the eigenproblem of the linearised chain.
    """
    import importlib.util
    spec = importlib.util.spec_from_file_location("example_flexible_arm",
                                                  Path(__file__).parents[1] / "examples" / "flexible_arm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    import sys
    sys.modules[spec.name] = mod  # its dataclass needs its module registered
    spec.loader.exec_module(mod)
    run = mod.main([str(tmp_path), "--t-end", "2.0", "--dt", "0.004", "--build-dir", str(build_dir)])
    assert run.clamped_hz[0] == pytest.approx(run.beam_hz[0], rel=1e-4)  # M_6: 6e-6 below the beam
    assert run.clamped_hz[1] == pytest.approx(run.beam_hz[1], rel=0.01)
    assert run.free_hz[0] == 0.0 and run.free_hz[1] > run.clamped_hz[0]
    assert run.ring_hz == pytest.approx(run.clamped_hz[0], rel=5e-3)  # a fit to 1.2 s of signal
    # work balance: the hub torque's work = the change of energy + what the hinge dampers took
    res = run.result
    from scipy.integrate import trapezoid
    work = trapezoid(run.hub_torque * res.qd[:, 0], res.t)
    dissipated = trapezoid(0.002 * np.sum(res.qd[:, 1:] ** 2, axis=1), res.t)
    energy = res.kinetic[-1] + res.potential[-1] - res.kinetic[0] - res.potential[0]
    assert work == pytest.approx(energy + dissipated, rel=2e-3)
    for name in ("flexible_arm_modes.png", "flexible_arm_slew.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_cli_modes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from rodgen.cli import main
    arm = str(Path(__file__).parents[1] / "examples" / "flexible_arm.yaml")
    assert main(["modes", arm, "--fixed", "phi_hub", "--count", "2", "--plot", str(tmp_path / "m.png"),
                 "--link", "beam"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    hz = float(rows[0][2])
    assert len(rows) == 2 and hz == pytest.approx(1.8751040687 ** 2 * math.sqrt(10.0 / 0.8) / (2 * math.pi),
                                                  rel=1e-4)  # the clamped beam (M_6)
    assert (tmp_path / "m.png").stat().st_size > 1000
    assert main(["modes", arm, "--q0", "1,2"]) == 2
    assert "q0 must have shape (7,)" in capsys.readouterr().err
