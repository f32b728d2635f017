"""Dry friction with stiction on coordinates (``friction: {static, kinetic}`` of a joint or a variable
segment): stick and slip as phases of the hybrid simulation, with located events.

References, all by hand: a block on a rail under a piecewise-linear force sticks until the force
reaches the static limit, slides with the kinetic force against it (motion in closed form, polynomials
of t) and sticks again when its velocity returns to zero; a pendulum with joint stiction released at
rest swings from rest to rest, each stop angle given by the energy balance ``m g L (sin a - sin b) =
F_k |a - b|`` (a scalar root), and stays at the first stop where the gravity torque ``m g L |cos b|``
is within the static limit; the total energy never increases.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import rodgen
from rodgen import Friction, InputTable, Joint, Link, Model, ModelError, PointMass
from rodgen.model import load_dict

M_BLOCK, FS_BLOCK, FK_BLOCK = 2.0, 3.0, 2.0
M, L, G, FS, FK = 1.0, 0.8, 9.81, 3.0, 1.2


def _block_dict(**friction):
    return {"name": "stiction_block", "gravity": [0, -9.81],
            "parameters": {"m": M_BLOCK, "Fs": FS_BLOCK, "Fk": FK_BLOCK},
            "couplings": {"phi_rail": 0},
            "links": [{"name": "rail", "joint": {"actuated": False},
                       "segments": [{"name": "s", "type": "variable", "length": 1.0,
                                     "friction": friction or {"static": "Fs", "kinetic": "Fk"},
                                     "masses": [{"mass": "m", "fraction": 1.0}]}]}]}


def _pendulum() -> Model:
    model = Model(name="stiction_pendulum", gravity=(0.0, "-g"))
    model.parameter("g", G)
    model.parameter("m", M)
    model.parameter("L", L)
    model.parameter("Fs", FS)
    model.parameter("Fk", FK)
    arm = Link("arm", joint=Joint(actuated=False, friction=Friction(static="Fs", kinetic="Fk")))
    arm.rigid("bar", "L", masses=[PointMass("m", fraction=1.0)])
    model.links.append(arm)
    return model


@pytest.fixture(scope="module")
def block(build_dir):
    return rodgen.build(load_dict(_block_dict()), build_dir=build_dir)


@pytest.fixture(scope="module")
def pendulum(build_dir):
    return rodgen.build(_pendulum(), build_dir=build_dir)


def test_the_friction_block_is_a_one_row_constraint_on_the_coordinate(block, pendulum) -> None:
    assert [(b.name, b.kind, b.nrows) for b in block.constraints] == [("l_s_friction", "friction", 1)]
    assert [(b.name, b.kind, b.nrows) for b in pendulum.constraints] == [("phi_arm_friction", "friction", 1)]
    np.testing.assert_array_equal(pendulum.constraint_jacobian([0.3]), [[1.0]])
    np.testing.assert_array_equal(pendulum.constraint_friction(), [FS])


def _block_motion(c: float, T: float):
    """Force F = c t up to T, then c (2T - t) down to 0 at 2T, then 0. Sticks until c t = Fs, then slides
    forward with m a = F - Fk; returns the slip time, the velocity (a closed-form polynomial of t,
    piecewise) and the time the velocity returns to zero."""
    m, fk = M_BLOCK, FK_BLOCK
    t_slip = FS_BLOCK / c

    def force(t: float) -> float:
        return c * t if t <= T else (c * (2 * T - t) if t <= 2 * T else 0.0)

    def velocity(t: float) -> float:
        # integral of (F - Fk)/m from t_slip, piece by piece (each piece a polynomial)
        def prim(a: float, b: float) -> float:
            v = 0.0
            for lo, hi, f in ((0.0, T, lambda s: c * s * s / 2), (T, 2 * T, lambda s: c * (2 * T * s - s * s / 2)),
                              (2 * T, math.inf, lambda s: 0.0 * s)):
                x0, x1 = max(a, lo), min(b, hi)
                if x1 > x0:
                    v += f(x1) - f(x0)
            return v
        return (prim(t_slip, t) - fk * (t - t_slip)) / m

    t_stick = brentq(velocity, 2 * T, 2 * T + 100.0)
    return t_slip, velocity, t_stick, force


def test_block_under_a_ramped_force_sticks_slips_and_sticks_again_at_the_hand_computed_times(block) -> None:
    c, T, dt = 1.0, 5.0, 1e-3
    t_slip, velocity, t_stick, force = _block_motion(c, T)
    assert t_slip == pytest.approx(3.0) and 10.0 < t_stick < 14.0
    u = InputTable(np.array([0.0, T, 2 * T]), np.array([[0.0], [c * T], [0.0]]))
    res = block.simulate(np.array([1.0, 0.0]), 15.0, dt, u=u)
    assert res.status == "success", res.message
    ev = [(e["kind"], e["t"]) for e in res.events]
    assert [k for k, _ in ev] == ["slip", "stick"]
    assert ev[0][1] == pytest.approx(t_slip, abs=1e-8)
    assert ev[1][1] == pytest.approx(t_stick, abs=1e-6)
    # stuck: the velocity is held at zero, the friction force balances the applied force (below Fs)
    code = res.active["l_s_friction"]
    stuck = (code == 1) & ((res.t < t_slip - 1e-6) | (res.t > t_stick + 1e-6))
    assert np.max(np.abs(res.qd[stuck, 0])) < 1e-9
    np.testing.assert_allclose(res.q[res.t < t_slip, 0], 1.0, atol=1e-12)
    f_applied = np.array([force(t) for t in res.t])
    np.testing.assert_allclose(res.lam[stuck, 0], -f_applied[stuck], atol=1e-9)
    # slipping: the friction force is the kinetic one against the motion, the velocity the closed form
    sliding = (res.t > t_slip + 1e-6) & (res.t < t_stick - 1e-6)
    assert np.all(code[sliding] == 3)                       # RODGEN_SLIDE_MINUS: moving +, force -Fk
    np.testing.assert_allclose(res.lam[sliding, 0], -FK_BLOCK, rtol=0, atol=1e-12)
    v_ref = np.array([velocity(t) for t in res.t[sliding]])
    np.testing.assert_allclose(res.qd[sliding, 0], v_ref, atol=1e-8)
    # where it comes to rest: 1 + the integral of the velocity
    x_rest = 1.0 + _integral(velocity, t_slip, t_stick, (T, 2 * T))
    assert res.q[-1, 0] == pytest.approx(x_rest, abs=1e-7)


def _integral(f, a: float, b: float, breaks: tuple[float, ...]) -> float:
    """The integral of f over [a, b] by adaptive quadrature, told where f's pieces meet."""
    from scipy.integrate import quad
    return quad(f, a, b, limit=200, points=list(breaks), epsabs=1e-12, epsrel=1e-12)[0]


def _pendulum_stops(theta0: float) -> list[float]:
    """Rest angles of the pendulum released at rest at theta0: from each rest angle a where the gravity
    torque m g L |cos a| exceeds Fs it swings through the bottom (-pi/2) and stops at b with
    m g L (sin a - sin b) = Fk |a - b|, between the bottom and the mirror image -pi - a of a."""
    mgl = M * G * L
    stops = [theta0]
    while mgl * abs(math.cos(stops[-1])) > FS:
        a = stops[-1]

        def balance(b: float, a: float = a) -> float:
            return mgl * (math.sin(a) - math.sin(b)) - FK * abs(a - b)
        stops.append(brentq(balance, -math.pi / 2, -math.pi - a, xtol=1e-14))
        assert len(stops) < 50
    return stops


def test_pendulum_with_joint_stiction_swings_from_rest_to_rest_and_stays_where_gravity_is_within_the_static_limit(
        pendulum) -> None:
    theta0 = 0.0
    stops = _pendulum_stops(theta0)
    assert len(stops) >= 3, stops
    dt = 1e-3
    res = pendulum.simulate(np.array([theta0, 0.0]), 12.0, dt)
    assert res.status == "success", res.message
    sticks = [e for e in res.events if e["kind"] == "stick"]
    slips = [e for e in res.events if e["kind"] == "slip"]
    assert len(sticks) == len(stops) - 1 and len(slips) == len(stops) - 1
    angles = [float(np.interp(e["t"], res.t, res.q[:, 0])) for e in sticks]
    np.testing.assert_allclose(angles, stops[1:], atol=1e-6)
    final = stops[-1]
    assert M * G * L * abs(math.cos(final)) <= FS
    after = res.t > sticks[-1]["t"] + 1e-6
    np.testing.assert_allclose(res.q[after, 0], final, atol=1e-6)
    assert np.max(np.abs(res.qd[after, 0])) < 1e-9
    np.testing.assert_allclose(res.lam[after, 0], M * G * L * math.cos(final), rtol=1e-7)
    # energy never increases (up to the integrator's error)
    E = res.kinetic + res.potential
    assert np.max(np.diff(E)) < 1e-9
    assert E[-1] < E[0] - 1.0


@pytest.mark.parametrize("side,moves", [(-1e-3, False), (1e-3, True)])
def test_pendulum_at_rest_sticks_exactly_when_the_gravity_torque_is_within_the_static_limit(
        pendulum, side, moves) -> None:
    """The threshold angle where m g L cos(theta) = Fs, by hand: just below it the arm stays, just above it
    slips at once."""
    theta_star = math.acos(FS / (M * G * L))          # gravity torque m g L cos(theta) = Fs
    theta0 = theta_star - side                         # side < 0: further from horizontal, less torque
    res = pendulum.simulate(np.array([theta0, 0.0]), 0.5, 1e-3)
    assert res.status == "success", res.message
    if moves:
        assert res.events[0]["kind"] == "slip" and res.events[0]["t"] == 0.0
        assert res.q[-1, 0] < theta0 - 1e-3
    else:
        assert res.events == []
        np.testing.assert_array_equal(res.q[:, 0], theta0)
        assert np.max(np.abs(res.qd[:, 0])) == 0.0
        np.testing.assert_allclose(res.lam[:, 0], M * G * L * math.cos(theta0), rtol=1e-12)


@pytest.mark.parametrize("friction,field,needle", [
    ({"static": 1.0, "kinetic": 2.0}, "friction.kinetic", "exceeds the static limit"),
    ({"static": -1.0}, "friction.static", "must not be negative"),
    ({"static": 1.0, "kinetic": -0.5}, "friction.kinetic", "must not be negative"),
    ({"static": ".inf"}, "friction.static", ""),
    ({"static": "nan_value"}, "friction.static", "never defined"),
    ({"kinetic": 1.0}, "friction", "static"),
    ({"static": 1.0, "viscous": 0.1}, "friction", "viscous"),
])
def test_bad_friction_is_a_model_error_naming_the_link_and_field(friction, field, needle) -> None:
    d = _block_dict(**friction)
    if friction.get("static") == ".inf":
        d["links"][0]["segments"][0]["friction"] = {"static": float("inf")}
    with pytest.raises(ModelError) as ei:
        load_dict(d).validate()
    text = str(ei.value)
    assert "link 'rail'" in text and "segment 's'" in text and field in text, text
    assert needle in text, text


def test_bad_joint_friction_in_the_builder_names_the_link() -> None:
    model = _pendulum()
    model.links[0].joint.friction = Friction(static=1.0, kinetic=1.5)
    with pytest.raises(ModelError, match=r"link 'arm'.*joint\.friction\.kinetic"):
        model.validate()
    model.links[0].joint.friction = Friction(static=float("nan"))
    with pytest.raises(ModelError, match=r"link 'arm'.*joint\.friction\.static"):
        model.validate()


def test_friction_on_a_rigid_segment_is_refused() -> None:
    d = _block_dict()
    seg = d["links"][0]["segments"][0]
    seg.pop("type")
    with pytest.raises(ModelError, match="friction"):
        load_dict(d).validate()


def test_friction_round_trips_through_dump() -> None:
    from rodgen.model import dump
    text = dump(load_dict(_block_dict()))
    again = rodgen.model.load_dict(__import__("yaml").safe_load(text))
    (fr,) = again.frictions()
    assert (fr.name, fr.static.text, fr.kinetic.text) == ("l_s_friction", "Fs", "Fk")


@pytest.fixture(scope="module")
def stop_arm(build_dir):
    """The pendulum with a torque input and a lower stop at -1 rad on its angle besides the friction."""
    model = _pendulum()
    model.name = "stiction_stop_arm"
    model.links[0].joint.actuated = True
    model.links[0].limits = (-1.0, None)
    return rodgen.build(model, build_dir=build_dir)


def test_a_stop_holds_the_joint_while_it_presses_then_friction_sticks_then_it_slips(stop_arm) -> None:
    """Dropped from horizontal it lands on the stop (a plastic impact); a torque ramp c t lifts it off the
    stop when c t reaches the gravity torque m g L cos(1) (its force would pull), the friction holds it
    until c t exceeds that by Fs, then it slips."""
    c = 10.0
    mgl = M * G * L
    t_release, t_slip = mgl * math.cos(1.0) / c, (mgl * math.cos(1.0) + FS) / c
    assert mgl > FS                                      # from horizontal it slips at once and falls
    drop = stop_arm.simulate(np.array([0.0, 0.0]), 1.5, 1e-3)
    assert [e["kind"] for e in drop.events][:2] == ["slip", "limit"], drop.events
    t_hit = drop.events[1]["t"]
    after = drop.t > t_hit + 1e-6
    np.testing.assert_allclose(drop.q[after, 0], -1.0, atol=1e-9)
    assert np.all(drop.active["phi_arm_friction"][after] == 0)       # idle while the stop holds
    E = drop.kinetic + drop.potential
    assert np.max(np.diff(E)) < 1e-9
    # from rest on the stop, under the torque ramp
    y0 = np.array([-1.0, 0.0])
    ramp = InputTable(np.array([0.0, 10.0]), np.array([[0.0], [10.0 * c]]))
    res = stop_arm.simulate(y0, t_slip + 0.3, 1e-3, u=ramp, contacts=["phi_arm_lower"])
    assert res.status == "success", res.message
    kinds = [(e["kind"], e["block"]) for e in res.events]
    assert kinds == [("limit_release", "phi_arm_lower"), ("slip", "phi_arm_friction")], kinds
    assert res.events[0]["t"] == pytest.approx(t_release, abs=1e-8)
    assert res.events[1]["t"] == pytest.approx(t_slip, abs=1e-8)
    stuck = (res.t > t_release + 1e-6) & (res.t < t_slip - 1e-6)
    np.testing.assert_allclose(res.q[stuck, 0], -1.0, atol=1e-9)
    np.testing.assert_allclose(res.lam[stuck, 1], mgl * math.cos(1.0) - c * res.t[stuck], atol=1e-7)
    assert np.all(res.active["phi_arm_friction"][stuck] == 1)
    assert res.q[-1, 0] > -1.0 + 1e-3


def test_the_batch_integrators_refuse_a_model_with_stiction_and_dopri5_too(pendulum) -> None:
    with pytest.raises(ValueError, match="dry friction with stiction"):
        pendulum.simulate_batch(np.zeros((2, 2)), 0.1, 1e-3)
    with pytest.raises(ValueError, match="dry friction with stiction"):
        pendulum.simulate(np.zeros(2), 0.1, method="dopri5")
    from rodgen.runtime.solve import solve
    with pytest.raises(ValueError, match="dry friction with stiction"):
        solve(pendulum, np.zeros(2), 0.1, dt=1e-2)


def _double(constrained_terms: bool) -> Model:
    model = Model(name=f"stiction_double_{int(constrained_terms)}", gravity=(0.0, -9.81))
    model.parameter("Fs1", 2.0)
    model.parameter("Fk1", 1.5)
    a = Link("a", joint=Joint(friction=Friction(static="Fs1", kinetic="Fk1")))
    a.rigid("a_s", 0.7, masses=[PointMass(1.2, fraction=1.0)])
    b = Link("b", parent="a", angle="relative", joint=Joint(friction=Friction(static=0.8, kinetic=0.5)))
    b.rigid("b_s", 0.5, masses=[PointMass(0.6, fraction=1.0)])
    model.links += [a, b]
    return model


@pytest.mark.parametrize("constrained_terms", [True, False])
def test_constrained_dynamics_of_sticking_and_slipping_blocks_equals_a_numpy_kkt_solve(
        build_dir, constrained_terms) -> None:
    """Both factorisations of the C (the generated constrained_terms, the runtime's dense Cholesky): a
    sticking block is a row held, a slipping one the kinetic force J_r^T (+-Fk) added to the right side."""
    from rodgen.codegen import CodegenOptions
    sys = rodgen.build(_double(constrained_terms), build_dir=build_dir,
                       codegen=CodegenOptions(constrained_terms=constrained_terms))
    rng = np.random.default_rng(7)
    names = [b.name for b in sys.constraints]
    assert names == ["phi_a_friction", "th_b_friction"]
    fk = {"phi_a_friction": 1.5, "th_b_friction": 0.5}
    for _ in range(5):
        q, qd, u = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(2)
        M, h, B = sys.mass_matrix(q), sys.bias(q, qd), sys.input_map(q)
        J = sys.constraint_jacobian(q)
        for modes in ({"phi_a_friction": "stick", "th_b_friction": "slide_plus"},
                      {"phi_a_friction": "slide_minus", "th_b_friction": "stick"},
                      {"phi_a_friction": "slide_plus", "th_b_friction": "slide_minus"}):
            qdd, lam = sys.constrained_dynamics(q, qd, u, active=modes)
            f = B @ u - h
            lam_ref = np.zeros(2)
            held = []
            for i, nm in enumerate(names):
                if modes[nm] == "stick":
                    held.append(i)
                else:
                    lam_ref[i] = fk[nm] * (1.0 if modes[nm] == "slide_plus" else -1.0)
            f = f + J.T @ lam_ref
            # KKT: [M -J_h^T; J_h 0] [qdd; lam_h] = [f; -Jdot qd] (no Baumgarte terms: alpha = beta = 0)
            k = len(held)
            K = np.block([[M, -J[held].T], [J[held], np.zeros((k, k))]])
            rhs = np.concatenate([f, -sys.constraint_bias(q, qd)[held]])
            sol = np.linalg.solve(K, rhs)
            lam_ref[held] = sol[2:]
            np.testing.assert_allclose(qdd, sol[:2], rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(lam, lam_ref, rtol=1e-10, atol=1e-10)


def test_parameter_values_at_run_time_are_checked_too(pendulum) -> None:
    with pytest.raises(ModelError, match=r"link 'arm'\.joint\.friction.*kinetic friction Fk = 4 exceeds"):
        pendulum.simulate(np.zeros(2), 0.1, 1e-3, p={"Fk": 4.0})
    with pytest.raises(ModelError, match=r"link 'arm'\.joint\.friction\.static.*must not be negative"):
        pendulum.simulate(np.zeros(2), 0.1, 1e-3, p={"Fs": -1.0, "Fk": -2.0})


STICTION_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "{prefix}.h"
#include "rodgen_contact.h"
int main(void)
{{
    const rodgen_model *m = {prefix}_model();
    rodgen_hybrid_options o;
    rodgen_hybrid_state s;
    static double t[20000], y[40000];
    double y0[2] = {{0.0, 0.0}};
    rodgen_event ev[64];
    long n = 0, ne = 0, i;
    void *work = malloc((size_t)rodgen_hybrid_work_bytes(m));
    int st;
    rodgen_hybrid_defaults(&o);
    o.t_end = 12.0;
    o.dt = 1e-3;
    st = rodgen_hybrid_start(&s, m, 0, 0, 0, &o, 0.0, y0, 0, 0, work);
    if (st == RODGEN_OK) {{
        st = rodgen_hybrid_simulate(&o, &s, 20000, t, y, 0, 0, 0, &n, 64, ev, &ne);
    }}
    printf("%d %.17g %.17g\n", st, y[2 * (n - 1)], y[2 * (n - 1) + 1]);
    for (i = 0; i < ne; ++i) {{
        printf("%d %.17g\n", ev[i].kind, ev[i].t);
    }}
    free(work);
    return st;
}}
"""


def test_the_pendulum_sticks_where_the_hand_computation_says_from_c_alone(tmp_path) -> None:
    """The generated C with the runtime's hybrid simulator, built with gcc -std=c99 -Wall -Wextra -Werror
    -pedantic and no Python: the pendulum ends at the hand-computed last stop, at rest."""
    import shutil
    import subprocess

    from rodgen.codegen import generate
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    files = generate(_pendulum(), tmp_path)
    (tmp_path / "main.c").write_text(STICTION_C.format(prefix=files.spec.prefix))
    sources = sorted(n for n in files.files if n.endswith(".c"))
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "main.c", *sources, "-o", "run",
           "-lm"]
    built = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([str(tmp_path / "run")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    head, *events = run.stdout.strip().split("\n")
    _, angle, rate = head.split()
    stops = _pendulum_stops(0.0)
    assert float(angle) == pytest.approx(stops[-1], abs=1e-9) and abs(float(rate)) < 1e-12
    kinds = [int(e.split()[0]) for e in events]
    assert kinds.count(5) == len(stops) - 1 and kinds.count(2) == len(stops) - 1   # RODGEN_EVENT_STICK, _SLIP


def test_friction_forces_are_result_columns_and_csv_columns(block, tmp_path) -> None:
    u = InputTable(np.array([0.0, 5.0]), np.array([[0.0], [5.0]]))
    res = block.simulate(np.array([1.0, 0.0]), 4.0, 1e-2, u=u)
    assert list(res.friction) == ["l_s_friction"]
    col = res.friction["l_s_friction"]
    # by hand: -c t while it sticks (t < 3 s), -Fk while it slides forward
    before, after = res.t < 3.0 - 1e-9, res.t > 3.0 + 1e-6
    np.testing.assert_allclose(col[before], -res.t[before], atol=1e-9)
    np.testing.assert_allclose(col[after], -FK_BLOCK, atol=1e-12)
    path = tmp_path / "run.csv"
    res.to_csv(path)
    header = path.read_text().splitlines()[0].split(",")
    assert header[-1] == "l_s_friction"
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(data[:, -1], col)
