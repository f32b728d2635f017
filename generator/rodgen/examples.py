"""Parametric model families: the benchmark chain ``vl_chain(n)`` and chains of every link model.

``vl_chain(n)`` is the family used by the speed benchmarks (benchmarks/):

* a planar chain hanging from a fixed pivot at the origin, gravity 9.81 along -y;
* coordinates interleaved ``q = [th1, l1, ..., thn, ln]``; ``th_i`` the angle of
  link i relative to link i-1 (``th1`` from the +x axis), counter-clockwise;
  ``l_i`` the length from joint i to the link's end P_i; joint i+1 sits at P_i;
* a point body at P_i of mass ``m_i = 1.0 + 0.1 i`` (i = 1..n) with rotational
  inertia 0.01 about P_i; the links themselves massless;
* inputs ``u = [tau1, F1, ..., taun, Fn]`` (joint torque; axial force,
  positive lengthening); no springs or dampers.

``chain(n, link_model)`` builds an n-link chain of one of Borisov's link
models (SEEDS §1.2), for tests that run over every model and every n.

``chain_urdf(n)`` is the text of a URDF serial chain of n revolute links, the
robot of the URDF loading test and benchmark (benchmarks/bench_urdf_load.py).
"""
from __future__ import annotations

from .model.core import Model, PointMass, Rod

#: the link models ``chain`` knows (SEEDS §1.2)
LINK_MODELS = ("point_masses", "joint_masses", "rod_variable", "rod_two_variable", "telescopic", "rigid")


def vl_chain(n: int) -> Model:
    """The n-link variable-length chain of the benchmarks (see the module docstring).

    Parameters (defaults): ``g`` = 9.81, ``m<i>`` = 1.0 + 0.1 i, ``J<i>`` = 0.01.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"vl_chain(n) needs an integer n >= 1, got {n!r}")
    model = Model(name=f"vl_chain{n}", gravity=(0.0, "-g"),
                  doc=f"{n}-link planar chain, each link a revolute joint then a variable length, "
                      f"point bodies at the link ends")
    model.parameter("g", 9.81, "m/s^2", "gravitational acceleration")
    parent = None
    for i in range(1, n + 1):
        m = model.parameter(f"m{i}", round(1.0 + 0.1 * i, 12), "kg", f"mass of the body at P{i}")
        inertia = model.parameter(f"J{i}", 0.01, "kg m^2", f"rotational inertia of the body about P{i}")
        lk = model.link(f"link{i}", parent=parent, angle="relative", coordinate=f"th{i}",
                        initial=-1.2 if i == 1 else 0.3)
        lk.joint.torque = f"tau{i}"
        lk.variable(f"s{i}", 0.5, coordinate=f"l{i}", force=f"F{i}",
                    rods=[Rod(mass=m, length=0.0, inertia=inertia, fraction=1.0, name=f"P{i}")])
        parent = lk.name
    model.validate()  # a mistake here is a bug of this module: fail at once
    return model


def chain(n: int, link_model: str, *, angle: str = "relative") -> Model:
    """An n-link chain from a fixed pivot, every link of the given model.

    Parameters
    ----------
    n : number of links (>= 1).
    link_model : one of :data:`LINK_MODELS`: ``point_masses`` (a massless variable rod with point
        masses at fractions 0.4 and 1 of its length, one of them 0.05 to the left of the axis);
        ``joint_masses`` (a massless variable rod with masses at the joints, fractions 0 and 1, and one
        between them, fraction 0.5); ``rod_variable`` (a massless variable part l then a rigid weighty
        rod b, model 3); ``rod_two_variable`` (variable part, rigid weighty rod, variable part, model 4);
        ``telescopic`` (a telescopic segment with a tip mass); ``rigid`` (a rigid weighty rod with a tip
        mass).
    angle : ``"relative"`` or ``"absolute"`` angle coordinates.
    """
    if link_model not in LINK_MODELS:
        raise ValueError(f"unknown link model {link_model!r}; choose one of {', '.join(LINK_MODELS)}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"chain(n) needs an integer n >= 1, got {n!r}")
    model = Model(name=f"{link_model}_chain{n}" + ("_absolute" if angle == "absolute" else ""))
    parent = None
    for i in range(1, n + 1):
        m = model.parameter(f"m{i}", 1.0 + 0.25 * i, "kg")
        b = model.parameter(f"b{i}", 0.3 + 0.05 * i, "m")
        lk = model.link(f"link{i}", parent=parent, angle=angle, initial=0.2 * i - 1.0)
        if link_model == "point_masses":
            lk.variable(f"v{i}", 0.6, masses=[PointMass(m, fraction=0.4, lateral=0.05),
                                              PointMass(f"{m}/2", fraction=1.0)])
        elif link_model == "joint_masses":
            lk.variable(f"v{i}", 0.6, masses=[PointMass(0.3, fraction=0.0), PointMass(m, fraction=0.5),
                                              PointMass(f"{m}/3", fraction=1.0)])
        elif link_model == "rod_variable":
            lk.variable(f"v{i}", 0.2)
            lk.rigid(f"r{i}", b, rod=Rod(mass=m))
        elif link_model == "rod_two_variable":
            lk.variable(f"v{i}", 0.1)
            lk.rigid(f"r{i}", b, rod=Rod(mass=m))
            lk.variable(f"w{i}", 0.15, masses=[PointMass(0.2, fraction=1.0)])
        elif link_model == "telescopic":
            lk.telescopic(f"t{i}", length=0.7, outer_length=0.5, outer_mass=m, inner_length=0.45,
                          inner_mass=f"{m}/2")
            lk.segments[-1].masses.append(PointMass(0.3, fraction=1.0))
        else:
            lk.rigid(f"r{i}", b, rod=Rod(mass=m), masses=[PointMass(0.4, fraction=1.0)])
        parent = lk.name
    model.validate()  # a mistake here is a bug of this module: fail at once
    return model


def snake(n: int = 8, *, friction: str = "anisotropic") -> Model:
    """A snake robot of ``n`` rigid links crawling on a horizontal plane (SEEDS §1.9).

    The model plane is the ground plane (gravity is normal to it: zero in the plane). A floating
    base ``x, y`` at the tail, the tail link's absolute angle ``phi1`` (the heading), the relative
    joint angles ``th2 .. thn`` with torque inputs ``tau2 .. taun``. Each link is a uniform rod of
    length ``l`` = 0.14 m and mass ``m`` = 1 kg (inertia m l²/12) with its centre named ``c<i>``;
    a friction element ``drag<i>`` acts at every centre:

    ``friction="anisotropic"``: viscous, ``c_t`` = 0.5 N s/m along the link, ``c_n`` = 10 N s/m
    across it (wheels or scales: the snake slides along its body far more easily);
    ``"isotropic"``: viscous, ``c_t`` both ways; ``"coulomb"``: regularised Coulomb friction,
    ``mu_t`` = 0.1 along, ``mu_n`` = 0.5 across, normal load ``m g``, velocity scale ``v_s`` = 0.01 m/s.
    """
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"snake(n) needs an integer n >= 2, got {n!r}")
    if friction not in ("anisotropic", "isotropic", "coulomb"):
        raise ValueError(f"friction must be 'anisotropic', 'isotropic' or 'coulomb', got {friction!r}")
    model = Model(name=f"snake{n}" + ("" if friction == "anisotropic" else f"_{friction}"), gravity=(0.0, 0.0),
                  base="floating", doc=f"{n}-link snake robot on a horizontal plane, {friction} friction")
    model.parameter("m", 1.0, "kg", "mass of a link")
    model.parameter("l", 0.14, "m", "length of a link")
    if friction == "coulomb":
        model.parameter("g", 9.81, "m/s^2", "gravity, normal to the plane")
        model.parameter("mu_t", 0.1, "", "friction coefficient along a link")
        model.parameter("mu_n", 0.5, "", "friction coefficient across a link")
        model.parameter("v_s", 0.01, "m/s", "velocity scale of the regularised friction")
    else:
        model.parameter("c_t", 0.5, "N s/m", "viscous friction along a link")
        model.parameter("c_n", 10.0, "N s/m", "viscous friction across a link")
    parent = None
    for i in range(1, n + 1):
        lk = model.link(f"link{i}", parent=parent, angle="absolute" if parent is None else "relative",
                        coordinate="phi1" if parent is None else f"th{i}")
        if parent is not None:
            lk.joint.torque = f"tau{i}"
        lk.rigid(f"s{i}", "l", rod=Rod(mass="m", name=f"c{i}"))
        if friction == "anisotropic":
            model.viscous_friction(f"drag{i}", f"c{i}", along="c_t", across="c_n")
        elif friction == "isotropic":
            model.viscous_friction(f"drag{i}", f"c{i}", "c_t")
        else:
            model.coulomb_friction(f"drag{i}", f"c{i}", along="mu_t", across="mu_n", normal="m*g",
                                   velocity_scale="v_s")
        parent = lk.name
    model.validate()  # a mistake here is a bug of this module: fail at once
    return model


def chain_urdf(n: int) -> str:
    """The URDF text of a serial chain of ``n`` revolute links (axes x, y, z in turn, each joint 0.1 up and
    turned 0.1 rad about z from its parent), each link with its own mass ``1 + 0.01 i`` and inertia."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"chain_urdf(n) needs an integer n >= 1, got {n!r}")
    out = ['<robot name="chain">', '<link name="base"/>']
    for i in range(n):
        out.append(f'<link name="l{i}"><inertial><origin xyz="0.01 0 0.05" rpy="0 0 0"/>'
                   f'<mass value="{1.0 + 0.01 * i}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" '
                   f'izz="0.005"/></inertial></link>')
        axis = ("1 0 0", "0 1 0", "0 0 1")[i % 3]
        out.append(f'<joint name="j{i}" type="revolute"><parent link="{"base" if i == 0 else f"l{i - 1}"}"/>'
                   f'<child link="l{i}"/><origin xyz="0 0 0.1" rpy="0 0 0.1"/><axis xyz="{axis}"/>'
                   f'<limit lower="-2" upper="2" effort="10" velocity="1"/></joint>')
    return "\n".join(out + ["</robot>"])


__all__ = ["vl_chain", "chain", "snake", "chain_urdf", "LINK_MODELS"]
