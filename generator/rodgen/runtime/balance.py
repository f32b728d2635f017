"""The energy balance of a run: where the change of kinetic + potential energy went.

Along a solution of ``M qdd + h + G + K + D = B u`` the total energy E = T + V
(V: gravity and springs) changes by the power of the inputs minus the power of
the velocity-dependent forces that do not store energy:

    dE/dt = qdᵀ B(q) u − qdᵀ D(q, qd)

(the velocity terms h do no work: qdᵀ h = ½ qdᵀ Ṁ qd, which dT/dt cancels).
D is read from the compiled bias without knowing the model's dampers: the
velocity terms h are even in qd (quadratic) and dampers and friction odd, so

    D(q, qd) = (bias(q, qd) − bias(q, −qd)) / 2.

Integrated over the stored samples (Simpson's rule), the balance

    E(end) − E(start) = input work − dissipated + residual

leaves a residual that is the integration error of the run (and of the
quadrature of the sampled powers): a few orders of magnitude below the other
terms for a good run; a large residual says the step was too long. (The
energy lost in impacts of a hybrid run is reported with its events, not here:
it shows in the residual.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .result import SimulationResult


@dataclass(frozen=True)
class EnergyBalance:
    """Energies of a run in joules: ``start`` and ``end`` of T + V, the ``input_work`` done by the inputs,
    the energy ``dissipated`` by dampers and friction (non-negative for passive elements), and the
    ``residual`` = end − start − input_work + dissipated (the integration error)."""

    start: float
    end: float
    input_work: float
    dissipated: float

    @property
    def change(self) -> float:
        return self.end - self.start

    @property
    def residual(self) -> float:
        return self.change - self.input_work + self.dissipated

    def lines(self) -> list[str]:
        """The balance as lines of text (what ``rodgen simulate`` prints)."""
        scale = max(abs(self.start), abs(self.end), abs(self.input_work), abs(self.dissipated), 1e-300)
        return [f"energy (kinetic + potential): {self.start:.10g} J at the start, {self.end:.10g} J at the end, "
                f"change {self.change:+.6g} J",
                f"  input work     {self.input_work:+.6g} J",
                f"  dissipated     {0.0 - self.dissipated:+.6g} J (dampers, friction)",
                f"  residual       {self.residual:+.3g} J (integration error, {abs(self.residual) / scale:.1e} "
                f"of the largest term)"]


def power(model: Any, q: np.ndarray, qd: np.ndarray, u: np.ndarray, p: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(input power qdᵀ B u, dissipated power qdᵀ D) at stacked states (N,)."""
    q, qd, u = (np.ascontiguousarray(np.atleast_2d(x), dtype=float) for x in (q, qd, u))
    if u.shape[1]:
        B = np.asarray(model.input_map(q, p)).reshape(len(q), q.shape[1], u.shape[1])
        p_in = np.einsum("ni,nij,nj->n", qd, B, u)
    else:
        p_in = np.zeros(len(q))
    forward = np.asarray(model.bias(q, qd, p)).reshape(q.shape)
    backward = np.asarray(model.bias(q, -qd, p)).reshape(q.shape)
    p_diss = np.einsum("ni,ni->n", qd, 0.5 * (forward - backward))
    return p_in, p_diss


def energy_balance(model: Any, result: SimulationResult, p: Any = None) -> EnergyBalance:
    """The energy balance of ``result``, a run of ``model`` (a compiled model, or anything with
    ``input_map`` and ``bias`` taking stacked states) with parameters ``p`` (the run's)."""
    from scipy.integrate import simpson
    t = np.asarray(result.t, dtype=float)
    E = np.asarray(result.kinetic) + np.asarray(result.potential)
    if len(t) == 0:
        return EnergyBalance(float("nan"), float("nan"), 0.0, 0.0)
    if len(t) == 1:
        return EnergyBalance(float(E[0]), float(E[0]), 0.0, 0.0)
    p_in, p_diss = power(model, result.q, result.qd, result.u, p)
    # an event (an impact) stores two samples at the same time: integrate each smooth stretch on its own
    cuts = np.flatnonzero(np.diff(t) <= 0) + 1
    w_in = w_diss = 0.0
    for seg in np.split(np.arange(len(t)), cuts):
        if len(seg) > 1:
            w_in += float(simpson(p_in[seg], x=t[seg]))
            w_diss += float(simpson(p_diss[seg], x=t[seg]))
    return EnergyBalance(float(E[0]), float(E[-1]), w_in, w_diss)


__all__ = ["EnergyBalance", "energy_balance", "power"]
