"""Borisov's spatial exoskeleton (examples/borisov_spatial_exo.py): two-angle links with variable-length
parts on a free hip point. With psi = 0 it is exo5_walk's planar model, derived by the planar recursion, in
flight, single and double support; out of the plane its flight conserves energy and its standing
reactions carry its weight."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.errors import ModelError
from rodgen.runtime.contact import contact_inverse_dynamics


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("borisov_spatial_exo", EXAMPLES / "borisov_spatial_exo.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXO = _example()


@pytest.fixture(scope="module")
def robots(build_dir: Path) -> tuple[rodgen.CompiledModel, rodgen.CompiledModel]:
    spatial = rodgen.build(EXO.model(), build_dir=build_dir)
    planar = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=build_dir)
    return spatial, planar


def _planar_states(spatial: rodgen.CompiledModel, planar: rodgen.CompiledModel, seed: int):
    """Seeded random planar states of exo5_walk and the same states of the spatial model (z = psi = 0)."""
    idx = [spatial.coordinates.index(c) for c in planar.coordinates]
    rng = np.random.default_rng(seed)
    q0 = np.asarray(planar.initial_state()[:planar.nq])
    for _ in range(4):
        q, qd = q0 + 0.2 * rng.standard_normal(planar.nq), rng.standard_normal(planar.nq)
        qs, qds = np.zeros(spatial.nq), np.zeros(spatial.nq)
        qs[idx], qds[idx] = q, qd
        yield idx, q, qd, qs, qds, rng


def test_two_angle_coordinates_on_a_free_hip(robots) -> None:
    spatial, planar = robots
    assert spatial.coordinates[:3] == ["x", "y", "z"]
    assert spatial.nq == planar.nq + 6          # z and one psi for each of the five links
    assert {f"psi_{k}" for k in ("torso", "thigh_a", "shank_a", "thigh_b", "shank_b")} <= set(spatial.coordinates)


def test_in_the_plane_the_spatial_model_is_the_planar_one(robots) -> None:
    """M, the bias and the forward dynamics under inputs agree with the planar recursion's; the joint
    torques of the planar model (relative, Borisov's mu_i = M_i - M_i+1) enter the spatial one as
    generalized forces on the absolute angles phi (B u of the planar model)."""
    spatial, planar = robots
    for idx, q, qd, qs, qds, rng in _planar_states(spatial, planar, 1):
        Ms = spatial.mass_matrix(qs)
        np.testing.assert_allclose(Ms[np.ix_(idx, idx)], planar.mass_matrix(q), rtol=0, atol=1e-11)
        np.testing.assert_allclose(spatial.bias(qs, qds)[idx], planar.bias(q, qd), rtol=0, atol=1e-10)
        up = rng.standard_normal(planar.nu) * 20
        gen = planar.input_map(q) @ up           # generalized forces on the planar coordinates
        us = np.zeros(spatial.nu)
        for i, c in enumerate(planar.coordinates):
            name = f"tau_{c}" if c.startswith("phi_") else f"F_{c[2:]}" if c.startswith("l_") else None
            if name in spatial.inputs:
                us[spatial.inputs.index(name)] = gen[i]
            else:
                assert gen[i] == 0.0, c         # the base and the torso's angle carry no input
        a = spatial.forward_dynamics(qs, qds, us)
        np.testing.assert_allclose(a[idx], planar.forward_dynamics(q, qd, up), rtol=0, atol=1e-10)
        np.testing.assert_array_equal(np.delete(a, idx), 0.0)   # nothing leaves the plane


@pytest.mark.parametrize("active", [["foot_a"], ["foot_a", "foot_b"]], ids=["single", "double"])
def test_support_phases_agree_with_the_planar_model(robots, active: list[str]) -> None:
    """Single and double support: q̈ and the ground reactions. The ground y = 0 has the axes t1 = x,
    t2 = n × t1 = -z, n = y: a spatial contact's λ = [f_x, -f_z, f_y], the planar one's [f_x, f_y]."""
    spatial, planar = robots
    for idx, q, qd, qs, qds, rng in _planar_states(spatial, planar, 2):
        up = np.zeros(planar.nu)
        us = np.zeros(spatial.nu)
        for i, name in enumerate(planar.inputs):
            if name.startswith("F_"):
                up[i] = us[spatial.inputs.index(name)] = 30 * rng.standard_normal()
        a_s, lam_s = spatial.constrained_dynamics(qs, qds, us, active=active)
        a_p, lam_p = planar.constrained_dynamics(q, qd, up, active=active)
        np.testing.assert_allclose(a_s[idx], a_p, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.delete(a_s, idx), 0.0, atol=1e-10)
        for k in range(len(active)):
            np.testing.assert_allclose(lam_s[3 * k:3 * k + 3], [lam_p[2 * k], 0.0, lam_p[2 * k + 1]],
                                       rtol=0, atol=1e-8)


def test_flight_out_of_the_plane_conserves_energy(robots) -> None:
    spatial, _ = robots
    y0 = EXO.leaning_start(spatial)
    res = spatial.simulate(y0, 0.25, 1e-3)
    assert res.ok
    e = res.total_energy
    assert np.max(np.abs(e - e[0])) < 1e-9 * abs(e[0])
    # x and z are cyclic: their momenta (M q̇)_x, (M q̇)_z, the linear momentum along x and z, are constant
    # in flight (nothing pushes horizontally), while the hip itself does not move uniformly
    momentum = np.array([spatial.mass_matrix(q) @ qd for q, qd in zip(res.q, res.qd)])
    for c in ("x", "z"):
        i = spatial.coordinates.index(c)
        np.testing.assert_allclose(momentum[:, i], momentum[0, i], rtol=0, atol=1e-9 * np.abs(momentum).max())
        assert np.ptp(res.qd[:, i]) > 1e-4
    assert np.ptp(res.q[:, spatial.coordinates.index("psi_shank_b")]) > 0.2


def test_mirrored_out_of_the_plane(robots) -> None:
    """Mirroring in the sagittal plane (z -> -z, every psi -> -psi) mirrors the accelerations."""
    spatial, _ = robots
    rng = np.random.default_rng(3)
    flip = np.array([-1.0 if c == "z" or c.startswith("psi_") else 1.0 for c in spatial.coordinates])
    for _ in range(3):
        q = np.asarray(spatial.initial_state()[:spatial.nq]) + 0.3 * rng.standard_normal(spatial.nq)
        qd = rng.standard_normal(spatial.nq)
        a = spatial.forward_dynamics(q, qd)
        b = spatial.forward_dynamics(flip * q, flip * qd)
        assert np.max(np.abs(a[flip < 0])) > 1e-3   # the state really leaves the plane
        np.testing.assert_allclose(b, flip * a, rtol=1e-12, atol=1e-10)


def test_standing_leaning_carries_the_weight(robots) -> None:
    """Held still on both feet while leaning out of the plane: the normal reactions sum to the weight, the
    tangential ones cancel, and with `tangential_share="friction"` both feet use the same friction ratio
    along each tangent axis."""
    spatial, _ = robots
    y0 = EXO.leaning_start(spatial)
    q, zero = y0[:spatial.nq], np.zeros(spatial.nq)
    P = EXO.PARAMETERS
    weight = (P["m_torso"] + 2 * (P["m_thigh"] + P["m_shank"])) * P["g"]
    for share in (None, "friction", {"foot_a": 0.25}):
        sol = contact_inverse_dynamics(spatial, q, zero, zero, ["foot_a", "foot_b"], tangential_share=share)
        fa, fb = sol.forces["foot_a"], sol.forces["foot_b"]
        assert fa[2] + fb[2] == pytest.approx(weight, rel=1e-10)
        np.testing.assert_allclose(fa[:2] + fb[:2], 0.0, atol=1e-8)
        if isinstance(share, dict):
            np.testing.assert_allclose(fa[:2], 0.25 * (fa[:2] + fb[:2]), atol=1e-8)


def test_absolute_angles_need_a_ground_oriented_parent() -> None:
    m = rodgen.SpatialModel("bad")
    m.link("hip", joint="revolute", axis=(0, 0, 1))
    lk = m.two_angle_link("leg", "hip")
    lk.rigid("leg_b", 0.5, rod=rodgen.Rod(1.0))
    with pytest.raises(ModelError, match=r"link 'leg'\.joint\.angles.*only translates"):
        m.validate()
    m = rodgen.SpatialModel("bad_rpy")
    m.link("bx", joint="prismatic", axis=(1, 0, 0), rpy=(0, 0.3, 0), actuated=False)
    lk = m.two_angle_link("leg", "bx")
    lk.rigid("leg_b", 0.5, rod=rodgen.Rod(1.0))
    with pytest.raises(ModelError, match=r"link 'leg'\.joint\.angles"):
        m.validate()
