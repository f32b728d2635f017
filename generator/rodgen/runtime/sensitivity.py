"""Sensitivities of a simulation: the state-transition matrix through the integrator's own RK4 stages.

``rodgen_simulate``'s RK4 step is y₁ = y + h/6 (k₁ + 2 k₂ + 2 k₃ + k₄) with k₁ = f(t, y),
k₂ = f(t + h/2, y + h/2 k₁), k₃ = f(t + h/2, y + h/2 k₂), k₄ = f(t + h, y + h k₃), on the grid
t₀ + k dt with the last step ending at t_end. Differentiating the step itself (the variational
equations discretised exactly as the integrator, not integrated beside it) gives

    dk₁ = A₁,  dk₂ = A₂ (I + h/2 dk₁),  dk₃ = A₃ (I + h/2 dk₂),  dk₄ = A₄ (I + h dk₃),
    Φ_step = I + h/6 (dk₁ + 2 dk₂ + 2 dk₃ + dk₄)

with Aᵢ = ∂f/∂y at the stage (the compiled RHS Jacobian), and Φ(T) the product of the steps: the
exact derivative of the computed final state, up to rounding. A constant input u enters the same way
with ∂f/∂u = [0; M⁻¹ B(q)], and the model's parameters p with ∂f/∂p = [0; -M⁻¹ ∂g/∂p], g = M q̈ + bias - B u
at the stage's q̈ (the generated ``parameter_partials``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .compiled import Params

#: f(t, y) -> dy/dt, and its Jacobian (t, y) -> ∂f/∂y
Rhs = Callable[[float, np.ndarray], np.ndarray]


def rk4_step(f: Rhs, jac: Rhs, t: float, y: np.ndarray, h: float,
             fu: Optional[Rhs] = None) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """One RK4 step of ``rodgen_simulate`` and its derivatives: ``(y₁, ∂y₁/∂y, ∂y₁/∂u)``.

    f, jac : the right-hand side and its Jacobian ∂f/∂y at (t, y).
    fu : ∂f/∂u at (t, y) for a constant input u (None: no input sensitivity, the third entry None).
    """
    n = y.size
    eye = np.eye(n)
    ts = (t, t + 0.5 * h, t + 0.5 * h, t + h)
    scale = (0.5 * h, 0.5 * h, h)
    ks: list[np.ndarray] = []
    dks: list[np.ndarray] = []
    dus: list[np.ndarray] = []
    yi = y
    for i in range(4):
        if i > 0:
            yi = y + scale[i - 1] * ks[-1]
        k = f(ts[i], yi)
        A = jac(ts[i], yi)
        dk = A if i == 0 else A @ (eye + scale[i - 1] * dks[-1])
        ks.append(k)
        dks.append(dk)
        if fu is not None:
            B = fu(ts[i], yi)
            dus.append(B if i == 0 else B + A @ (scale[i - 1] * dus[-1]))
    y1 = y + (h / 6.0) * (ks[0] + 2.0 * ks[1] + 2.0 * ks[2] + ks[3])
    phi = eye + (h / 6.0) * (dks[0] + 2.0 * dks[1] + 2.0 * dks[2] + dks[3])
    du = (h / 6.0) * (dus[0] + 2.0 * dus[1] + 2.0 * dus[2] + dus[3]) if fu is not None else None
    return y1, phi, du


def rk4_grid(t0: float, t_end: float, dt: float) -> np.ndarray:
    """The times at which ``rodgen_simulate``'s RK4 steps end, t0 first: t0 + k dt, the last one t_end
    (a step ending within 1e-9 dt of t_end ends at t_end)."""
    if not (t_end > t0) or not (dt > 0):
        raise ValueError(f"the RK4 grid needs t_end > t0 and dt > 0; got t0 = {t0}, t_end = {t_end}, dt = {dt}")
    times = [t0]
    k = 1
    while times[-1] < t_end:
        t_next = t0 + k * dt
        if t_next > t_end - 1e-9 * dt:
            t_next = t_end
        times.append(t_next)
        k += 1
    return np.array(times)


@dataclass(frozen=True)
class Transition:
    """The state-transition matrix of a simulation.

    t : (K + 1,) the step times, t0 first.
    y : (K + 1, ny) the states at them (as ``simulate`` with RK4 computes them).
    phi : (ny, ny) ∂y(t_end)/∂y(t0).
    du : (ny, nu) ∂y(t_end)/∂u for the constant input u.
    dp : (ny, np) ∂y(t_end)/∂p in the order of the model's ``parameters`` (None without ``parameters=True``).
    """

    t: np.ndarray
    y: np.ndarray
    phi: np.ndarray
    du: np.ndarray
    dp: Optional[np.ndarray] = None


def state_transition(robot: Any, y0: Any, t_end: float, dt: float, u: Any = None, p: Params = None, *,
                     t0: float = 0.0, parameters: bool = False) -> Transition:
    """∂y(t_end)/∂y₀ (and ∂y(t_end)/∂u) of ``robot.simulate(y0, t_end, dt, u=u)`` (RK4, constant input u),
    propagated through the integrator's own stages with the compiled RHS Jacobian (see the module's
    docstring). Models with nq = nv (the RHS Jacobian of free, spherical and planar joints is on the
    tangent space, not d f/d y). ``parameters=True`` adds ∂y(t_end)/∂p (``Transition.dp``); the model must
    be built with ``CodegenOptions(parameter_derivatives=True)``."""
    if robot.nq != robot.nv:
        raise ValueError(f"state_transition: the model {robot.name!r} has a free, spherical or planar joint (nq = "
                         f"{robot.nq}, nv = {robot.nv}); the state-transition matrix needs nq = nv")
    n, nu = robot.nv, robot.nu
    y = np.array(y0, dtype=float).reshape(-1)
    if y.size != 2 * n:
        raise ValueError(f"state_transition: y0 of the model {robot.name!r} has {2 * n} entries, got {y.size}")
    uv = np.zeros(nu) if u is None else np.array(u, dtype=float).reshape(-1)
    if uv.size != nu:
        raise ValueError(f"state_transition: u of the model {robot.name!r} has {nu} entries, got {uv.size}")

    def f(t: float, x: np.ndarray) -> np.ndarray:
        return np.asarray(robot.rhs(t, x, uv, p))

    def jac(t: float, x: np.ndarray) -> np.ndarray:
        return np.asarray(robot.rhs_jacobian(x[:n], x[n:], uv, p, t=t))

    def fu(t: float, x: np.ndarray) -> np.ndarray:
        out = np.zeros((2 * n, nu))
        if nu:
            out[n:] = np.linalg.solve(robot.mass_matrix(x[:n], p), robot.input_map(x[:n], p))
        return out

    npar = robot.np
    if parameters:
        robot.parameter_partials(y[:n], y[n:], np.zeros(n), uv, p)     # a build without them: its TypeError

    def fp(t: float, x: np.ndarray) -> np.ndarray:
        out = np.zeros((2 * n, npar))
        qdd = robot.forward_dynamics(x[:n], x[n:], uv, p, t=t)
        dg = robot.parameter_partials(x[:n], x[n:], qdd, uv, p, t=t)
        out[n:] = -np.linalg.solve(robot.mass_matrix(x[:n], p), dg)
        return out

    def extra(t: float, x: np.ndarray) -> np.ndarray:
        """∂f/∂[u, p] (the columns asked for)."""
        cols = [fu(t, x)] + ([fp(t, x)] if parameters else [])
        return np.hstack(cols)

    width = nu + (npar if parameters else 0)
    times = rk4_grid(t0, t_end, dt)
    ys = [y]
    phi = np.eye(2 * n)
    sens = np.zeros((2 * n, width))
    for k in range(len(times) - 1):
        h = times[k + 1] - times[k]
        y, step, step_e = rk4_step(f, jac, times[k], y, h, extra if width else None)
        phi = step @ phi
        sens = step @ sens + (step_e if step_e is not None else 0.0)
        ys.append(y)
    du, dp = sens[:, :nu], (sens[:, nu:] if parameters else None)
    return Transition(times, np.array(ys), phi, du, dp)
