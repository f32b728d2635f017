"""The exoskeleton's optimal step (examples/exo5_walk_optimal.py): the stance foot held by the multi-phase
problem stays put at every point, its force inside the friction cone, the collocation equations hold with the
runtime's constrained dynamics, the optimum resimulates (each interval replayed by the compiled integrator
from its node reaches the next node to the collocation's accuracy), and refined on a finer mesh it reaches
the next node many times closer."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("casadi")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import exo5_walk_optimal as exo  # noqa: E402


@pytest.fixture(scope="module")
def exo5(build_dir: Path) -> Any:
    return exo.build(build_dir)


def _defects(model: Any, r: Any) -> np.ndarray:
    """Hermite-Simpson's defects per interval and set (k, 2, 2 nq) of the solution, with the accelerations of
    the runtime's constrained dynamics (foot_a held) at its points."""
    nq = model.nq
    f = np.array([np.concatenate([qd, model.constrained_dynamics(q, qd, u, ["foot_a"])[0]])
                  for q, qd, u in zip(r.q, r.qd, r.u)])
    y = np.hstack([r.q, r.qd])
    h = r.t[2] - r.t[0]
    out = []
    for k in range(0, len(r.t) - 2, 2):
        a, m, b = k, k + 1, k + 2
        out.append([y[b] - y[a] - h / 6 * (f[a] + 4 * f[m] + f[b]), y[m] - (y[a] + y[b]) / 2 - h / 8 * (f[a] - f[b])])
    assert f.shape[1] == 2 * nq
    return np.array(out)


def _check_step(model: Any, res: Any) -> None:
    r = res.phases[0]
    # foot_a where it starts, on the ground, at rest, at every node and midpoint (the model's own functions)
    foot = model.constraint_position(r.q)[:, :2]
    assert np.abs(foot - foot[0]).max() <= 1e-8 and abs(foot[0, 1]) <= 1e-8
    rate = np.einsum("prn,pn->pr", model.constraint_jacobian(r.q)[:, :2], r.qd)
    assert np.abs(rate).max() <= 1e-8
    # its force (the runtime's constrained dynamics at the points) pushes and stays inside the cone (mu = 1)
    lam = np.array([model.constrained_dynamics(q, qd, u, ["foot_a"])[1][:2] for q, qd, u in zip(r.q, r.qd, r.u)])
    assert lam[:, 1].min() > 0.0 and np.all(np.abs(lam[:, 0]) <= lam[:, 1] * (1 + 1e-6) + 1e-6)
    # the collocation equations of the joints with the runtime's dynamics; the base's (x, y) rows are replaced
    # by the held foot's position and velocity, so they hold only to the collocation's accuracy
    d = _defects(model, r)
    nq = model.nq
    joints = [i for i in range(2 * nq) if i not in (0, 1, nq, nq + 1)]
    assert np.abs(d[:, :, joints]).max() <= 1e-6


def test_small_mesh_step_holds_the_stance_foot(exo5: Any, build_dir: Path) -> None:
    """4 nodes: the path the refined gait takes (multi-phase, foot_a held, the heel strike), on a mesh small
    enough to solve in seconds."""
    res = exo.solve(exo5, 4, build_dir=build_dir)
    assert res.success, res.message
    _check_step(exo5, res)


@pytest.fixture(scope="module")
def coarse(exo5: Any, build_dir: Path) -> Any:
    """The example's step on 15 nodes (about 8 s)."""
    res = exo.solve(exo5, 15, build_dir=build_dir)
    assert res.constraint_violation < 1e-4, res.message
    return res


def test_step_is_periodic_through_rodgen_impact(exo5: Any, coarse: Any) -> None:
    """The heel strike at the optimum is rodgen's impact, the legs relabelled and the hip a step further; the
    work is integrated from the solution's own torques and rates; the stance foot held as on the small mesh; each
    interval replayed by the compiled integrator from its node under the transcription's own input
    (inputs_table(samples=20)) ends within 2e-2 of the next node (measured 5e-4 to 1.0e-2)."""
    r = coarse.phases[0]
    assert coarse.duration == pytest.approx(0.5)
    qd_plus, impulse, after, _ = exo5.impact(r.q[-1], r.qd[-1], ["foot_b"])
    assert after == ["foot_b"]
    c = list(exo5.coordinates)
    perm = [c.index(exo.RELABEL.get(n, n)) for n in c]
    np.testing.assert_allclose(r.qd[0], qd_plus[perm], atol=1e-8)
    np.testing.assert_allclose(r.q[0], r.q[-1][perm] - np.eye(len(c))[0] * exo.STEP, atol=1e-10)
    w = exo.work(coarse)
    assert set(w) == set(exo5.inputs) and all(v >= 0 for v in w.values())
    _check_step(exo5, coarse)
    assert exo.replay(exo5, coarse).max() < 2e-2


def test_refined_step_replays_closer(exo5: Any, coarse: Any, build_dir: Path) -> None:
    """Refined on 29 nodes from the 15-node optimum (its trajectories interpolated): the effort within 1 % of
    the coarse one's, the stance foot held as before, and each interval replayed from its node ends at least
    ten times closer to the next node (measured 20 times: 1.2e-5 to 5e-4 against 5e-4 to 1.0e-2): the coarse
    replay's error is the mesh's, not the dynamics'."""
    fine = exo.solve(exo5, 29, build_dir=build_dir, previous=coarse)
    assert fine.constraint_violation < 1e-4, fine.message
    assert abs(fine.objective - coarse.objective) < 1e-2 * coarse.objective
    _check_step(exo5, fine)
    assert exo.replay(exo5, fine).max() < exo.replay(exo5, coarse).max() / 10
