"""Borisov's spatial exoskeleton: two-angle links, variable-length legs, flight and support in one model.

The five-link exoskeleton of exo5_walk.yaml in space (Borisov's thesis, 2018: links given by two absolute
angles, phi in the sagittal plane x-y from the +x axis and psi out of it towards +z), the thighs and shanks
of the thesis' model 3 (a massless variable-length part, then a rigid weighty rod), and a free base point
(the hip: x, y, z, three prismatic joints), so that one model holds every phase of gait: flight (no contact
held), single support (one foot held), double support (both). Gravity is -y, the ground the plane y = 0:
with psi = 0 the model is exo5_walk's planar one.

    python examples/borisov_spatial_exo.py [OUT_DIR]

builds the model, lets it fall for 0.25 s from a pose leaning out of the sagittal plane (OUT_DIR/
borisov_spatial_exo.png: the pose; borisov_spatial_exo_flight.png: the coordinates and the energy) and
prints the energy drift, then the ground reactions that hold the leaning pose still in single and double
support. The inputs are Borisov's: generalized forces on the absolute angles (tau_phi_/tau_psi_<link>; a
joint torque M_i enters as M_i - M_{i+1}) and the length forces F_<part>.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import numpy as np

import rodgen
from rodgen.model.spatial import SpatialGround
from rodgen.runtime.contact import contact_inverse_dynamics
from rodgen.runtime.plot3d import plot_configuration

PARAMETERS = {
    "g": 9.81, "m_shank": 3.5, "m_thigh": 7.0, "m_torso": 30.0, "b_shank": 0.30, "b_thigh": 0.30,
    "l_shank0": 0.13, "l_thigh0": 0.14, "h_torso": 0.55, "c_torso": 0.25, "I_torso": 1.2, "mu": 1.0,
}


def model() -> rodgen.SpatialModel:
    """The spatial exoskeleton: coordinates x, y, z (the hip), phi_/psi_ of torso, thigh_a, shank_a,
    thigh_b, shank_b, and the lengths l_<leg part>_l of the four variable parts."""
    m = rodgen.SpatialModel("borisov_exo3d", gravity=(0.0, "-g", 0.0),
                            doc="Borisov's spatial five-link exoskeleton: two-angle links, variable-length "
                                "thighs and shanks, a free hip point, point feet on the ground y = 0")
    for name, value in PARAMETERS.items():
        m.parameter(name, value)
    m.ground = SpatialGround(normal=(0.0, 1.0, 0.0), height=0.0)
    leg = "l_thigh0 + b_thigh + l_shank0 + b_shank"
    m.link("base_x", joint="prismatic", axis=(1, 0, 0), coordinate="x", actuated=False,
           initial=f"-({leg})*sin(0.2)")
    m.link("base_y", "base_x", joint="prismatic", axis=(0, 1, 0), coordinate="y", actuated=False,
           initial=f"({leg})*cos(0.2)")
    m.link("base_z", "base_y", joint="prismatic", axis=(0, 0, 1), coordinate="z", actuated=False)
    torso = m.two_angle_link("torso", "base_z", initial=("pi/2 - 0.25", 0.0))
    torso.rigid("torso_b", "h_torso", rod=rodgen.Rod("m_torso", inertia="I_torso", fraction=0, offset="c_torso"))
    for side, angle in (("a", "-pi/2 + 0.2"), ("b", "-pi/2 - 0.2")):
        thigh = m.two_angle_link(f"thigh_{side}", "base_z", initial=(angle, 0.0))
        thigh.variable(f"thigh_{side}_l", "l_thigh0")
        thigh.rigid(f"thigh_{side}_b", "b_thigh", rod=rodgen.Rod("m_thigh"))
        shank = m.two_angle_link(f"shank_{side}", f"thigh_{side}", initial=(angle, 0.0))
        shank.variable(f"shank_{side}_l", "l_shank0")
        shank.rigid(f"shank_{side}_b", "b_shank", rod=rodgen.Rod("m_shank"))
        shank.marker(f"foot_{side}", f"shank_{side}_b", 1.0)
        m.contact(f"foot_{side}", friction="mu")
    return m


def leaning_start(robot: rodgen.CompiledModel) -> np.ndarray:
    """The initial pose of exo5_walk (both feet on the ground) with the torso and the legs leaning out of the
    sagittal plane and a sideways velocity: a state that only the spatial model can take."""
    y0 = np.array(robot.initial_state(), dtype=float)
    c, nq = robot.coordinates, robot.nq
    for name, value in (("psi_torso", -0.10), ("psi_thigh_b", 0.15), ("psi_shank_a", 0.05)):
        y0[c.index(name)] = value
    for name, value in (("z", 0.3), ("psi_shank_b", 1.0), ("phi_thigh_a", -1.0)):
        y0[nq + c.index(name)] = value
    return y0


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    out = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(out, exist_ok=True)
    robot = rodgen.build(model())
    nq = robot.nq
    print(f"{robot.name}: {nq} coordinates, {robot.nu} inputs")
    # flight: no contact held, no input; energy is conserved
    y0 = leaning_start(robot)
    res = robot.simulate(y0, 0.25, 1e-3)
    energy = res.total_energy
    print(f"flight 0.25 s: energy {energy[0]:.6f} J, largest drift {np.max(np.abs(energy - energy[0])):.2e} J, "
          f"hip moved sideways {res.q[-1, robot.coordinates.index('z')] - y0[2]:+.4f} m")
    plot_configuration(robot, y0[:nq], os.path.join(out, "borisov_spatial_exo.png"),
                       title="spatial exoskeleton, leaning sideways")
    rodgen.plot(res, os.path.join(out, "borisov_spatial_exo_flight.png"), model=robot,
                title="flight from the leaning pose")
    # single and double support, standing still at the start pose: the inputs and ground reactions
    # (t1, t2, n: world x, -z, y for this ground) that hold it, from the contact inverse dynamics
    weight = (PARAMETERS["m_torso"] + 2 * (PARAMETERS["m_thigh"] + PARAMETERS["m_shank"])) * PARAMETERS["g"]
    q0, zero = y0[:nq], np.zeros(nq)
    for active in (["foot_a"], ["foot_a", "foot_b"]):
        share = "friction" if len(active) > 1 else None
        sol = contact_inverse_dynamics(robot, q0, zero, zero, active, tangential_share=share)
        forces = ", ".join(f"{n} [{f[0]:+.1f} {f[1]:+.1f} {f[2]:+.1f}] N" for n, f in sol.forces.items())
        print(f"{' + '.join(active)} held, standing leaning: {forces} (weight {weight:.1f} N)")


if __name__ == "__main__":
    main()
