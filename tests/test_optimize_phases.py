"""Several collocation phases joined by impact maps (``optimize.MultiPhase``): the NLP's Jacobian against central
differences, the compass gait's passive walk found as the least-effort periodic gait (against the passive
gait's fixed point, Goswami et al. 1996, and rodgen's ``impact`` and hybrid simulation), errors naming the
place."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import rodgen
from _num import central_jacobian
from rodgen.model.loader import load_dict

pytest.importorskip("casadi")
from rodgen.optimize import MultiPhase, OptimizeError, Periodic, Problem, Transition  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the passive compass gait's step on the 3 degree slope (examples/compass_gait.yaml, Goswami et al.): the
#: post-impact stance and swing angles, and the step from foot to foot (x, y), along the slope
STANCE, SWING = 0.2187, -0.3234
GAMMA = 3 * math.pi / 180
STEP = (math.sin(-SWING) + math.sin(STANCE), -math.tan(GAMMA) * (math.sin(-SWING) + math.sin(STANCE)))
RELABEL = {"th_a": "th_b", "th_b": "th_a"}


@pytest.fixture(scope="module")
def walker(build_dir: Path) -> object:
    """The compass gait (floating hip, point feet foot_a and foot_b) with its hip actuated."""
    d = yaml.safe_load((ROOT / "examples" / "compass_gait.yaml").read_text())
    d["links"][1]["joint"] = {"actuated": True}
    return rodgen.build(load_dict(d), build_dir=build_dir)


def stance(walker: object, contact: str, **kw: object) -> Problem:
    args = dict(nodes=5, method="hermite-simpson", duration=(0.2, 1.5), contacts=[contact],
                objective="tau_leg_b**2")
    args.update(kw)
    return Problem(walker, **args)  # type: ignore[arg-type]


def test_multiphase_jacobian_matches_central_differences(walker: object, build_dir: Path) -> None:
    """Three phases: stance on foot_a in two parts (continuity), heel strike of foot_b into stance on foot_b,
    heel strike of foot_a back to the first phase with a forward shift: every kind of link row."""
    mp = MultiPhase([stance(walker, "foot_a", method="trapezoidal", nodes=4), stance(walker, "foot_a", nodes=3),
                     stance(walker, "foot_b", method="backward-euler", nodes=4)],
                    transitions=[None, Transition(touchdown=["foot_b"])],
                    periodic=Periodic(touchdown=["foot_a"], shift={"x": 1.0, "y": -0.05}), input_rate=0.3)
    nlp = mp.compile(build_dir=build_dir)
    # links: continuity (8 rows), impacts (8 + gap + normal impulse + two cone rows)
    assert nlp.m == sum(ph.m for ph in nlp.phases) + 8 + 2 * 12
    # the phases entered through an impact or a continuity leave their first-node contact rows to the link
    assert all(not v.start_position_rows and not v.start_velocity_rows for v in nlp.problem.phases)
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = nlp.guess() + 0.2 * rng.normal(size=nlp.n)
        for k, ph in enumerate(nlp.phases):
            x[nlp.xoff[k + 1] - 1] = 0.6                     # the free durations
        J = nlp.jacobian(x).toarray()
        Jn = central_jacobian(nlp.constraints, x)
        assert np.abs(J - Jn).max() <= 1e-6 * max(1.0, np.abs(Jn).max())
        outside = np.ones_like(J, dtype=bool)
        outside[nlp.jacobian_structure()] = False
        assert np.all(Jn[outside] == 0.0)
        gn = central_jacobian(lambda y: np.array([nlp.objective(y)]), x)[0]
        assert np.abs(nlp.gradient(x) - gn).max() <= 1e-6 * max(1.0, np.abs(gn).max())
        # the input-rate penalty (a tenth of the objective or more here) is in the objective and its gradient
        parts = nlp.split(x)
        rate = nlp.objective(x) - sum(ph.objective(xk) for ph, xk in zip(nlp.phases, parts))
        assert rate > 0.1 * nlp.objective(x)


@pytest.fixture(scope="module")
def passive(walker: object, build_dir: Path) -> object:
    """The least hip effort over one step with the step of the passive gait: the passive gait itself."""
    mp = MultiPhase([stance(walker, "foot_a", nodes=15)],
                    periodic=Periodic(touchdown=["foot_b"], relabel=RELABEL, shift={"x": STEP[0], "y": STEP[1]}))
    nlp = mp.compile(build_dir=build_dir)
    ph = nlp.phases[0]
    s = np.linspace(0.0, 1.0, ph.points)
    T, l = 0.75, 1.0
    tha, thb = STANCE + (SWING - STANCE) * s, SWING + (STANCE - SWING) * s
    w = (SWING - STANCE) / T
    Z = np.column_stack([-l * np.sin(tha), l * np.cos(tha), tha, thb, -l * np.cos(tha) * w, -l * np.sin(tha) * w,
                         np.full_like(s, w), np.full_like(s, -w), 0 * s])
    return nlp.solve(np.append(Z.ravel(), T), options={"tol": 1e-10})


def test_least_effort_step_is_the_passive_gait(passive: object) -> None:
    r = passive.phases[0]  # type: ignore[attr-defined]
    assert passive.success and passive.constraint_violation < 1e-9  # type: ignore[attr-defined]
    # no effort is needed: the torque is the collocation's error only
    assert np.abs(r.u).max() < 0.05
    np.testing.assert_allclose(r.q[0, 2:], [STANCE, SWING], atol=2e-4)


def test_impact_conditions_hold_at_the_solution(walker: object, passive: object) -> None:
    r = passive.phases[0]  # type: ignore[attr-defined]
    qd_plus, impulse, after, _ = walker.impact(r.q[-1], r.qd[-1], ["foot_b"])  # type: ignore[attr-defined]
    assert after == ["foot_b"]                                       # the old stance foot leaves the ground
    perm = [0, 1, 3, 2]
    np.testing.assert_allclose(r.qd[0], qd_plus[perm], atol=1e-8)
    np.testing.assert_allclose(passive.impulses[0]["foot_b"], impulse[2:4], atol=1e-8)  # type: ignore[attr-defined]
    np.testing.assert_allclose(r.q[0], r.q[-1][perm] - [STEP[0], STEP[1], 0, 0], atol=1e-10)
    assert abs(walker.constraint_position(r.q[-1])[3]) < 1e-10      # foot_b on the ground at the strike


def test_hybrid_simulation_follows_the_optimum_through_the_impact(walker: object, passive: object) -> None:
    """The compiled hybrid simulation from the optimum's start under its torques: the heel strike at the
    optimum's duration and the state after it the relabelled start, to the collocation's tolerance."""
    r = passive.phases[0]  # type: ignore[attr-defined]
    y0 = np.concatenate([r.q[0], r.qd[0]])
    sim = walker.simulate(y0, r.duration + 0.05, 1e-3, u=r.inputs_table(), contacts=["foot_a"],  # type: ignore
                          disarmed=["foot_b"], arm_gap=0.02, event_tol=1e-13)
    td = [e for e in sim.events if e["kind"] == "touchdown"]
    assert td and td[0]["block"] == "foot_b"
    assert abs(td[0]["t"] - r.duration) < 2e-3
    i = np.flatnonzero(sim.t == td[0]["t"])[-1]
    perm = [0, 1, 3, 2]
    np.testing.assert_allclose(sim.qd[i][perm], r.qd[0], atol=1e-2)
    np.testing.assert_allclose(sim.q[i][2:][::-1], r.q[0][2:], atol=2e-3)


def test_ipopt_is_given_the_jacobians_pattern(walker: object, build_dir: Path) -> None:
    """The constraints' CasADi function carries the Jacobian's sparse pattern (taken dense, IPOPT factored a
    dense KKT matrix: 40 times slower on Kelly's biped), and its values through CasADi are the NLP's."""
    import casadi

    from rodgen.optimize.phases import _Callback
    mp = MultiPhase([stance(walker, "foot_a", nodes=6)],
                    periodic=Periodic(touchdown=["foot_b"], relabel=RELABEL, shift={"x": STEP[0], "y": STEP[1]}))
    nlp = mp.compile(build_dir=build_dir)
    rows, cols = nlp.jacobian_structure()
    g = _Callback("g", nlp.n, nlp.m, nlp.constraints, rows, cols, nlp.jacobian_values)
    X = casadi.MX.sym("x", nlp.n)
    J = casadi.jacobian(g(X), X)
    assert J.sparsity().nnz() == len(set(zip(rows.tolist(), cols.tolist()))) < nlp.n * nlp.m / 5
    x = nlp.guess() + 0.1 * np.random.default_rng(5).normal(size=nlp.n)
    np.testing.assert_allclose(np.array(casadi.Function("J", [X], [J])(x)), nlp.jacobian(x).toarray(), rtol=1e-14)


def test_errors_name_the_place(walker: object, build_dir: Path) -> None:
    with pytest.raises(OptimizeError, match=r"phases\[1\]: contacts\[0\]: unknown contact 'foot_c'"):
        MultiPhase([stance(walker, "foot_a"), stance(walker, "foot_c")]).check()
    with pytest.raises(OptimizeError, match=r"transitions\[0\]\.touchdown\[0\]: unknown contact 'foot'"):
        MultiPhase([stance(walker, "foot_a"), stance(walker, "foot_b")], [Transition(touchdown=["foot"])]).check()
    with pytest.raises(OptimizeError, match=r"periodic\.relabel\['th_a'\]: unknown coordinate 'th_c'"):
        MultiPhase([stance(walker, "foot_a")], periodic=Periodic(relabel={"th_a": "th_c"})).check()
    with pytest.raises(OptimizeError, match=r"periodic\.relabel: the relabelling is not a one-to-one"):
        MultiPhase([stance(walker, "foot_a")], periodic=Periodic(relabel={"th_a": "th_b"})).check()
    with pytest.raises(OptimizeError, match=r"periodic\.shift\['z'\]: unknown coordinate"):
        MultiPhase([stance(walker, "foot_a")], periodic=Periodic(shift={"z": 1.0})).check()
    with pytest.raises(OptimizeError, match=r"transitions\[0\]: phases\[1\] starts with th_a in \[0\.3, 0\.3\].*"
                                            r"inconsistent bounds"):
        MultiPhase([stance(walker, "foot_a", final={"th_a": 0.1}), stance(walker, "foot_a", initial={"th_a": 0.3})]
                   ).check()
    with pytest.raises(OptimizeError, match=r"input_rate\['tau'\]: unknown input 'tau'; the model's inputs: tau_leg_b"):
        MultiPhase([stance(walker, "foot_a")], input_rate={"tau": 1.0}).check()
    with pytest.raises(OptimizeError, match=r"input_rate: expected a finite number >= 0, got -1"):
        MultiPhase([stance(walker, "foot_a")], input_rate=-1).check()
    with pytest.raises(OptimizeError, match=r"phases\[0\]\.hessian: the impact map's second derivatives"):
        MultiPhase([stance(walker, "foot_a", contacts=[], hessian="exact")]).check()
    with pytest.raises(OptimizeError, match=r"phases\[1\]\.model: every phase is on the same compiled model"):
        passive_walker = rodgen.build(rodgen.load(ROOT / "examples" / "compass_gait.yaml"), build_dir=build_dir)
        MultiPhase([stance(walker, "foot_a"), Problem(passive_walker, contacts=["foot_a"])]).check()
