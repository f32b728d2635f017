"""The solution of a trajectory optimisation: trajectories, multipliers, the solver's statistics."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


@dataclass
class OptimizationResult:
    """A solution of :class:`~rodgen.optimize.Problem`.

    Attributes
    ----------
    t : (P,) times of the collocation points (the nodes, and with Hermite–Simpson the interval midpoints).
    q, qd : (P, nq) coordinates and their rates; u : (P, nu) inputs.
    duration : the phase's duration (a variable of the problem or the fixed value).
    objective : the objective's value.
    status, message : IPOPT's return status (0 solved, 1 solved to an acceptable level, negative: failed) and
        its name; ``success`` is True for 0 and 1.
    iterations : IPOPT's iterations; solve_seconds : the time in IPOPT (all evaluations included);
        build_seconds : deriving, generating and compiling (0 when the build was cached).
    defect_multipliers : (intervals, sets, 2 nq) the multipliers of the collocation defects (the costates,
        scaled by IPOPT's convention); path_multipliers : (P, npath); periodic_multipliers : (nperiodic,);
        boundary_multipliers : (nboundary,).
    bound_multipliers : (lower, upper) of the variables, each (P, nz) (and the duration's last in
        ``duration_multipliers``).
    constraint_violation : the largest violation of a constraint or bound at the solution.
    contact_forces : contact name -> (P, rows) its forces at the points, in its rows' order (planar
        ``[ft, fn]``: along the ground, normal; spatial ``[ft1, ft2, fn]``), for the contacts held; start_multipliers:
        the multipliers of the contacts' gap and velocity rows at the first node.
    x : the NLP's variables (for a warm start: ``problem.solve(guess=result)`` interpolates the trajectories).
    parameters : name -> value of the free parameters at the solution (empty without).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    duration: float
    objective: float
    status: int
    message: str
    iterations: int
    solve_seconds: float
    defect_multipliers: np.ndarray
    path_multipliers: np.ndarray
    periodic_multipliers: np.ndarray
    boundary_multipliers: np.ndarray
    bound_multipliers: tuple[np.ndarray, np.ndarray]
    duration_multipliers: Optional[tuple[float, float]]
    constraint_violation: float
    x: np.ndarray
    coordinates: list[str]
    inputs: list[str]
    method: str
    build_seconds: float = 0.0
    contact_forces: dict[str, np.ndarray] = field(default_factory=dict)
    start_multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    parameters: dict[str, float] = field(default_factory=dict)
    nlp: Any = field(default=None, repr=False, compare=False)

    @property
    def success(self) -> bool:
        """IPOPT solved the problem (to its tolerance or an acceptable level)."""
        return self.status in (0, 1)

    @property
    def node_index(self) -> np.ndarray:
        """Indices of the mesh nodes among the points (every point, or every second with Hermite–Simpson)."""
        step = 2 if self.method == "hermite-simpson" else 1
        return np.arange(0, len(self.t), step)

    @classmethod
    def from_solution(cls, nlp: Any, x: np.ndarray, g: np.ndarray, lam: np.ndarray, zl: np.ndarray,
                      zu: np.ndarray, obj: float, status: int, message: str, iterations: int,
                      seconds: float) -> "OptimizationResult":
        pr = nlp.problem
        nq, nz, P = pr.nq, nlp.nz, nlp.points
        Z = x[:P * nz].reshape(P, nz)
        T = float(x[P * nz]) if pr.free_duration else pr.duration[0]
        nd = (pr.nodes - 1) * nlp.nset * 2 * nq
        npath = nlp.npath
        xl, xu, gl, gu = nlp.bounds()
        viol = float(max(np.max(np.maximum(gl - g, 0.0), initial=0.0), np.max(np.maximum(g - gu, 0.0), initial=0.0),
                         np.max(np.maximum(xl - x, 0.0), initial=0.0), np.max(np.maximum(x - xu, 0.0), initial=0.0)))
        return cls(t=np.linspace(0.0, T, P), q=Z[:, :nq].copy(), qd=Z[:, nq:2 * nq].copy(), u=Z[:, 2 * nq:].copy(),
                   duration=T, objective=obj, status=status, message=message, iterations=iterations,
                   solve_seconds=seconds,
                   defect_multipliers=lam[:nd].reshape(pr.nodes - 1, nlp.nset, 2 * nq).copy(),
                   path_multipliers=lam[nd:nd + P * npath].reshape(P, npath).copy(),
                   periodic_multipliers=lam[nd + P * npath:nd + P * npath + len(pr.periodic)].copy(),
                   boundary_multipliers=lam[nd + P * npath + len(pr.periodic):][:len(pr.boundary)].copy(),
                   start_multipliers=lam[nd + P * npath + len(pr.periodic) + len(pr.boundary):].copy(),
                   contact_forces=_contact_forces(nlp, x),
                   bound_multipliers=(zl[:P * nz].reshape(P, nz).copy(), zu[:P * nz].reshape(P, nz).copy()),
                   duration_multipliers=(float(zl[P * nz]), float(zu[P * nz])) if pr.free_duration else None,
                   parameters={pr.parameters[i]: float(x[len(x) - len(pr.free_parameters) + k])
                               for k, (i, _, _) in enumerate(pr.free_parameters)},
                   constraint_violation=viol, x=x.copy(), coordinates=list(pr.model.coordinates),
                   inputs=list(pr.model.inputs), method=pr.method, build_seconds=nlp.build_seconds, nlp=nlp)

    def to_result(self) -> Any:
        """The solution as a :class:`~rodgen.SimulationResult` (its points, energies from the compiled model),
        so ``rodgen.plot(result)`` and ``rodgen.animate(model, result, "motion.gif")`` draw it."""
        from ..runtime.result import SimulationResult
        pr = self.nlp.problem
        kinetic, potential = pr.model.energy(self.q, self.qd, np.asarray(self._p(), dtype=float))
        return SimulationResult(t=self.t, q=self.q, qd=self.qd, u=self.u, kinetic=kinetic, potential=potential,
                                coordinates=list(self.coordinates), inputs=list(self.inputs),
                                message=f"optimal ({self.message})" if self.success else self.message,
                                model=pr.model.name)

    def _p(self) -> list[float]:
        """The model's parameter values of the solution (the free ones as solved)."""
        pr = self.nlp.problem
        return [self.parameters.get(name, v) for name, v in zip(pr.parameters, pr.p)]

    def inputs_table(self, samples: int = 0) -> Any:
        """The inputs as a :class:`~rodgen.InputTable`, for a simulation: linear between the points, or with
        ``samples`` > 0 and Hermite–Simpson the quadratic through each interval's node, midpoint and node (the
        transcription's own input) sampled ``samples`` times per interval (then linear between the samples)."""
        from ..runtime import InputTable
        if samples <= 0 or self.method != "hermite-simpson":
            return InputTable(self.t, self.u)
        s = np.linspace(0.0, 1.0, int(samples) + 1)[:-1]
        # Lagrange's basis on 0, 1/2, 1
        basis = np.column_stack([2 * (s - 0.5) * (s - 1), -4 * s * (s - 1), 2 * s * (s - 0.5)])
        t, u = [], []
        for k in range(0, len(self.t) - 2, 2):
            t.append(self.t[k] + s * (self.t[k + 2] - self.t[k]))
            u.append(basis @ self.u[k:k + 3])
        t.append(self.t[-1:])
        u.append(self.u[-1:])
        return InputTable(np.concatenate(t), np.vstack(u))

    def simulate(self, dt: Optional[float] = None, **kwargs: Any) -> Any:
        """Simulate the model with the compiled integrator from the first point's state under the inputs
        interpolated linearly between the points (:meth:`inputs_table`), over the duration; a SimulationResult.
        ``dt``: RK4's step (default: a twentieth of the points' spacing); other arguments go to
        ``CompiledModel.simulate``."""
        cm = self.nlp.problem.model
        h = self.t[1] - self.t[0]
        step = float(dt) if dt is not None else h / 20.0
        y0 = np.concatenate([self.q[0], self.qd[0]])
        kwargs.setdefault("p", dict(zip(self.nlp.problem.parameters, self._p())))
        return cm.simulate(y0, self.duration, step, u=self.inputs_table() if cm.nu else None, **kwargs)

    def simulate_check(self, dt: Optional[float] = None) -> float:
        """The largest difference between the states of a simulation (:meth:`simulate`) and the solution's,
        at the points: how well the collocation solved the dynamics."""
        sim = self.simulate(dt)
        y_sim = np.hstack([sim.q, sim.qd])
        y = np.hstack([self.q, self.qd])
        interp = np.column_stack([np.interp(self.t, sim.t, col) for col in y_sim.T])
        return float(np.max(np.abs(interp - y)))


def _contact_forces(nlp: Any, x: np.ndarray) -> dict[str, np.ndarray]:
    """Contact name -> (P, rows) its forces at the points of ``x``, for the contacts the problem holds."""
    pr = nlp.problem
    if not pr.contacts:
        return {}
    lam = nlp.contact_forces(x)
    return {b.name: lam[:, b.row:b.row + b.nrows].copy() for b in pr.model.constraints if b.name in pr.contacts}
