"""A quasi-static walking gait of the 12-joint biped (examples/spatial/biped12.yaml) and its joint controller.

The gait is planned ahead of time, in Python, and tabulated; a joint-level law in C
(biped12_walk_controller.c, through ``rodgen.CController``) tracks the table in the simulation.

Plan (x forward, y to the left, z up; the pelvis kept level and facing forward, its centre of mass at a
constant height). Each step has three parts:

* **shift**: in double support, the centre of mass (CoM) moves over the next stance foot (a quintic in time,
  zero velocity and acceleration at both ends);
* **swing**: the other foot rises (a sine bump of height ``clearance``), moves forward by two step lengths
  (one for the first and last step) and comes down flat at its foothold, the CoM staying over the stance
  foot (the ground's reaction point stays in the stance sole: slow motion, the CoM above the sole);
* the swing foot lands at rest; the next step's shift starts.

Every table row comes from inverse kinematics: Newton's method on the 18 velocities with the 18 tasks
[CoM position (3), pelvis orientation (3), left sole pose (6), right sole pose (6)], the sole poses and
their Jacobians from the compiled model's constraint rows (``constraint_position``/``constraint_jacobian``
of the flat-foot contacts, whose rows are the frame's position and orientation error against the ground's
axes) and the CoM and its Jacobian from the mass matrix of the free-flyer base (its linear-angular block is
``-m [c]x``, ``m R^T v_com = M[:3] v``). Velocities and accelerations are central differences of the table
on the configuration's manifold (``robot.difference``). The feedforward joint torques are the constrained
inverse dynamics along the plan: ``M a + bias = B tau + J_s^T lambda`` over the feet in contact, in double
support with each foot's centre of pressure at the centre of its sole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SIDES = ("l", "r")
JOINTS = ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll")
#: joint PD gains per joint of a leg: stance (the leg carries the body) and swing (the leg is in the air). The
#: stance ankle roll's damping is low enough for an airborne foot too (a foot landing and bouncing off under
#: stance gains): kd / I of the foot about its roll axis (about 0.003 kg m^2) times the 1 ms step stays inside
#: RK4's stability region (10 there made the foot's motion blow up)
KP_STANCE = (1500.0, 2500.0, 2500.0, 2500.0, 2000.0, 2000.0)
KD_STANCE = (10.0, 40.0, 40.0, 40.0, 10.0, 4.0)
KP_SWING = (400.0, 800.0, 800.0, 600.0, 100.0, 60.0)
KD_SWING = (8.0, 25.0, 25.0, 15.0, 2.0, 1.0)
#: phase codes of the table: double support, left foot stance (right swings), right foot stance
DOUBLE, STANCE_L, STANCE_R = 0, 1, 2
#: the sole rectangle: its centre from the sole frame foot_<side> (x, y, 0) and its half length and width
SOLE_CENTRE = np.array([0.03, 0.0, 0.0])
SOLE_HALF = np.array([0.11, 0.05])


def com(robot: Any, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The centre of mass (3,) of the whole robot in the ground frame and its Jacobian (3, nv), from the
    free-flyer block of the mass matrix: M[:3, 3:6] = -m [c]x with c the CoM in the pelvis frame, and
    M[:3] v = m R^T v_com."""
    M = robot.mass_matrix(q)
    m = M[0, 0]
    c = np.array([M[1, 5], -M[0, 5], M[0, 4]]) / m
    x, y, z, w = q[3:7]
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return q[:3] + R @ c, R @ M[:3] / m


def solve_ik(robot: Any, q: np.ndarray, com_ref: np.ndarray, feet: dict[str, np.ndarray],
             tol: float = 1e-11, iters: int = 30) -> np.ndarray:
    """The configuration with the CoM at ``com_ref``, the pelvis level and facing +x, and each sole at
    ``feet[side] = (x, y, height)`` flat and facing +x; Newton from ``q``. Raises RuntimeError if it does not
    converge."""
    rows = {b.name: b.row for b in robot.constraints}
    nv = robot.nv
    for _ in range(iters):
        c, Jc = com(robot, q)
        pos = robot.constraint_position(q)
        J = robot.constraint_jacobian(q)
        err = [com_ref - c, -2.0 * q[3:6] * np.sign(q[6])]       # the pelvis quaternion's vector part to 0
        Jt = [Jc, np.eye(3, nv, 3)]
        for side in SIDES:
            r = rows[f"sole_{side}"]
            err.append(np.r_[feet[side], 0.0, 0.0, 0.0] - pos[r:r + 6])
            Jt.append(J[r:r + 6])
        e = np.concatenate(err)
        if np.abs(e).max() < tol:
            return q
        q = robot.integrate(q, np.linalg.solve(np.vstack(Jt), e))
    raise RuntimeError(f"inverse kinematics did not converge (error {np.abs(e).max():.3g})")


def _quintic(s: np.ndarray) -> np.ndarray:
    s = np.clip(s, 0.0, 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s * s)


@dataclass
class Gait:
    """The tabulated gait: sample times, configurations (N, nq), velocities and accelerations (N, nv),
    feedforward joint torques (N, 12), phase codes (N,: the feet on the ground), the gains' codes (N,: which
    leg has the swing gains, a little ahead of the swing), the load factor of the foot about to swing (N,:
    from 1 to 0 over the end of the shift), and per step its stance side, start time,
    touch-down time and the swing foot's foothold."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    phase: np.ndarray
    gains: np.ndarray
    load: np.ndarray
    steps: list[dict[str, Any]] = field(default_factory=list)
    footholds: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def params(self, robot: Any) -> np.ndarray:
        """The parameters of biped12_walk_controller.c: [N, dt_table, kp_stance (6), kd_stance (6),
        kp_swing (6), kd_swing (6), index of the first joint coordinate in q and in v, then per sample
        q_joints (12), v_joints (12), tau (12), gains code]."""
        n = len(self.t)
        dt = float(self.t[1] - self.t[0])
        first_q, first_v = robot.nq - 12, robot.nv - 12
        head = [n, dt, *KP_STANCE, *KD_STANCE, *KP_SWING, *KD_SWING, first_q, first_v]
        table = np.column_stack([self.q[:, first_q:], self.v[:, first_v:], self.tau, self.gains])
        return np.concatenate([head, table.reshape(-1)])


def plan(robot: Any, steps: int = 10, *, step_length: float = 0.15, com_height: float = 0.83,
         shift: float = 1.6, swing: float = 0.8, settle: float = 0.4, clearance: float = 0.04,
         over: float = 0.75, unload: float = 0.3, dt: float = 0.005) -> Gait:
    """Plan ``steps`` steps (the first with the right foot, stepping ``step_length`` ahead of the left;
    every later one two step lengths; the last brings the feet together), tabulated every ``dt`` seconds.

    ``shift``, ``swing``: the durations of the CoM shift and of the swing; ``settle``: double support at the
    start and at the end; ``over``: the fraction of the way from the middle of the feet to the stance foot's
    centre line that the CoM shifts sideways; ``unload``: the fraction of the shift after which the foot about
    to swing unloads (the feedforward's share of the ground force on it goes to 0) and its leg gets the swing
    gains."""
    width = 2 * abs(robot.frames(robot.initial_state()[:robot.nq])["foot_l"][0][1])
    foot = {"l": np.array([0.0, width / 2, 0.0]), "r": np.array([0.0, -width / 2, 0.0])}
    footholds: dict[str, list[np.ndarray]] = {s: [foot[s].copy()] for s in SIDES}
    # the schedule: (t0, t1, kind, stance, data) pieces
    pieces: list[tuple[float, float, str, str, Any]] = []
    t = 0.0
    pieces.append((t, t + settle, "hold", "", None))
    t += settle
    com_xy = SOLE_CENTRE[:2].copy()
    step_info: list[dict[str, Any]] = []
    for k in range(steps):
        swing_side = "r" if k % 2 == 0 else "l"
        stance = "l" if swing_side == "r" else "r"
        target_xy = foot[stance][:2] * np.array([1.0, over]) + SOLE_CENTRE[:2]
        pieces.append((t, t + shift, "shift", stance, (com_xy.copy(), target_xy.copy())))
        t += shift
        com_xy = target_xy
        start = foot[swing_side].copy()
        last = k == steps - 1
        goal = start.copy()
        goal[0] = foot[stance][0] + (0.0 if last else step_length)
        pieces.append((t, t + swing, "swing", stance, (swing_side, start, goal)))
        step_info.append({"stance": stance, "swing": swing_side, "lift": t, "land": t + swing,
                          "foothold": goal.copy(), "length": float(goal[0] - start[0])})
        t += swing
        foot[swing_side] = goal
        footholds[swing_side].append(goal.copy())
    mid = np.array([(foot["l"][0] + foot["r"][0]) / 2, 0.0]) + SOLE_CENTRE[:2]
    pieces.append((t, t + shift, "shift", "", (com_xy.copy(), mid)))
    t += shift
    pieces.append((t, t + settle, "hold", "", None))
    t += settle

    times = np.arange(int(round(t / dt)) + 1) * dt
    q = robot.initial_state()[:robot.nq].copy()
    qs, phases, gain_codes, loads = [], [], [], []
    feet = {s: footholds[s][0].copy() for s in SIDES}
    com_now = SOLE_CENTRE[:2].copy()
    for tk in times:
        piece = next((p for p in pieces if p[0] <= tk < p[1] + 1e-12), pieces[-1])
        t0, t1, kind, stance, data = piece
        s = (tk - t0) / (t1 - t0)
        code = gains = DOUBLE
        load = 1.0
        if kind == "shift":
            a, b = data
            com_now = a + (b - a) * _quintic(s)
            if stance and s > unload:
                # the foot about to swing unloads: its load factor goes to 0 and its leg's gains drop to those
                # of a swing leg (an ankle torque of a stiff law on a lightly loaded sole would tip it)
                gains = STANCE_L if stance == "l" else STANCE_R
                load = 1.0 - _quintic((s - unload) / (1.0 - unload))
        elif kind == "swing":
            side, start, goal = data
            code = gains = STANCE_L if stance == "l" else STANCE_R
            feet[side] = start + (goal - start) * _quintic(s)
            feet[side][2] = clearance * np.sin(np.pi * _quintic(s))
            if s >= 1.0 - 1e-12:
                feet[side] = goal.copy()
        q = solve_ik(robot, q, np.r_[com_now, com_height], feet)
        qs.append(q)
        phases.append(code)
        gain_codes.append(gains)
        loads.append(load)
    Q = np.array(qs)
    # velocities and accelerations: central differences on the manifold (one-sided at the ends: at rest)
    V = np.zeros((len(times), robot.nv))
    dq = robot.difference(Q[:-1], Q[1:]) / dt                  # the mean velocity over each interval
    V[1:-1] = 0.5 * (dq[:-1] + dq[1:])
    A = np.zeros_like(V)
    A[1:-1] = (dq[1:] - dq[:-1]) / dt
    gait = Gait(times, Q, V, A, np.zeros((len(times), 12)), np.array(phases, float), np.array(gain_codes, float),
                np.array(loads), step_info, footholds)
    gait.tau = feedforward(robot, gait)
    return gait


def feedforward(robot: Any, gait: Gait) -> np.ndarray:
    """The joint torques of the constrained inverse dynamics along the plan, M a + bias = B tau + J^T lambda
    over the feet in contact (single support: exact; double support: each foot's centre of pressure at the
    centre of its sole, the internal forces between the feet the least)."""
    rows = {b.name: b.row for b in robot.constraints}
    taus = np.zeros((len(gait.t), 12))
    mg = robot.mass_matrix(gait.q[0])[0, 0] * 9.81
    for k, (q, v, a, code) in enumerate(zip(gait.q, gait.v, gait.a, gait.phase)):
        Q = robot.inverse_dynamics(q, v, a)
        B = robot.input_map(q)
        J = robot.constraint_jacobian(q)
        if code == DOUBLE:
            Jl, Jr = J[rows["sole_l"]:rows["sole_l"] + 6], J[rows["sole_r"]:rows["sole_r"] + 6]
            # unknowns x = [tau (12), lambda_l (6), lambda_r (6)]: the 18 equations of motion E x = Q hold
            # exactly; in their 6-dimensional null space, each foot's centre of pressure as near the centre
            # of its sole as they allow (C x = 0: m_x = fz y_c, m_y = -fz x_c)
            E = np.hstack([B, Jl.T, Jr.T])
            C = np.zeros((4, 24))
            for i, o in enumerate((12, 18)):
                C[2 * i, [o + 3, o + 2]] = 1.0, -SOLE_CENTRE[1]
                C[2 * i + 1, [o + 4, o + 2]] = 1.0, SOLE_CENTRE[0]
            W = np.r_[np.ones(12), np.full(12, mg)]
            x0 = W * np.linalg.lstsq(E * W, Q, rcond=None)[0]
            _, _, vt = np.linalg.svd(E)
            N = vt[18:].T
            x = x0 + N @ np.linalg.lstsq(C @ N, -C @ x0, rcond=None)[0]
            # the foot about to swing unloads (its normal force times the plan's load factor), its centre of
            # pressure held at its sole's centre and its tangential force shared as the normal force is (each
            # foot as far from slipping); the other foot's centre of pressure where it has to be
            rho = gait.load[k]
            if gait.gains[k] == STANCE_L:
                fz_l, fz_r = x[14] + (1 - rho) * x[20], rho * x[20]
                keep, other = [2, 3], [0, 1]
            elif gait.gains[k] == STANCE_R:
                fz_l, fz_r = rho * x[14], x[20] + (1 - rho) * x[14]
                keep, other = [0, 1], [2, 3]
            else:
                fz_l, fz_r = x[14], x[20]
                keep, other = [0, 1, 2, 3], []
            wl = fz_l / (fz_l + fz_r)
            R = np.zeros((3, 24))
            rhs = np.zeros(3)
            for j in range(2):
                R[j, 12 + j], R[j, 18 + j] = 1.0 - wl, -wl
            R[2, 14], rhs[2] = 1.0, fz_l
            rows_ = np.vstack([C[keep], R, 1e-3 * C[other]])
            rhs_ = np.r_[np.zeros(len(keep)), rhs, np.zeros(len(other))]
            x = x0 + N @ np.linalg.lstsq(rows_ @ N, rhs_ - rows_ @ x0, rcond=None)[0]
            taus[k] = x[:12]
        else:
            st = "sole_l" if code == STANCE_L else "sole_r"
            Js = J[rows[st]:rows[st] + 6]
            x = np.linalg.solve(np.hstack([B, Js.T]), Q)
            taus[k] = x[:12]
    return taus


def law(gait: Gait, robot: Any, t: float, y: np.ndarray) -> np.ndarray:
    """The law of biped12_walk_controller.c in NumPy (the readable reference): the table interpolated at t,
    u = tau_ff + kp (q_ref - q) + kd (v_ref - v) on the 12 joints, a leg's gains by the nearer sample's
    gains code (stance or swing), the swing leg's ankle pitch and roll references less the pelvis' pitch and
    roll (the foot kept level however the pelvis leans)."""
    n, dt = len(gait.t), float(gait.t[1] - gait.t[0])
    s = t / dt
    k, w = (0, 0.0) if s <= 0 else (n - 2, 1.0) if s >= n - 1 else (int(s), s - int(s))
    fq, fv = robot.nq - 12, robot.nv - 12

    def lerp(a: np.ndarray) -> np.ndarray:
        return a[k] + w * (a[k + 1] - a[k])

    phase = gait.gains[k] if w < 0.5 else gait.gains[k + 1]
    kp = np.r_[KP_SWING if phase == STANCE_R else KP_STANCE, KP_SWING if phase == STANCE_L else KP_STANCE]
    kd = np.r_[KD_SWING if phase == STANCE_R else KD_STANCE, KD_SWING if phase == STANCE_L else KD_STANCE]
    q, v = y[:robot.nq], y[robot.nq:]
    # the swing foot's ankle takes out the pelvis' roll and pitch (ZYX angles of its quaternion x y z w)
    qx, qy, qz, qw = q[fq - 4:fq]
    roll = np.arctan2(2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy))
    pitch = np.arcsin(np.clip(-2 * (qx * qz - qy * qw), -1.0, 1.0))
    level = np.zeros(12)
    for leg, swings in ((0, phase == STANCE_R), (1, phase == STANCE_L)):
        if swings:
            level[6 * leg + 4:6 * leg + 6] = pitch, roll
    return (lerp(gait.tau) + kp * (lerp(gait.q[:, fq:]) - level - q[fq:])
            + kd * (lerp(gait.v[:, fv:]) - v[fv:]))


def controller(gait: Gait, robot: Any, build_dir: str | None = None) -> Any:
    """The law compiled from biped12_walk_controller.c as a rodgen.CController with the gait's table."""
    import rodgen
    return rodgen.CController(HERE / "biped12_walk_controller.c", "biped12_walk_controller",
                              params=gait.params(robot), build_dir=build_dir)


def _f(x: float) -> str:
    return f"{float(x):.17g}"


def mj_contact(dt: float) -> str:
    """The contact parameters of the MJCF twin's soles and floor: a time constant of 2 dt (the smallest
    MuJoCo's solver takes at step dt), critically damped, and an impedance of 0.99 .. 0.999 reached within
    1 mm of penetration (MuJoCo's defaults: 0.02 s, 0.9 .. 0.95 over 1 mm), the nearest to rodgen's rigid
    flat feet."""
    return f'solref="{_f(2 * dt)} 1" solimp="0.99 0.999 0.001"'


def mjcf(robot: Any, dt: float = 1e-3) -> str:
    """The biped for MuJoCo: the bodies, joints and inertias of biped12.yaml with the compiled model's
    parameter values (the pelvis and the torso lumped into one body, as MuJoCo wants one inertia per body),
    hinge joints with motors (gear 1, unlimited), box soles of SOLE_HALF (1 cm thick, their bottom faces at
    the sole frames) on a plane, RK4 with time step ``dt``. The only geometry that collides is the soles with
    the plane (friction 0.8), through the stiffest contact MuJoCo takes at this step (:func:`mj_contact`):
    with MuJoCo's default soft contact the feet sink and slide and the biped falls after its first landing
    under the gains that walk it in rodgen."""
    p = robot.parameters
    stiff = mj_contact(dt)

    def inertial(m: float, c: Any, inertia: Any) -> str:
        i = np.asarray(inertia, float)
        return (f'<inertial pos="{_f(c[0])} {_f(c[1])} {_f(c[2])}" mass="{_f(m)}" '
                f'fullinertia="{_f(i[0, 0])} {_f(i[1, 1])} {_f(i[2, 2])} {_f(i[0, 1])} {_f(i[0, 2])} {_f(i[1, 2])}"/>')

    def small(m: float, i: float) -> str:
        return inertial(m, (0, 0, 0), np.eye(3) * i)

    # pelvis and torso: one body, by the parallel-axis theorem
    bodies = [(p["m_pelvis"], np.zeros(3), np.diag([0.08, 0.05, 0.08])),
              (p["m_torso"], np.array([0.0, 0.0, 0.3]), np.diag([1.0, 0.9, 0.3]))]
    m = sum(b[0] for b in bodies)
    c = sum(b[0] * b[1] for b in bodies) / m
    inertia = sum(b[2] + b[0] * ((b[1] - c) @ (b[1] - c) * np.eye(3) - np.outer(b[1] - c, b[1] - c)) for b in bodies)
    fh = p["foot_height"]
    legs = []
    for s, side in ((1, "l"), (-1, "r")):
        legs.append(f"""
      <body name="hip_yaw_{side}" pos="0 {_f(s * p['hip_width'] / 2)} -0.06">
        <joint name="hip_yaw_{side}" axis="0 0 1"/>{small(0.5, 0.001)}
        <body name="hip_roll_{side}"><joint name="hip_roll_{side}" axis="1 0 0"/>{small(0.5, 0.001)}
          <body name="hip_pitch_{side}"><joint name="hip_pitch_{side}" axis="0 1 0"/>
            {inertial(p['m_thigh'], (0, 0, -p['l_thigh'] / 2), np.diag([0.095, 0.095, 0.012]))}
            <body name="knee_{side}" pos="0 0 {_f(-p['l_thigh'])}"><joint name="knee_{side}" axis="0 1 0"/>
              {inertial(p['m_shank'], (0, 0, -p['l_shank'] / 2), np.diag([0.047, 0.047, 0.004]))}
              <body name="ankle_pitch_{side}" pos="0 0 {_f(-p['l_shank'])}">
                <joint name="ankle_pitch_{side}" axis="0 1 0"/>{small(0.3, 0.0003)}
                <body name="ankle_roll_{side}"><joint name="ankle_roll_{side}" axis="1 0 0"/>
                  {inertial(p['m_foot'], (0.03, 0, -fh / 2), np.diag([0.002, 0.006, 0.007]))}
                  <geom name="sole_{side}" type="box" contype="1" conaffinity="1" friction="0.8 0.005 0.0001"
                        {stiff}
                        size="{_f(SOLE_HALF[0])} {_f(SOLE_HALF[1])} 0.005"
                        pos="{_f(SOLE_CENTRE[0])} {_f(SOLE_CENTRE[1])} {_f(-fh + 0.005)}"/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>""")
    motors = "\n".join(f'    <motor name="{j}_{sd}" joint="{j}_{sd}" gear="1" ctrllimited="false"/>'
                        for sd in SIDES for j in JOINTS)
    return f"""<mujoco model="biped12">
  <option timestep="{_f(dt)}" integrator="RK4" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="20 20 0.1" contype="1" conaffinity="1" {stiff}/>
    <body name="pelvis" pos="0 0 1">
      <freejoint name="pelvis"/>
      {inertial(m, c, inertia)}{''.join(legs)}
    </body>
  </worldbody>
  <actuator>
{motors}
  </actuator>
</mujoco>
"""


def mujoco_qpos(q: np.ndarray) -> np.ndarray:
    """rodgen's q of the biped (x y z, quaternion x y z w, 12 joints) as MuJoCo's qpos (w first)."""
    q = np.asarray(q, float)
    return np.r_[q[:3], q[6], q[3:6], q[7:]]
