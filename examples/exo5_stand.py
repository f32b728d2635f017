"""The exoskeleton stands on compliant heel and toe contacts (gait2d-style ground reactions).

The five-link exoskeleton of ``exo5_walk.yaml`` gets a foot at each shank end
(a rigid link hinged at the ankle, 1 kg, with ``heel`` and ``toe`` markers 6 cm
below the ankle) and, instead of the rigid point contacts, four compliant
ground contacts (force elements, Hunt–Crossley ``k d^1.5 (1 + c d')`` with
regularised Coulomb friction). It is dropped from 1 cm above the ground and
holds its posture with the compiled PD law on every input (joint torques and
the longitudinal forces of the variable-length thighs and shanks): it lands,
settles, and stands. Since the contacts are force laws, no events or active
sets are involved: the ground reactions are smooth functions of the state,
reported by the compiled model at every stored time.

    python examples/exo5_stand.py [OUT_DIR] [--t-end 3] [--stiffness 2e5]

Prints the ground reactions at rest against the weight and writes
OUT_DIR/exo5_stand.png: the vertical and horizontal force of each contact
over time, their sum against the weight, and the hip height.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.plot import new_figure
from rodgen.runtime.result import SimulationResult

HERE = os.path.dirname(os.path.abspath(__file__))
CONTACTS = ("heel_a", "toe_a", "heel_b", "toe_b")
FOOT_DROP = 0.06            # the sole below the ankle
DROP = 0.01                 # initial height of the soles above the ground


def standing_model(stiffness: float = 2e5) -> rodgen.Model:
    """exo5_walk with feet, heel/toe compliant contacts and a standing posture (feet 0.1 rad apart)."""
    model = rodgen.load(os.path.join(HERE, "exo5_walk.yaml"))
    model.name = "exo5_stand"
    model.contacts = []
    model.parameter("m_foot", 1.0, "kg")
    model.parameter("k_g", stiffness, "N/m^1.5", "ground stiffness (Hunt-Crossley)")
    model.parameter("c_g", 2.0, "s/m", "ground damping (Hunt-Crossley)")
    model.parameter("mu_g", 0.8, "", "friction coefficient of the soles")
    model.parameter("v_g", 0.02, "m/s", "velocity scale of the regularised friction")
    pv = model.parameter_values()
    leg = pv["l_thigh0"] + pv["b_thigh"] + pv["l_shank0"] + pv["b_shank"]
    spread = 0.1
    model.link_named("torso").initial = "pi/2"
    for side, sign in (("a", 1), ("b", -1)):
        model.link_named(f"thigh_{side}").initial = f"-pi/2 + {sign * spread}"
        model.link_named(f"shank_{side}").initial = f"-pi/2 + {sign * spread}"
        foot = model.link(f"foot_{side}", parent=f"shank_{side}", initial=0.0)
        foot.rigid(f"foot_{side}_s", 0.15, rod=rodgen.Rod(mass="m_foot", offset=0.02, fraction=0.0,
                                                           inertia=0.005))
        foot.marker(f"heel_{side}", f"foot_{side}_s", 0.0, offset=-0.05, lateral=-FOOT_DROP)
        foot.marker(f"toe_{side}", f"foot_{side}_s", 1.0, lateral=-FOOT_DROP)
        for end in ("heel", "toe"):
            model.ground_contact(f"{end}_{side}", f"{end}_{side}", stiffness="k_g", exponent=1.5, damping="c_g",
                                 friction="mu_g", velocity_scale="v_g")
    model.base_initial = (0.0, leg * math.cos(spread) + FOOT_DROP + DROP)
    return model


def run(out_dir: str, *, t_end: float = 3.0, stiffness: float = 2e5) -> tuple[SimulationResult, dict[str, Any]]:
    sys_ = rodgen.build(standing_model(stiffness))
    y0 = sys_.initial_state()
    force = np.array([nm.startswith("F_") for nm in sys_.inputs])     # the longitudinal forces
    law = rodgen.PD(rodgen.Reference.hold(y0[:sys_.nq]), kp=np.where(force, 1e5, 5e3),
                    kd=np.where(force, 2e3, 200.0))
    res = sys_.simulate(y0, t_end, method="dopri5", controller=law, dt=1e-3, rtol=1e-7, atol=1e-9,
                        store_every=1)
    if not res.ok:
        raise RuntimeError(res.message)
    assert res.element_forces is not None
    p = sys_.parameters
    weight = (p["m_torso"] + 2 * (p["m_thigh"] + p["m_shank"] + p["m_foot"])) * p["g"]
    grf = {nm: res.element_forces[nm] for nm in CONTACTS}
    total = sum(grf.values())
    late = res.t > res.t[-1] - 0.5
    info = {"weight": weight, "vertical": float(np.mean(total[late, 1])),
            "horizontal": float(np.mean(total[late, 0])),
            "share": {nm: float(np.mean(grf[nm][late, 1]) / weight) for nm in CONTACTS},
            "peak": float(total[:, 1].max()), "steps": int(res.extra["steps"])}

    os.makedirs(out_dir, exist_ok=True)
    fig = new_figure(10.0, 8.0)
    ax = fig.subplots(3, 1, sharex=True)
    for nm in CONTACTS:
        ax[0].plot(res.t, grf[nm][:, 1], lw=1.0, label=nm)
        ax[1].plot(res.t, grf[nm][:, 0], lw=1.0, label=nm)
    ax[0].plot(res.t, total[:, 1], "k", lw=1.2, label="sum")
    ax[0].axhline(weight, color="k", ls="--", lw=0.8, label="weight")
    ax[0].set_ylabel("vertical GRF [N]")
    ax[1].set_ylabel("horizontal GRF [N]")
    ax[2].plot(res.t, res.q[:, 1], color="tab:green")
    ax[2].set_ylabel("hip height [m]")
    ax[2].set_xlabel("t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
    ax[0].legend(fontsize="small", ncol=3)
    ax[1].legend(fontsize="small", ncol=4)
    fig.suptitle(f"exo5 on compliant heel/toe contacts (k = {stiffness:g}): vertical reactions "
                 f"{info['vertical']:.1f} N, weight {weight:.1f} N")
    fig.savefig(os.path.join(out_dir, "exo5_stand.png"), dpi=90)
    return res, info


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=3.0)
    ap.add_argument("--stiffness", type=float, default=2e5, help="Hunt-Crossley stiffness k [N/m^1.5]")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, t_end=a.t_end, stiffness=a.stiffness)
    shares = ", ".join(f"{nm} {100 * s:.1f}%" for nm, s in info["share"].items())
    print(f"standing after {res.t[-1]:g} s ({info['steps']} adaptive steps): vertical reaction "
          f"{info['vertical']:.2f} N against a weight of {info['weight']:.2f} N (landing peak {info['peak']:.0f} N); "
          f"horizontal {info['horizontal']:+.3f} N; shares {shares}")
    print(f"wrote {os.path.join(a.out_dir, 'exo5_stand.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
