"""The five-link exoskeleton walks: virtual constraints, variable-length legs, heel-strike impacts.

    python examples/exo5_walk.py [OUT_DIR] [--steps N] [--controller c|python] [--stability]

The model (examples/exo5_walk.yaml) has a free hip, so single support,
double support and the impacts between them are all phases of one model;
rodgen's hybrid simulation switches them at the located touchdown and
lift-off events. In single support the walker has one degree of freedom more
than it has inputs (it rotates about the point foot), so the controller is of
the virtual-constraint kind (Westervelt, Grizzle et al.): eight outputs, one
per input, are driven to functions of a phase variable, the stance leg's angle
from the vertical, instead of functions of time:

* the torso keeps a constant forward lean (its centre of mass ahead of the
  hip is what keeps the gait going on flat ground);
* the swing leg mirrors the stance leg (its angle from the vertical is minus
  the stance leg's); both knees stay straight;
* the swing leg **shortens** in mid-swing through its two variable-length
  parts (the feature of this mechanism: the foot clears the ground without a
  knee bend) and is back to full length, then a little longer, at the end of
  the step, so that it strikes the ground;
* the stance leg keeps its nominal length.

The inputs follow from the constrained dynamics of the current phase (M qdd +
bias = B u + Jᵀ λ, J qdd = −J̇ q̇): with qdd affine in u, the eight output
accelerations are set to a PD law on the output errors (input-output
linearisation). The script prints each step, plots the ground reaction forces
and the phases, and writes a stick-figure animation.

The controller runs in C by default: exo5_walk_controller.c is the same law,
compiled by ``rodgen.CController`` and called by the C simulation at every
stage with no Python in the loop (``VirtualConstraints.c_params`` hands it the
gains and output matrices). The class VirtualConstraints below is the readable
reference (``--controller python``, called back from C at every stage); the
two give the same heel strikes to 1e-9 s (tests/test_ccontroller.py).

``--stability`` finds the period-one gait under the controller (its stance leg held over each step) as the
fixed point of the step-to-step map, by Newton with the map's Jacobian from ``rodgen.gait.stride``, and
prints its Floquet multipliers: the gait is stable when they all lie inside the unit circle.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import rodgen
from rodgen import gait

HERE = Path(__file__).resolve().parent


class VirtualConstraints:
    """The walking controller: u(t, q, qd) for the hybrid simulation (see the module docstring)."""

    def __init__(self, model: Any, *, alpha0: float = 0.2, lean: float = 0.25,
                 shorten: float = 0.05, kp: float = 400.0, kd: float = 40.0, hold_stance: bool = False) -> None:
        self.sys = model
        self.alpha0, self.lean, self.shorten, self.kp, self.kd = alpha0, lean, shorten, kp, kd
        #: keep the stance leg (no switch before the touchdown): one step is then one smooth law of (t, q, qd)
        self.hold_stance = hold_stance
        names = list(model.coordinates)
        self.ix = {n: i for i, n in enumerate(names)}
        self.nq = len(names)
        p = model.parameters
        self.l_thigh0, self.l_shank0 = p["l_thigh0"], p["l_shank0"]
        self.rows = {b.name: (b.row, b.nrows) for b in model.constraints}
        self.outputs = {leg: self._output_matrix(leg) for leg in ("a", "b")}
        self.current = "a"
        self.zero_u = np.zeros(len(model.inputs))
        self.unit_u = list(np.eye(len(model.inputs)))

    def _output_matrix(self, stance: str) -> tuple[np.ndarray, np.ndarray]:
        """C (8 x nq) of the outputs y = C q and c (nq) of the phase variable theta = c q, stance leg ``stance``."""
        s, w = stance, ("b" if stance == "a" else "a")
        ix, C = self.ix, np.zeros((8, self.nq))
        C[0, ix["phi_torso"]] = 1.0
        for leg in (s, w):                    # mirror: the mean angles of the two legs add up to -pi
            C[1, ix[f"phi_thigh_{leg}"]] = C[1, ix[f"phi_shank_{leg}"]] = 0.5
        C[2, ix[f"phi_shank_{s}"]], C[2, ix[f"phi_thigh_{s}"]] = 1.0, -1.0      # straight knees
        C[3, ix[f"phi_shank_{w}"]], C[3, ix[f"phi_thigh_{w}"]] = 1.0, -1.0
        for k, seg in enumerate((f"thigh_{s}", f"shank_{s}", f"thigh_{w}", f"shank_{w}")):
            C[4 + k, ix[f"l_{seg}_l"]] = 1.0
        c = np.zeros(self.nq)
        c[ix[f"phi_thigh_{s}"]] = c[ix[f"phi_shank_{s}"]] = 0.5
        return C, c

    def desired(self, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The outputs' targets at phase s (0 at the start of a step, 1 at the end) and their s-derivatives."""
        sn, cs = np.sin(np.pi * s), np.cos(np.pi * s)
        r = self.shorten
        h = np.array([np.pi / 2 - self.lean, -np.pi, 0.0, 0.0, self.l_thigh0, self.l_shank0,
                      self.l_thigh0 - r * sn, self.l_shank0 - r * sn])
        dh = np.zeros(8)
        ddh = np.zeros(8)
        dh[6:] = -r * np.pi * cs
        ddh[6:] = r * np.pi ** 2 * sn
        return h, dh, ddh

    def stance(self, q: np.ndarray) -> str:
        """The stance leg. It changes when the swing foot is down (gap below 1 mm), ahead of the stance
        foot, late in the step (the phase past 0.7): the heel strike the hybrid simulation has just applied
        (never with ``hold_stance``)."""
        c = self.sys.constraint_position(q)
        s, w = self.current, ("b" if self.current == "a" else "a")
        rs, rw = self.rows[f"foot_{s}"][0], self.rows[f"foot_{w}"][0]
        if not self.hold_stance and c[rw + 1] < 1e-3 and c[rw] > c[rs] and self.phase(q, s) > 0.7:
            self.current = w
        return self.current

    def phase(self, q: np.ndarray, stance: str) -> float:
        theta = self.outputs[stance][1] @ q
        return (self.alpha0 - (theta + np.pi / 2)) / (2 * self.alpha0)

    def __call__(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        sys_ = self.sys
        stance = self.stance(q)
        C, c = self.outputs[stance]
        # the constrained dynamics of single support, affine in the inputs: qdd = a0 + G u (exact KKT, no
        # drift correction: the compiled model's constrained_dynamics with its gains at zero)
        foot = [f"foot_{stance}"]
        a0 = sys_.constrained_dynamics(q, qd, self.zero_u, active=foot)[0]
        G = np.column_stack([sys_.constrained_dynamics(q, qd, e, active=foot)[0] - a0 for e in self.unit_u])
        ds = -1.0 / (2 * self.alpha0)
        s, thd = self.phase(q, stance), c @ qd
        h, dh, ddh = self.desired(s)
        y, yd = C @ q - h, C @ qd - dh * ds * thd
        Ch = C - np.outer(dh * ds, c)                 # d(ydot)/d(qdot), with theta's share
        v = -self.kp * y - self.kd * yd + ddh * ds ** 2 * thd ** 2 - Ch @ a0
        return np.linalg.solve(Ch @ G, v)

    def c_params(self) -> np.ndarray:
        """The parameters of the same law in C (exo5_walk_controller.c): the gains and targets, the blocks
        of foot_a and foot_b, the output matrices (C, c) of stance leg a, then b, and for the input map B
        (constant for this model: forces and torques on its coordinates) the rows N of its left null space
        (N B = 0) and a left inverse B+ (B+ B = I), exact for B's integer entries."""
        import sympy as sp
        blocks = [b.name for b in self.sys.constraints]
        head = [self.alpha0, self.lean, self.shorten, self.kp, self.kd, self.l_thigh0, self.l_shank0,
                blocks.index("foot_a"), blocks.index("foot_b")]
        mats = [np.concatenate([C.reshape(-1), c]) for C, c in (self.outputs["a"], self.outputs["b"])]
        q0 = self.sys.initial_state()[:self.nq]
        B = np.asarray(self.sys.input_map(q0), float)
        if not np.array_equal(B, self.sys.input_map(q0 + 0.3)) or not np.array_equal(B, np.round(B)):
            raise ValueError("the C controller needs a constant input map with integer entries")
        Bs = sp.Matrix(B.astype(int).tolist())
        N = sp.Matrix.vstack(*[v.T for v in Bs.T.nullspace()])
        Bplus = (Bs.T * Bs).inv() * Bs.T
        return np.concatenate([head, *mats, np.array(N.tolist(), float).reshape(-1),
                               np.array(Bplus.tolist(), float).reshape(-1)])

    def c_controller(self, build_dir: str | None = None) -> Any:
        """This law as a rodgen.CController (exo5_walk_controller.c), starting on stance leg a."""
        return rodgen.CController(HERE / "exo5_walk_controller.c", "exo5_walk_controller", params=self.c_params(),
                                  state=[0.0 if self.current == "a" else 1.0] + [1.0] * self.hold_stance,
                                  build_dir=build_dir)

    def initial_state(self, theta_dot: float = -1.5) -> np.ndarray:
        """The model's initial posture (a step's start, foot_a ahead) moving with the phase rate theta_dot,
        every output on its target and the stance foot at rest."""
        q = self.sys.initial_state()[:self.nq]
        C, c = self.outputs["a"]
        J = self.sys.constraint_jacobian(q)[self.rows["foot_a"][0]:self.rows["foot_a"][0] + 2]
        _, dh, _ = self.desired(0.0)
        A = np.vstack([J, C - np.outer(dh * (-1.0 / (2 * self.alpha0)), c), c])
        qd = np.linalg.solve(A, np.concatenate([np.zeros(10), [theta_dot]]))
        return np.concatenate([q, qd])


# --- the gait's stability: the step-to-step map and its Floquet multipliers (--stability) ---------------
#
# The section is the state just after a heel strike, with the legs relabelled so that the new stance leg is
# leg a: z = (r, rd), r the nine coordinates after the hip's (x, y). The hip's position and velocity follow
# from the stance foot held at the origin (section_state). One step of the walking law with its stance leg
# held (VirtualConstraints(hold_stance=True): the law does not switch in the last millisecond before the
# touchdown, so a step is one smooth law of the state) is rodgen.gait.stride; its Jacobian has the
# constrained dynamics' derivatives, the controller's by central differences, the saltation term of the
# touchdown and the impact's derivative. The gait is the fixed point of z -> P(z).

ARM_GAP = 0.01     # the trailing foot may touch down again once it has risen 1 cm
STEP_T_MAX = 0.45  # s: a step takes about 0.28 s


def relabelling(robot: Any) -> np.ndarray:
    """(18, 22) E: z = (r, rd) of a state after foot_b's heel strike, legs a and b swapped."""
    names = list(robot.coordinates)
    n = len(names)
    swap = [names.index(nm.replace("_a", "_#").replace("_b", "_a").replace("_#", "_b")) for nm in names[2:]]
    E = np.zeros((2 * (n - 2), 2 * n))
    for i, j in enumerate(swap):
        E[i, j] = E[n - 2 + i, n + j] = 1.0
    return E


def section_state(robot: Any, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The state y(z) with foot_a at the origin and at rest, and dy/dz (22 x 18). The hip is (x, y) = -g(r)
    with g the foot's position relative to the hip, and (xd, yd) = -J_r(r) rd; the derivative of J_r rd by
    r is the foot's velocity product J̇ v, a quadratic form in v, taken apart exactly by polarisation:
    ∂(J w)/∂q e = (J̇(w + e) - J̇(w - e)) / 4."""
    n = robot.nq
    k = n - 2
    row = next(b.row for b in robot.constraints if b.name == "foot_a")
    r, rd = np.asarray(z[:k], float), np.asarray(z[k:], float)
    q = np.concatenate([[0.0, 0.0], r])
    q[:2] = -robot.constraint_position(q)[row:row + 2]
    J = robot.constraint_jacobian(q)[row:row + 2]
    w = np.concatenate([[0.0, 0.0], rd])
    qd = w.copy()
    qd[:2] = -J[:, 2:] @ rd
    S = np.zeros((2 * n, 2 * k))
    S[2:n, :k] = S[n + 2:, k:] = np.eye(k)
    S[:2, :k] = -J[:, 2:]
    S[n:n + 2, k:] = -J[:, 2:]
    for j in range(k):
        e = np.zeros(n)
        e[2 + j] = 1.0
        dJw = (robot.constraint_bias(q, w + e) - robot.constraint_bias(q, w - e))[row:row + 2] / 4.0
        S[n:n + 2, j] = -dJw
    return np.concatenate([q, qd]), S


def poincare(robot: Any, law: Any, z: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """P(z) and its Jacobian: one step from the section state with foot_a held until foot_b strikes, under
    ``law`` (a controller whose stance leg stays a)."""
    y0, S = section_state(robot, z)
    s = gait.stride(robot, y0, ["foot_a"], "foot_b", dt, u=law, arm_gap=ARM_GAP, on_slip="continue",
                    t_max=STEP_T_MAX)
    E = relabelling(robot)
    return E @ s.y_plus, E @ s.jacobian @ S


def walk_to_section(robot: Any, law: VirtualConstraints, steps: int = 8, dt: float = 1e-3,
                    build_dir: str | None = None) -> np.ndarray:
    """z after the last of ``steps`` heel strikes of the walking law (relabelled when foot_b struck): a first
    guess of the gait's fixed point."""
    res = robot.simulate(law.initial_state(), 0.4 * steps, dt, u=law.c_controller(build_dir), contacts=["foot_a"],
                         arm_gap=ARM_GAP, on_slip="continue", max_events=4 * steps + 8)
    last = [e for e in res.events if e["kind"] == "touchdown"][-1]
    i = int(np.flatnonzero(res.t == last["t"])[-1])
    y = np.concatenate([res.q[i], res.qd[i]])
    if last["block"] == "foot_b":
        return relabelling(robot) @ y
    return np.concatenate([y[2:robot.nq], y[robot.nq + 2:]])


def stability(dt: float = 1e-3, build_dir: str | None = None) -> tuple[Any, Any, Any]:
    """(compiled model, the held-stance C controller, the LimitCycle of the gait: fixed point, multipliers)."""
    robot = rodgen.build(rodgen.load(HERE / "exo5_walk.yaml"), build_dir=build_dir)
    law = VirtualConstraints(robot, hold_stance=True)
    ctrl = law.c_controller(build_dir)
    z0 = walk_to_section(robot, VirtualConstraints(robot), dt=dt, build_dir=build_dir)
    cycle = gait.fixed_point(lambda z: poincare(robot, ctrl, z, dt), z0, tol=1e-9)
    return robot, ctrl, cycle


def walk(steps: int = 12, dt: float = 1e-3, build_dir: str | None = None,
         controller: str = "c") -> tuple[Any, Any, list[dict]]:
    """Build the model and walk for ``0.4*steps`` seconds: (compiled model, result, the heel strikes).

    ``controller``: ``"c"`` runs the law compiled from exo5_walk_controller.c inside the C simulation,
    ``"python"`` calls VirtualConstraints from the simulation at every stage (the slow path)."""
    robot = rodgen.build(rodgen.load(HERE / "exo5_walk.yaml"), build_dir=build_dir)
    law = VirtualConstraints(robot)
    y0 = law.initial_state()
    if controller not in ("c", "python"):
        raise ValueError(f"controller must be 'c' or 'python'; got {controller!r}")
    u = law.c_controller(build_dir) if controller == "c" else law
    # after heel strike the trailing foot leaves the ground slowly: it may touch down again only once it has
    # risen 1 cm (the swing leg shortens); at impact the tangential impulse may exceed mu times the normal
    # one for the instant of the impact: such slips are logged, and the foot keeps sticking
    res = robot.simulate(y0, 0.4 * steps, dt, u=u, contacts=["foot_a"], arm_gap=0.01, on_slip="continue",
                         max_events=4 * steps + 8)
    strikes = [e for e in res.events if e["kind"] == "touchdown"]
    return robot, res, strikes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=str(HERE / "out"))
    ap.add_argument("--steps", type=int, default=12, help="walk for 0.4 s per step")
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--no-animation", action="store_true")
    ap.add_argument("--controller", choices=("c", "python"), default="c",
                    help="the walking law compiled from exo5_walk_controller.c (default) or the Python reference")
    ap.add_argument("--stability", action="store_true",
                    help="find the period-one gait and print its Floquet multipliers (no walk, no plots)")
    args = ap.parse_args(argv)
    if args.stability:
        _, _, cycle = stability(args.dt)
        print(f"period-one gait: |P(z) - z| = {cycle.residual:.1e} after {cycle.iterations} Newton steps")
        print("largest Floquet multipliers (modulus):", np.array2string(np.abs(cycle.multipliers[:4]), precision=4))
        print("stable" if cycle.stable else "unstable")
        return 0 if cycle.stable else 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    robot, res, strikes = walk(args.steps, args.dt, controller=args.controller)
    print(f"{len(strikes)} heel strikes in {res.t[-1]:.2f} s, status: {res.message}")
    hip = res.q[:, 0]
    for k, e in enumerate(strikes, 1):
        i = min(int(np.searchsorted(res.t, e["t"])), len(hip) - 1)
        print(f"  step {k:2d}: t = {e['t']:6.3f} s  {e['block']}  hip x = {hip[i]:6.3f} m  "
              f"energy lost {e['energy_loss']:6.2f} J")
    print(f"mean speed {(hip[-1] - hip[0]) / (res.t[-1] - res.t[0]):.3f} m/s")
    _plot(robot, res, out / "exo5_walk.png")
    if not args.no_animation:
        rodgen.animate(robot, res, out / "exo5_walk.gif", trace="foot_a")
    return 0 if len(strikes) >= args.steps else 1


def _plot(robot: Any, res: Any, path: Path) -> None:
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for b in robot.constraints:
        lam = res.lam[:, b.row:b.row + 2]
        axes[0].plot(res.t, lam[:, 1], label=f"{b.name} normal")
        axes[0].plot(res.t, lam[:, 0], "--", label=f"{b.name} tangential")
    axes[0].set_ylabel("ground reaction [N]")
    axes[0].legend(loc="upper right", fontsize=8)
    for k, b in enumerate(robot.constraints):
        axes[1].fill_between(res.t, k, k + 0.8 * (res.active[b.name] > 0), step="post", label=b.name)
    axes[1].set_yticks([0.4, 1.4], [b.name for b in robot.constraints])
    axes[1].set_ylabel("in contact")
    ix = {n: i for i, n in enumerate(robot.coordinates)}
    for n in ("l_thigh_a_l", "l_shank_a_l", "l_thigh_b_l", "l_shank_b_l"):
        axes[2].plot(res.t, res.q[:, ix[n]], label=n)
    axes[2].set_ylabel("variable lengths [m]")
    axes[2].set_xlabel("time [s]")
    axes[2].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
