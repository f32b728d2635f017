"""Hybrid gaits: the Jacobian of a stride (flow, event and impact, the saltation term included), the
Poincaré map's fixed point and its Floquet multipliers.

A stride starts just after an impact with the ``stance`` contacts held and ends just after the next
touchdown of the ``swing`` contact. The compiled hybrid simulation (RK4 of the constrained dynamics,
the touchdown located by RK4 steps of shortened length, the plastic impact) gives the states; the
Jacobian of the stride map y₀ → y⁺ is propagated through the same RK4 steps with the derivatives of the
constrained dynamics (``CompiledModel.constrained_dynamics_derivatives``;
:func:`rodgen.runtime.sensitivity.rk4_step`), then through the event and the impact:

    ∂y⁺/∂y₀ = DΔ · (I - f⁻ ∇gᵀ / (∇g · f⁻)) · Φ

with Φ the transition matrix of the steps up to the event state y⁻, g the swing contact's gap (its
last constraint row), f⁻ the constrained flow at y⁻ (the middle factor is the saltation of the
event time: a perturbation that brings the touchdown earlier or later moves y⁻ along the flow), and
DΔ = [[I, 0], [∂q̇⁺/∂q, ∂q̇⁺/∂q̇⁻]] the impact map's derivative (``impact_derivatives``). The run uses
no drift control (alpha = beta = 0), so that the simulated flow is the one differentiated. Under a
feedback law u(t, y) the flow's Jacobian is the closed loop's, ∂f/∂y + ∂f/∂u ∂u/∂y (:func:`stride`).

A periodic gait is a fixed point of a Poincaré map P on a section of the user's choosing (for a biped
usually the state after the impact with the legs relabelled, in coordinates of the section);
:func:`fixed_point` solves P(z) = z by Newton with P's exact Jacobian, and the gait is stable when
every eigenvalue of ∂P/∂z (its Floquet multipliers, :func:`multipliers`) lies inside the unit circle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .errors import RodgenError
from .runtime.sensitivity import rk4_step


@dataclass(frozen=True)
class Stride:
    """One stride of a hybrid gait and its Jacobian.

    y0 : (ny,) the state at the start.
    t_event : the time of the touchdown.
    y_minus, y_plus : (ny,) the states just before and just after the impact.
    active_after : the blocks held after the impact.
    jacobian : (ny, ny) ∂y⁺/∂y₀ = impact · saltation · flow.
    flow : (ny, ny) ∂y⁻/∂y₀ at the event time held fixed (the RK4 steps' transition matrix).
    saltation : (ny, ny) I - f⁻ ∇gᵀ / (∇g · f⁻), the event time's share.
    impact : (ny, ny) ∂y⁺/∂y⁻.
    result : the simulation (SimulationResult).
    """

    y0: np.ndarray
    t_event: float
    y_minus: np.ndarray
    y_plus: np.ndarray
    active_after: list[str]
    jacobian: np.ndarray
    flow: np.ndarray
    saltation: np.ndarray
    impact: np.ndarray
    result: Any


def stride(robot: Any, y0: Any, stance: Sequence[str], swing: str, dt: float, *, t_max: float = 2.0,
           u: Any = None, p: Any = None, arm_gap: float = 0.0, event_tol: float = 1e-13,
           input_jacobian: Optional[Callable[[float, np.ndarray], Any]] = None, input_step: float = 1e-6,
           on_slip: str = "stop") -> Stride:
    """The stride from ``y0`` with the ``stance`` blocks held until the ``swing`` contact touches down, and
    its Jacobian (see the module's docstring). Models with nq = nv; the stride must end at the swing
    contact's touchdown with no other event before it.

    ``u``: constant inputs (None: zero), or a feedback law: a function u(t, q, qd) (or u(t, y)) or a
    :class:`rodgen.CController`. The closed loop's flow Jacobian is ∂f/∂y + ∂f/∂u ∂u/∂y, with ∂f/∂y and
    ∂f/∂u those of the constrained dynamics (exact) and ∂u/∂y from ``input_jacobian(t, y) -> (nu, ny)``
    when given, else by central differences of the law alone (step ``input_step`` times max(1, abs(yⱼ))).
    The law must be a function of (t, y) over the stride: a controller with memory must keep it
    unchanged until the touchdown (it is evaluated here with its initial ``state``). The runtime's own
    :class:`~rodgen.runtime.control.PD` and :class:`~rodgen.runtime.control.ComputedTorque` (no feedforward)
    run in C as ``simulate(controller=...)``, their ∂u/∂y in closed form (``input_jacobian`` is refused).

    ``arm_gap``, ``event_tol``, ``on_slip``: those of the hybrid simulation (``simulate(contacts=...)``)."""
    if robot.nq != robot.nv:
        raise ValueError(f"stride: the model {robot.name!r} has nq = {robot.nq} != nv = {robot.nv}; gait "
                         f"Jacobians need nq = nv")
    stance = [stance] if isinstance(stance, str) else list(stance)
    blocks = {b.name: b for b in robot.constraints}
    for nm in stance + [swing]:
        if nm not in blocks:
            raise ValueError(f"stride: the model {robot.name!r} has no constraint block {nm!r}; it has "
                             f"{', '.join(blocks) or 'none'}")
    if blocks[swing].kind != "contact":
        raise ValueError(f"stride: the swing block {swing!r} is a {blocks[swing].kind}, not a contact")
    n = robot.nv
    y0 = np.array(y0, dtype=float).reshape(-1)
    law, dlaw = _input_law(robot, u, p, input_jacobian, input_step)
    uc = _constant_inputs(robot, u) if law is None else np.zeros(robot.nu)
    u_sim = (u if law is not None else uc) if robot.nu else None
    builtin = _is_builtin(u)
    res = robot.simulate(y0, t_max, dt, u=None if builtin else u_sim, controller=u if builtin else None, p=p,
                         contacts=stance, disarmed=[swing],
                         arm_gap=arm_gap, event_tol=event_tol, alpha=0.0, beta=0.0, on_slip=on_slip)
    if not res.events:
        raise RodgenError(f"stride: no touchdown of {swing!r} within {t_max} s ({res.message})")
    first = res.events[0]
    if first["kind"] != "touchdown" or first["block"] != swing:
        raise RodgenError(f"stride: the first event at t = {first['t']:.6g} s is {first['kind']} of "
                          f"{first['block']!r}, not the touchdown of {swing!r}; a stride is one phase")
    te = float(first["t"])
    at = np.flatnonzero(res.t == te)
    pre, post = int(at[0]), int(at[-1])
    Y = np.concatenate([res.q, res.qd], axis=1)

    def inputs(t: float, y: np.ndarray) -> np.ndarray:
        return uc if law is None else law(t, y)

    def f(t: float, y: np.ndarray) -> np.ndarray:
        qdd, _ = robot.constrained_dynamics(y[:n], y[n:], inputs(t, y), stance, p, t=t)
        return np.concatenate([y[n:], qdd])

    def jac(t: float, y: np.ndarray) -> np.ndarray:
        d = robot.constrained_dynamics_derivatives(y[:n], y[n:], inputs(t, y), stance, p, t=t)
        lower = np.hstack([d[0], d[1]])
        if dlaw is not None:
            lower = lower + d[2] @ dlaw(t, y)          # the closed loop: ∂q̈/∂u ∂u/∂y
        return np.vstack([np.hstack([np.zeros((n, n)), np.eye(n)]), lower])

    phi = np.eye(2 * n)
    for k in range(pre):
        _, step, _ = rk4_step(f, jac, float(res.t[k]), Y[k], float(res.t[k + 1] - res.t[k]))
        phi = step @ phi
    y_minus, y_plus = Y[pre], Y[post]
    b = blocks[swing]
    grad = np.zeros(2 * n)
    grad[:n] = robot.constraint_jacobian(y_minus[:n], p)[b.row + b.nrows - 1]
    f_minus = f(te, y_minus)
    rate = float(grad @ f_minus)
    if not rate < 0.0:
        raise RodgenError(f"stride: the swing contact {swing!r} touches down without approaching the ground "
                          f"(gap rate {rate:.3g}); the event time has no derivative there")
    saltation = np.eye(2 * n) - np.outer(f_minus, grad) / rate
    after = [nm for nm, a in res.active.items() if a[post]]
    d = robot.impact_derivatives(y_minus[:n], y_minus[n:], after, p)
    impact = np.block([[np.eye(n), np.zeros((n, n))], [d[0], d[1]]])
    return Stride(y0, te, y_minus, y_plus, after, impact @ saltation @ phi, phi, saltation, impact, res)


def _constant_inputs(robot: Any, u: Any) -> np.ndarray:
    """A constant input vector of the model (None: zeros), checked for its size."""
    uv = np.zeros(robot.nu) if u is None else np.array(u, dtype=float).reshape(-1)
    if uv.size != robot.nu:
        raise ValueError(f"stride: u of the model {robot.name!r} has {robot.nu} entries, got {uv.size}")
    return uv


def _input_law(robot: Any, u: Any, p: Any, input_jacobian: Optional[Callable[[float, np.ndarray], Any]],
               step: float) -> tuple[Optional[Callable[[float, np.ndarray], np.ndarray]],
                                     Optional[Callable[[float, np.ndarray], np.ndarray]]]:
    """(u(t, y), ∂u/∂y(t, y)) of a feedback law, or (None, None) for constant inputs."""
    from .runtime.callables import input_function
    from .runtime.ccontroller import CController
    from .runtime.control import PD, ComputedTorque
    ny = robot.nq + robot.nv
    if isinstance(u, (PD, ComputedTorque)):
        if input_jacobian is not None:
            raise ValueError(f"stride: input_jacobian is for a Python law or a CController; a "
                             f"{type(u).__name__} law's ∂u/∂y is written in closed form")
        return _builtin_law(robot, u, p)
    if isinstance(u, CController):
        law = u.function(robot, p)
    elif callable(u):
        fn = input_function(u, nq=robot.nq, inputs=robot.inputs, model=robot.name)

        def law(t: float, y: np.ndarray) -> np.ndarray:
            return np.asarray(fn(t, np.array(y, dtype=float)), dtype=float).reshape(-1)
    else:
        if input_jacobian is not None:
            raise ValueError("stride: input_jacobian is for a feedback law u(t, q, qd) or a CController; u is "
                             "constant")
        return None, None
    if not (step > 0):
        raise ValueError(f"stride: input_step must be positive; got {step}")

    def dlaw(t: float, y: np.ndarray) -> np.ndarray:
        if input_jacobian is not None:
            D = np.asarray(input_jacobian(t, np.array(y, dtype=float)), dtype=float)
            if D.shape != (robot.nu, ny):
                raise ValueError(f"stride: input_jacobian gave shape {D.shape}; the model {robot.name!r} needs "
                                 f"(nu, ny) = ({robot.nu}, {ny})")
            return D
        D = np.zeros((robot.nu, ny))
        for j in range(ny):
            h = step * max(1.0, abs(y[j]))
            e = np.zeros(ny)
            e[j] = h
            D[:, j] = (law(t, y + e) - law(t, y - e)) / (2.0 * h)
        return D

    return law, dlaw


def _is_builtin(u: Any) -> bool:
    from .runtime.control import PD, ComputedTorque
    return isinstance(u, (PD, ComputedTorque))


def _builtin_law(robot: Any, ctrl: Any, p: Any) -> tuple[Callable[[float, np.ndarray], np.ndarray],
                                                          Callable[[float, np.ndarray], np.ndarray]]:
    """(u(t, y), ∂u/∂y(t, y)) of the runtime's PD or computed-torque law (``rodgen_input_eval``, no
    feedforward), ∂u/∂y in closed form: ∂B/∂q and the inverse dynamics' ∂(M a + bias)/∂[q, qd] at fixed a
    from the model's ``constraint_partials``."""
    from .runtime.control import PD, _gains
    n, m = robot.nv, robot.nu
    rows = ctrl.reference.rows(n)
    times = ctrl.reference.t
    pd = isinstance(ctrl, PD)
    kp = _gains(ctrl.kp, m if pd else n, f"{type(ctrl).__name__} kp")
    kd = _gains(ctrl.kd, m if pd else n, f"{type(ctrl).__name__} kd")

    def ref(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = np.array([np.interp(t, times, col) for col in rows.T])
        return r[:n], r[n:2 * n], r[2 * n:]

    def accel(t: float, y: np.ndarray) -> np.ndarray:
        q_ref, qd_ref, qdd_ref = ref(t)
        return qdd_ref + kp * (q_ref - y[:n]) + kd * (qd_ref - y[n:])

    def law(t: float, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        B = robot.input_map(y[:n], p)
        if pd:
            q_ref, qd_ref, _ = ref(t)
            return kp * (B.T @ (q_ref - y[:n])) + kd * (B.T @ (qd_ref - y[n:]))
        Q = robot.inverse_dynamics(y[:n], y[n:], accel(t, y), p, t=t)
        return np.linalg.solve(B.T @ B, B.T @ Q)

    def input_map_partials(y: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """∂(M qdd + bias)/∂[q, qd] and dB[i, j, k] = ∂B_ij/∂q_k (g = M qdd + bias - B u at u = eⱼ)."""
        q, qd = np.ascontiguousarray(y[:n]), np.ascontiguousarray(y[n:])
        g0, _ = robot.constraint_partials(q, qd, qdd, None, None, p, t=0.0)
        dB = np.empty((n, m, n))
        for j in range(m):
            e = np.zeros(m)
            e[j] = 1.0
            gj, _ = robot.constraint_partials(q, qd, qdd, e, None, p, t=0.0)
            dB[:, j, :] = g0[:, :n] - gj[:, :n]
        return g0, dB

    def dlaw(t: float, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        q, qd = y[:n], y[n:]
        B = robot.input_map(q, p)
        D = np.zeros((m, 2 * n))
        if pd:
            q_ref, qd_ref, _ = ref(t)
            _, dB = input_map_partials(y, np.zeros(n))
            w = np.outer(q_ref - q, kp) + np.outer(qd_ref - qd, kd)      # w[i, j] = Kp_j e_i + Kd_j ė_i
            D[:, :n] = -kp[:, None] * B.T + np.einsum("ijk,ij->jk", dB, w)
            D[:, n:] = -kd[:, None] * B.T
            return D
        a = accel(t, y)
        g, _ = robot.constraint_partials(np.ascontiguousarray(q), np.ascontiguousarray(qd), a, None, None, p, t=t)
        _, dB = input_map_partials(y, np.zeros(n))
        M = robot.mass_matrix(q, p)
        dQ = np.hstack([g[:, :n] - M * kp[None, :], g[:, n:] - M * kd[None, :]])
        Q = robot.inverse_dynamics(q, qd, a, p, t=t)
        A = B.T @ B
        u = np.linalg.solve(A, B.T @ Q)
        rhs = B.T @ dQ
        rhs[:, :n] += (np.einsum("ijk,i->jk", dB, Q) - np.einsum("ijk,i->jk", dB, B @ u)
                       - B.T @ np.einsum("ilk,l->ik", dB, u))
        return np.linalg.solve(A, rhs)

    return law, dlaw


def multipliers(jacobian: Any) -> np.ndarray:
    """The eigenvalues of a Poincaré map's Jacobian (its Floquet multipliers), largest modulus first."""
    eig = np.linalg.eigvals(np.asarray(jacobian, dtype=float))
    return eig[np.argsort(-np.abs(eig), kind="stable")]


@dataclass(frozen=True)
class LimitCycle:
    """A fixed point z* = P(z*) of a Poincaré map.

    z : the fixed point; residual : the largest entry of ``abs(P(z) - z)`` there; iterations : Newton
    steps taken.
    jacobian : ∂P/∂z at z*; multipliers : its eigenvalues, largest modulus first.
    stable : every multiplier inside the unit circle (modulus below 1).
    """

    z: np.ndarray
    residual: float
    iterations: int
    jacobian: np.ndarray
    multipliers: np.ndarray

    @property
    def stable(self) -> bool:
        return bool(np.all(np.abs(self.multipliers) < 1.0))


def fixed_point(step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], z0: Any, *, tol: float = 1e-10,
                iterations: int = 20) -> LimitCycle:
    """Newton on P(z) - z = 0 with ``step(z) -> (P(z), ∂P/∂z)`` (the exact Jacobian, e.g. from :func:`stride`
    and the section's own maps). Raises RodgenError when it does not converge to ``tol``."""
    z = np.array(z0, dtype=float).reshape(-1)
    Pz, DP = step(z)
    for it in range(iterations + 1):
        r = Pz - z
        if np.max(np.abs(r)) < tol:
            return LimitCycle(z, float(np.max(np.abs(r))), it, DP, multipliers(DP))
        if it == iterations:
            break
        z = z - np.linalg.solve(DP - np.eye(z.size), r)
        Pz, DP = step(z)
    raise RodgenError(f"fixed_point: no periodic gait found to {tol:g} in {iterations} Newton steps "
                      f"(last |P(z) - z| = {np.max(np.abs(Pz - z)):.3g} at z = {z})")


__all__ = ["Stride", "stride", "multipliers", "LimitCycle", "fixed_point"]
