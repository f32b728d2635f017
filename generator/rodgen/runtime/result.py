"""The result of a simulation (or of a prescribed motion): time series and status.

:class:`SimulationResult` is what the compiled integrators return, what
:func:`rodgen.runtime.trajectory.prescribed_forces` can be turned into, and
what :func:`rodgen.plot` and :func:`rodgen.animate` draw.
"""
from __future__ import annotations

import csv
import enum
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


class Status(str, enum.Enum):
    """How a run ended. Anything but ``SUCCESS`` stopped early; the arrays hold what was computed."""

    SUCCESS = "success"
    NONFINITE = "nonfinite"            # the state or its derivative became NaN or infinite
    SINGULAR_MASS = "singular_mass"    # the mass matrix could not be factorised
    STEP_UNDERFLOW = "step_underflow"  # the adaptive step size fell below its minimum
    MAX_STEPS = "max_steps"            # the integrator took the most steps it was allowed
    NONFINITE_INPUT = "nonfinite_input"  # the inputs became NaN or infinite
    INTERRUPTED = "interrupted"        # stopped by the user or a callback
    FAILED = "failed"                  # any other failure (see ``message``)


class Deferred:
    """A result's energies computed on their first use: ``compute()`` gives (kinetic, potential), each (N,).
    A simulation hands one to :class:`SimulationResult` for both (the energy routine over every stored row is
    about 3 % of the 3D biped's 10 s walk, and many runs never read it)."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], tuple[np.ndarray, np.ndarray]]) -> None:
        self.compute = compute


#: the fields a simulation may hand over :class:`Deferred`, in the order its function gives them
ENERGIES = ("kinetic", "potential")


def _per_row(value: Any, n: int) -> np.ndarray:
    """An energy field as its own (n,) float array (a scalar is every row's)."""
    return np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()


@dataclass
class SimulationResult:
    """Time series of a motion.

    Attributes
    ----------
    t : (N,) times.
    q, qd : (N, nq) coordinates and (N, nv) their rates, in the order of ``coordinates`` (and of
        ``velocities`` where a model with free joints has nv != nq).
    u : (N, nu) inputs (joint torques, longitudinal forces) in the order of
        ``inputs``; zeros for an unforced run.
    kinetic, potential : (N,) kinetic and potential energy (NaN where unknown); a simulation's are computed
        on first use (:class:`Deferred`).
    status : a :class:`Status`; ``message`` says when and why a run stopped.
    coordinates, inputs : names of the columns of q and u.
    model : the model's name.
    qdd : (N, nq) accelerations, when known (prescribed motions).
    forces : (N, nq) generalized forces, when known (prescribed motions).
    lam, active, events, phases : hybrid runs (``simulate(contacts=...)``): the force of every
        constraint row (N, nrows), block -> (N,) active codes (0 inactive, 1 sticking, 2 and 3 sliding),
        the located events (dicts: t, kind, block, impulse, energy_loss) and the phases as
        (start time, active block names); None otherwise.
    element_forces : for a model with force elements (compiled runs): element name -> (N, 2), the force
        of the element on its point in the ground frame at every stored time (``sys.contact_forces``);
        None otherwise.
    friction : for a model with dry friction (hybrid runs): block name (``<coordinate>_friction``) ->
        (N,) the friction force or torque on its coordinate (the holding force while it sticks, the
        kinetic force against the motion while it slips; its column of ``lam``); None otherwise.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    coordinates: list[str]
    inputs: list[str]
    status: Status = Status.SUCCESS
    message: str = ""
    model: str = ""
    qdd: Optional[np.ndarray] = None
    forces: Optional[np.ndarray] = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    lam: Optional[np.ndarray] = None
    active: Optional[dict[str, np.ndarray]] = None
    events: Optional[list[dict[str, Any]]] = None
    phases: Optional[list[tuple[float, list[str]]]] = None
    element_forces: Optional[dict[str, np.ndarray]] = None
    friction: Optional[dict[str, np.ndarray]] = None
    #: the names of the columns of qd where they are not the coordinates' rates (free joints: nv != nq)
    velocities: Optional[list[str]] = None

    def __post_init__(self) -> None:
        self.t = np.asarray(self.t, dtype=float)
        n = len(self.t)
        self.q = np.asarray(self.q, dtype=float).reshape(n, -1)
        self.qd = np.asarray(self.qd, dtype=float).reshape(n, -1)
        self.u = np.asarray(self.u, dtype=float).reshape(n, -1) if np.size(self.u) else np.zeros((n, 0))
        for name in ENERGIES:
            value = self.__dict__[f"_{name}"]
            if not isinstance(value, Deferred):
                self.__dict__[f"_{name}"] = _per_row(value, n)
        self.status = Status(self.status)
        nv = len(self.coordinates) if self.velocities is None else len(self.velocities)
        if self.q.shape[1] != len(self.coordinates) or self.qd.shape != (n, nv):
            raise ValueError(f"q has shape {self.q.shape} and qd {self.qd.shape}; expected ({n}, "
                             f"{len(self.coordinates)}) and ({n}, {nv}) for the coordinates "
                             f"{', '.join(self.coordinates)}")
        if self.u.shape[1] != len(self.inputs):
            raise ValueError(f"u has shape {self.u.shape}; expected ({n}, {len(self.inputs)}) for the inputs "
                             f"{', '.join(self.inputs) or '(none)'}")

    def _resolve_energies(self) -> None:
        """Compute the energies still :class:`Deferred` (each function once) and keep them."""
        done: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, name in enumerate(ENERGIES):
            value = self.__dict__[f"_{name}"]
            if isinstance(value, Deferred):
                if id(value) not in done:
                    done[id(value)] = value.compute()
                self.__dict__[f"_{name}"] = _per_row(done[id(value)][k], len(self.t))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a study's workers, copies) with its energies computed: the function does not travel."""
        self._resolve_energies()
        return self.__dict__.copy()

    @property
    def ok(self) -> bool:
        return self.status is Status.SUCCESS

    @property
    def energy(self) -> tuple[np.ndarray, np.ndarray]:
        """(kinetic, potential), each (N,)."""
        return self.kinetic, self.potential

    @property
    def total_energy(self) -> np.ndarray:
        return self.kinetic + self.potential

    def __len__(self) -> int:
        return len(self.t)

    def csv_columns(self) -> list[str]:
        """Column names of :meth:`to_csv`."""
        rates = ([f"{c}_dot" for c in self.coordinates] if self.velocities is None else list(self.velocities))
        return (["t"] + list(self.coordinates) + rates + list(self.inputs)
                + ["kinetic", "potential"]
                + [f"{nm}_{c}" for nm in (self.element_forces or {}) for c in ("fx", "fy")]
                + list(self.friction or {}))

    def to_csv(self, path: PathLike) -> None:
        """Write the result as CSV with a header row.

        Columns, in order: ``t``; one per coordinate (its name); one per
        rate (``<coordinate>_dot``); one per input (its name); ``kinetic``;
        ``potential``; for a model with force elements, two per element
        (``<element>_fx``, ``<element>_fy``); for a model with dry friction, one
        per block (``<coordinate>_friction``: its friction force or torque). SI
        units as in the model; full double precision (``repr`` of each float).
        """
        data = np.column_stack([self.t, self.q, self.qd, self.u, self.kinetic, self.potential]
                               + [f for f in (self.element_forces or {}).values()]
                               + [f for f in (self.friction or {}).values()])
        with open(os.fspath(path), "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(self.csv_columns())
            for row in data:
                w.writerow([repr(float(x)) for x in row])

    @classmethod
    def from_csv(cls, path: PathLike, *, coordinates: Sequence[str], inputs: Sequence[str] = ()) -> "SimulationResult":
        """Read a file written by :meth:`to_csv`."""
        with open(os.fspath(path), newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        header, body = rows[0], np.array(rows[1:], dtype=float).reshape(-1, len(rows[0]))
        col = {name: k for k, name in enumerate(header)}

        def take(names: Sequence[str]) -> np.ndarray:
            return body[:, [col[n] for n in names]] if names else np.zeros((len(body), 0))

        return cls(t=body[:, col["t"]], q=take(coordinates), qd=take([f"{c}_dot" for c in coordinates]),
                   u=take(inputs), kinetic=body[:, col["kinetic"]], potential=body[:, col["potential"]],
                   coordinates=list(coordinates), inputs=list(inputs))


def _energy_field(name: str) -> property:
    key = f"_{name}"

    def get(self: SimulationResult) -> np.ndarray:
        if isinstance(self.__dict__[key], Deferred):
            self._resolve_energies()
        value: np.ndarray = self.__dict__[key]
        return value

    def put(self: SimulationResult, value: Any) -> None:
        self.__dict__[key] = value

    return property(get, put, doc=f"(N,) {name} energy (computed on first use where the run deferred it).")


for _name in ENERGIES:
    setattr(SimulationResult, _name, _energy_field(_name))

__all__ = ["SimulationResult", "Status", "Deferred"]
