"""The plastic impact's active set by complementarity (Moreau, Glocker): each contact at the ground is
held (normal impulse >= 0, normal velocity after = 0) or released (impulse 0, normal velocity after >= 0).
Checked against an enumeration of every active set solved by its own KKT system (numpy), on a planar
walker with three two-link legs whose point feet are all at the ground, at random velocities; and against
the closed form of a free body on a flat foot pulled by a second body landing beside it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.model import load_dict

FEET = ("foot_a", "foot_b", "foot_c")


def _leg(name: str, parent: str | None, angle: float, knee: float) -> list[dict[str, Any]]:
    thigh: dict[str, Any] = {"name": f"thigh_{name}", "coordinate": f"th_{name}", "offset": "-pi/2",
                             "initial": angle, "segments": [{"name": f"thigh_{name}_s", "length": 0.5,
                                                             "masses": [{"mass": 3.0, "offset": 0.25}]}]}
    if parent is not None:
        thigh |= {"parent": parent, "at": "start"}
    else:
        thigh["segments"][0]["masses"].insert(0, {"mass": 10.0, "name": "hip"})
    shank = {"name": f"shank_{name}", "parent": f"thigh_{name}", "coordinate": f"kn_{name}", "initial": knee,
             "segments": [{"name": f"shank_{name}_s", "length": 0.5, "masses": [{"mass": 2.0, "offset": 0.2}]}],
             "markers": [{"name": f"foot_{name}", "segment": f"shank_{name}_s", "fraction": 1}]}
    return [thigh, shank]


def _tripod() -> Any:
    """A planar walker: a floating hip, three legs of thigh and shank (0.5 m each) with point feet."""
    links = _leg("a", None, 0.0, 0.0) + _leg("b", "thigh_a", 0.0, 0.0) + _leg("c", "thigh_a", 0.0, 0.0)
    return load_dict({"name": "tripod", "base": "floating", "gravity": [0, "-g"],
                      "parameters": {"g": {"value": 9.81}},
                      "links": links, "contacts": [{"name": f, "friction": 1.0} for f in FEET]})


@pytest.fixture(scope="module")
def tripod(build_dir: Path) -> Any:
    return rodgen.build(_tripod(), build_dir=build_dir)


def _stance(robot: Any, rng: np.random.Generator) -> np.ndarray | None:
    """A configuration with the three feet on the ground (y = 0): the hip at height h above x = 0, each
    foot at a random x_i, the knees bent (Newton on the legs' angles)."""
    names = list(robot.coordinates)
    legs = [names.index(f"{c}_{leg}") for leg in "abc" for c in ("th", "kn")]
    q = np.zeros(robot.nq)
    q[1] = rng.uniform(0.7, 0.85)
    q[legs] = np.tile([0.3, -0.6], 3)
    target = np.zeros(6)
    target[0::2] = np.sort(rng.uniform(-0.35, 0.35, 3))
    for _ in range(50):
        r = robot.constraint_position(q) - target
        if np.abs(r).max() < 1e-13:
            return q
        q[legs] -= np.linalg.solve(robot.constraint_jacobian(q)[:, legs], r)
    return None             # Newton did not converge from the bent legs: another sample


def _kkt(M: np.ndarray, J: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = J.shape[0]
    if k == 0:
        return v.copy(), np.zeros(0)
    sol = np.linalg.solve(np.block([[M, -J.T], [J, np.zeros((k, k))]]), np.r_[M @ v, np.zeros(k)])
    return sol[:M.shape[0]], sol[M.shape[0]:]


def _solutions(M: np.ndarray, J: np.ndarray, v: np.ndarray, tol: float) -> list[tuple[set[int], np.ndarray]]:
    """Every active set of the three 2-row contacts (tangential row, then normal) that is complementary:
    held contacts push, released ones do not move into the ground; with its velocity after."""
    out = []
    for held in itertools.chain.from_iterable(itertools.combinations(range(3), n) for n in range(4)):
        rows = [2 * i + r for i in held for r in (0, 1)]
        vp, lam = _kkt(M, J[rows], v)
        vn = J[1::2] @ vp
        if all(lam[2 * j + 1] >= -tol for j in range(len(held))) and all(
                vn[i] >= -tol for i in range(3) if i not in held):
            out.append((set(held), vp))
    return out


def _greedy(M: np.ndarray, J: np.ndarray, v: np.ndarray) -> set[int]:
    """The set of releasing the most pulling contact until none pulls (no contact held again)."""
    held = [0, 1, 2]
    while held:
        rows = [2 * i + r for i in held for r in (0, 1)]
        _, lam = _kkt(M, J[rows], v)
        j = int(np.argmin(lam[1::2]))
        if lam[2 * j + 1] >= 0:
            break
        held.pop(j)
    return set(held)


def test_tripod_impact_is_the_complementarity_solution(tripod: Any) -> None:
    """At 3000 random stances and velocities the impact on the three feet is a complementary solution of the
    enumeration (held feet push, released ones leave the ground or stay on it), its velocity that
    solution's to 1e-9, and some of the states need a released foot held again (releasing the most pulling
    foot until none pulls would leave a foot moving into the ground)."""
    rng = np.random.default_rng(5)
    needs_readd = solved = 0
    for _ in range(3000):
        q = _stance(tripod, rng)
        if q is None:
            continue
        J = tripod.constraint_jacobian(q)
        np.testing.assert_allclose(tripod.constraint_position(q)[1::2], 0.0, atol=1e-12)
        v = rng.normal(size=tripod.nv)
        M = tripod.mass_matrix(q)
        sols = _solutions(M, J, v, 1e-9 * (1 + np.abs(v).max()))
        v_plus, impulse, after, loss = tripod.impact(q, v, list(FEET))
        held = {FEET.index(f) for f in after}
        assert np.all(impulse[1::2] >= -1e-9) and loss >= -1e-9     # no held foot pulls
        if not sols:       # held tangential rows: a complementary set need not exist; none pulls
            continue
        solved += 1
        match = [vp for s, vp in sols if s == held]
        assert match, (held, [s for s, _ in sols])
        np.testing.assert_allclose(v_plus, match[0], atol=1e-9 * (1 + np.abs(v).max()))
        assert np.all(J[1::2] @ v_plus >= -1e-9 * (1 + np.abs(v).max()))
        if _greedy(M, J, v) != held:
            needs_readd += 1
    assert solved > 1000 and needs_readd > 0
