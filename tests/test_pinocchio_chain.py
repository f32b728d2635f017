"""Chains of revolute + prismatic joints against Pinocchio's articulated-body algorithm (an independent engine)."""
from __future__ import annotations

import numpy as np
import pytest

import rodgen
from _num import numeric, rel_err
from rodgen.model.loader import load_dict

pin = pytest.importorskip("pinocchio")

#: two different O(n) / symbolic algorithms in double precision
RTOL_PINOCCHIO = 1e-9


def _chain(n: int) -> tuple[dict, "pin.Model"]:
    """Link i: revolute joint (relative angle), a rod fixed near the joint (off the axis), then a variable
    segment whose end carries a body with mass and rotational inertia; link i+1 hangs at that end."""
    params: dict[str, float] = {}
    links = []
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, -9.81, 0.0])
    parent_joint = 0
    placement = pin.SE3.Identity()
    for i in range(1, n + 1):
        m_rod, d, e, I_rod = 0.5 + 0.1 * i, 0.15, 0.03 * (-1) ** i, 0.004 * i
        m_end, I_end = 1.0 + 0.2 * i, 0.01 + 0.002 * i
        params.update({f"mr{i}": m_rod, f"Ir{i}": I_rod, f"me{i}": m_end, f"Ie{i}": I_end})
        links.append({
            "name": f"L{i}", "parent": None if i == 1 else f"L{i-1}", "angle": "relative",
            "coordinate": f"th{i}",
            "segments": [{
                "name": f"s{i}", "type": "variable", "coordinate": f"l{i}", "length": 0.5,
                "rods": [{"mass": f"mr{i}", "inertia": f"Ir{i}", "fraction": 0, "offset": d, "lateral": e},
                         {"mass": f"me{i}", "inertia": f"Ie{i}", "fraction": 1, "offset": 0}],
            }]})
        jr = pm.addJoint(parent_joint, pin.JointModelRZ(), placement, f"rev{i}")
        pm.appendBodyToJoint(jr, pin.Inertia(m_rod, np.array([d, e, 0.0]), np.diag([1e-3, 1e-3, I_rod])),
                             pin.SE3.Identity())
        jp = pm.addJoint(jr, pin.JointModelPX(), pin.SE3.Identity(), f"pri{i}")
        pm.appendBodyToJoint(jp, pin.Inertia(m_end, np.zeros(3), np.diag([1e-3, 1e-3, I_end])), pin.SE3.Identity())
        parent_joint, placement = jp, pin.SE3.Identity()
    return {"name": f"rp_chain{n}", "parameters": params, "links": links}, pm


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_forward_dynamics_matches_pinocchio(n: int) -> None:
    data, pm = _chain(n)
    eqs = rodgen.derive(load_dict(data), method="matrix")
    assert [str(s) for s in eqs.q] == [x for i in range(1, n + 1) for x in (f"th{i}", f"l{i}")]
    num = numeric(eqs)
    pd = pm.createData()
    seed = 900 + n
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, 2 * n)
        q[1::2] = rng.uniform(0.2, 1.2, n)
        qd = rng.normal(size=2 * n)
        u = rng.normal(size=2 * n)
        expected = pin.aba(pm, pd, q, qd, u)
        got = num.qdd(q, qd, u)
        err = rel_err(got, expected)
        assert err < RTOL_PINOCCHIO, f"qdd differs from pinocchio.aba by {err:.2e} (seed {seed})"
        # inverse dynamics too
        tau = pin.rnea(pm, pd, q, qd, got)
        assert rel_err(tau, u) < RTOL_PINOCCHIO
