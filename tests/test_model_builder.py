"""The Python builder API and the YAML format describe the same models."""
from __future__ import annotations

import rodgen


def test_builder_equals_yaml_pendulum() -> None:
    m = rodgen.Model("pendulum_vl", gravity=(0, "-g"))
    m.parameter("g", 9.81)
    m.parameter("m", 1.0)
    m.parameter("l0", 1.0)
    rod = m.link("rod", angle="absolute", initial=-1.2)
    rod.variable("rod", "l0", masses=[rodgen.PointMass("m", fraction=1, name="bob")])
    a = rodgen.derive(m)
    b = rodgen.derive(rodgen.load("examples/pendulum_vl.yaml"))
    assert a.q == b.q and a.u == b.u and a.params == b.params
    assert a.M == b.M and a.h == b.h and a.G == b.G and a.B == b.B
    assert [c.name for c in m.coordinates()] == ["phi_rod", "l_rod"]


def test_builder_equals_yaml_telescopic_arm() -> None:
    m = rodgen.Model("telescopic_arm", gravity=(0, -9.81))
    for name, value in [("m1", 2.0), ("L1", 0.6), ("m_out", 1.0), ("L_out", 0.5), ("m_in", 0.6),
                        ("L_in", 0.45), ("m_tip", 0.3), ("k_ext", 200.0), ("c_ext", 1.5), ("c_joint", 0.05)]:
        m.parameter(name, value)
    upper = m.link("upper", angle="relative", initial=-0.5, joint=rodgen.Joint(damping="c_joint"))
    upper.rigid("upper_rod", "L1", rod=rodgen.Rod("m1"))
    fore = m.link("fore", parent="upper", angle="relative", initial=0.4)
    seg = fore.telescopic("fore_tele", length=0.7, outer_length="L_out", outer_mass="m_out",
                          inner_length="L_in", inner_mass="m_in", spring=rodgen.Spring("k_ext", 0.7),
                          damping="c_ext")
    seg.masses.append(rodgen.PointMass("m_tip", fraction=1, name="payload"))
    a = rodgen.derive(m)
    b = rodgen.derive(rodgen.load("examples/telescopic_arm.yaml"))
    for x, y in ((a.M, b.M), (a.h, b.h), (a.G, b.G), (a.K, b.K), (a.D, b.D), (a.B, b.B)):
        assert (x - y).applyfunc(lambda e: e.expand()) == x * 0


def test_telescopic_centre_of_mass_moves_with_extension() -> None:
    """Definition: outer sleeve centred at L_out/2, inner tube centred at l - L_in/2."""
    m = rodgen.Model("tele", gravity=(0, 0))
    lk = m.link("a")
    lk.telescopic("t", length=1.0, outer_length=0.6, outer_mass=2.0, inner_length=0.5, inner_mass=1.0)
    eqs = rodgen.derive(m)
    phi, l = eqs.q
    # first moment along the axis: 2*0.3 + 1*(l - 0.25); the length row's mass is the sliding mass 1
    assert eqs.M[1, 1] == 1
    inertia_about_hinge = 2.0 * 0.6**2 / 3 + 1.0 * 0.5**2 / 12 + 1.0 * (l - 0.25) ** 2
    assert abs((eqs.M[0, 0] - inertia_about_hinge).subs(l, 0.8)) < 1e-14
