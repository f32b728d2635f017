"""Parameter studies on Dask: ``rodgen.sweep``.

    import rodgen
    df = rodgen.sweep("examples/exo5.yaml", grid={"m_torso": [60, 80, 100], "kp": "100:1000:10"},
                      controller=rodgen.PD(rodgen.Reference.hold(q0), kp=300, kd=30),
                      t_end=2, dt=1e-3, summary=["max_abs:u", "rms:q"])     # a pandas DataFrame
    ds = rodgen.sweep(robot, table={"m_torso": [...], "g": [...]}, t_end=1, dt=1e-3)  # an xarray Dataset

A study is a set of points (a grid: the outer product of a few value lists; a table: rows of values; or
both: every table row with every grid point). A name of a point is

* a parameter of the model (a column of ``p``),
* a coordinate (its initial value) or ``<coordinate>_dot`` (its initial rate),
* an input (a constant input, or the feedforward of a PD controller),
* ``kp`` or ``kd``: the gains of the ``controller`` (a PD or ComputedTorque, one gain for every input
  or coordinate).

The points are cut into chunks of ``chunk`` trajectories; each chunk is one task on a Dask worker, one
``simulate_batch`` (or, when the study varies controller gains, one per distinct gain in the chunk, the
points of a gain kept together). Without ``summary``
the trajectories come back (RK4 only: one time grid) as an xarray Dataset with one dimension per grid
name (its values as coordinates) or ``point`` for a table. With ``summary`` only the summaries travel
and the result is a pandas DataFrame, one row per point (the point's values, ``status``, then the
summaries; a summary with several values per trajectory gives one column per value, ``name[label]``).

Workers and the compiled model
------------------------------
By default the study runs on an embedded ``distributed.LocalCluster`` (worker processes, one per core,
one thread each), started for the call and closed after it. ``scheduler="tcp://host:port"`` connects to
a running scheduler, and a ``distributed.Client`` (or a cluster object) is used as it is.

The model travels as its text (the validated model's mapping, :func:`rodgen.model.dump.to_dict`), with
the content hash of the compiled code once it is known. One task builds or loads it first: a build
error is reported once, before any trajectory runs. Then every worker process loads the library from
the build cache (the folder is shared on one machine or a shared file system; the key is the same as
``rodgen.build``'s, so a cached model loads without SymPy) or, when the cache is not reachable,
builds it from the model text, once per worker process, never per task. A library whose content hash
differs from the client's (another rodgen version on a worker) is an error.

Worker deaths and errors
------------------------
A task whose worker dies (killed, out of memory) is run again on another worker by the scheduler
(``distributed.scheduler.allowed-failures``, 3 by default); the result of every chunk is taken once, by
its index, so no point is lost or counted twice. An error raised in a task (a bad summary, a model that
does not build) is not retried: the first one cancels the study and is raised as it is.

Summaries
---------
``summary`` is a built-in name, a callable, or a list or dict of them. The built-ins are
``STAT:WHAT`` with STAT one of ``max_abs``, ``max``, ``min``, ``mean``, ``rms``, ``final`` and WHAT
``q``, ``qd``, ``u`` (every coordinate or input) or one coordinate, ``<coordinate>_dot`` or input by
name; the rows a failed trajectory did not reach (NaN) are left out. A callable is called on each
chunk's :class:`~rodgen.runtime.batch.BatchResult` on the worker and returns a mapping
``name -> array`` whose first axis is the chunk's trajectories (``res.extra["points"]`` holds the
chunk's point values by name, ``res.extra["index"]`` their flat indices). It must be picklable: a
function of an importable module (importable on the workers too), or a function of ``__main__`` or a
lambda, which ``cloudpickle`` sends by value (as it does for the functions of a module registered with
``cloudpickle.register_pickle_by_value``). A summary that does not load on a worker stops the study
with a SweepError that says so.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import BuildError, RodgenError
from ..model.suggest import did_you_mean
from .control import PD, ComputedTorque

if TYPE_CHECKING:  # pragma: no cover
    from .compiled import CompiledModel

#: Trajectories per task unless ``chunk`` says otherwise.
DEFAULT_CHUNK = 100
#: Statistics of the built-in summaries (``STAT:WHAT``).
STATS = ("max_abs", "max", "min", "mean", "rms", "final")
#: Names of the controller gains a study may vary.
GAINS = ("kp", "kd")


class SweepError(RodgenError, ValueError):
    """A study that cannot run as given: an unknown name, an empty range, a bad summary or output."""


# -- the points of a study ------------------------------------------------------------------------------

def parse_values(name: str, spec: Any) -> np.ndarray:
    """The values of one grid name: a sequence of numbers, ``"start:stop:num"`` (``numpy.linspace``,
    both ends included) or ``"v1,v2,..."``; an empty, non-numeric or non-finite list is a SweepError
    naming ``name``."""
    if isinstance(spec, str):
        text = spec.strip()
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise SweepError(f"grid {name!r}: {spec!r} is not START:STOP:NUM")
            try:
                a, b = float(parts[0]), float(parts[1])
                n = int(parts[2])
            except ValueError:
                raise SweepError(f"grid {name!r}: {spec!r} is not START:STOP:NUM (two numbers and a count)") \
                    from None
            if n < 1:
                raise SweepError(f"grid {name!r}: the range {spec!r} is empty (NUM = {n}; give at least 1)")
            values = np.linspace(a, b, n)
        else:
            items = [s for s in text.split(",") if s.strip()]
            try:
                values = np.array([float(s) for s in items], dtype=float)
            except ValueError:
                raise SweepError(f"grid {name!r}: {spec!r} is not a list of numbers") from None
    else:
        try:
            values = np.asarray(spec, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise SweepError(f"grid {name!r}: the values are not numbers ({spec!r})") from None
    if values.size == 0:
        raise SweepError(f"grid {name!r}: no values (an empty range)")
    if not np.all(np.isfinite(values)):
        raise SweepError(f"grid {name!r}: the values hold inf or NaN ({values.tolist()})")
    return values


@dataclass
class Points:
    """The points of a study, flat (C order over ``dims``).

    dims, shape : the dimensions (``point`` for table rows, then the grid names) and their sizes.
    coords : per dimension, the values along it (for ``point``: the row numbers).
    columns : per name, its value at every point (flat, length ``size``).
    table_names : names that came from the table (coordinates along ``point``).
    """

    dims: list[str]
    shape: tuple[int, ...]
    coords: dict[str, np.ndarray]
    columns: dict[str, np.ndarray]
    table_names: list[str]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1


def make_points(grid: Optional[Mapping[str, Any]], table: Any) -> Points:
    """The points of a grid, a table (a pandas DataFrame or a mapping of equal-length columns) or both."""
    dims: list[str] = []
    shape: list[int] = []
    coords: dict[str, np.ndarray] = {}
    cols: list[tuple[str, np.ndarray]] = []
    table_names: list[str] = []
    if table is not None:
        if hasattr(table, "to_dict") and hasattr(table, "columns"):
            table = {str(c): table[c].to_numpy() for c in table.columns}
        if not isinstance(table, Mapping) or not table:
            raise SweepError("table: expected a pandas DataFrame or a mapping name -> column of values, with at "
                             "least one column")
        n = None
        for name, col in table.items():
            try:
                a = np.asarray(col, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise SweepError(f"table column {name!r}: the values are not numbers") from None
            if a.size == 0:
                raise SweepError(f"table column {name!r}: no values")
            if not np.all(np.isfinite(a)):
                raise SweepError(f"table column {name!r}: the values hold inf or NaN")
            if n is not None and a.size != n:
                raise SweepError(f"table column {name!r} has {a.size} rows; the first column has {n}")
            n = a.size
            cols.append((str(name), a))
            table_names.append(str(name))
        assert n is not None
        dims.append("point")
        shape.append(n)
        coords["point"] = np.arange(n)
    for name, spec in (grid or {}).items():
        name = str(name)
        if name in table_names:
            raise SweepError(f"grid {name!r}: the name is also a table column")
        if name == "point":
            raise SweepError("grid 'point': the name is reserved for the rows of a table")
        values = parse_values(name, spec)
        dims.append(name)
        shape.append(values.size)
        coords[name] = values
    if not dims:
        raise SweepError("a sweep needs a grid or a table of points")
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    columns: dict[str, np.ndarray] = {}
    for name, a in cols:
        columns[name] = a[index[0]]
    for k, name in enumerate(dims):
        if name != "point":
            columns[name] = coords[name][index[k]]
    return Points(dims, tuple(shape), coords, columns, table_names)


@dataclass(frozen=True)
class Names:
    """The names a model offers a study, in the order of its vectors."""

    parameters: tuple[str, ...]
    coordinates: tuple[str, ...]
    inputs: tuple[str, ...]

    def kind(self, name: str, controller: Any) -> tuple[str, int]:
        """(kind, index) of a point name: ``p``, ``y`` (index into [q, qd]), ``u`` or ``gain``."""
        if name in self.parameters:
            return "p", self.parameters.index(name)
        if name in self.coordinates:
            return "y", self.coordinates.index(name)
        if name.endswith("_dot") and name[:-4] in self.coordinates:
            return "y", len(self.coordinates) + self.coordinates.index(name[:-4])
        if name in self.inputs:
            return "u", self.inputs.index(name)
        if name in GAINS:
            if not isinstance(controller, (PD, ComputedTorque)):
                raise SweepError(f"{name!r}: a study of controller gains needs controller=PD(...) or "
                                 f"ComputedTorque(...) (the gains it starts from)")
            return "gain", GAINS.index(name)
        known = list(self.parameters) + list(self.coordinates) + list(self.inputs)
        raise SweepError(f"{name!r} is not a parameter, coordinate (or <coordinate>_dot) or input of the model"
                         f"{did_you_mean(name, known)} (parameters: {', '.join(self.parameters) or 'none'}; "
                         f"coordinates: {', '.join(self.coordinates)}; inputs: {', '.join(self.inputs) or 'none'}"
                         f"; kp, kd with a controller)")


# -- the model on the workers ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelRef:
    """What a worker needs to obtain the compiled model: its text, how it is built, and (once known) the
    library's path and content hash."""

    data: Optional[dict]
    name: str
    token: str
    method: Optional[str] = None
    options: Any = None
    build_dir: Optional[str] = None
    path: Optional[str] = None
    content_hash: Optional[str] = None


_models: dict[str, "CompiledModel"] = {}
_models_guard = threading.Lock()
#: How this process obtained its models: ``"library"`` (the library file the client named) or ``"build"``
#: (``rodgen.build``: found in the cache by its key, or built), one entry per model; read by the tests.
obtained: list[tuple[str, str]] = []
#: Calls of ``rodgen.build`` by :func:`worker_model` in this process (failed ones included); read by the tests.
build_attempts = 0


def _valid(ref: ModelRef) -> Any:
    from ..model.loader import load_dict
    from ..model.valid import valid_model
    assert ref.data is not None
    return valid_model(load_dict(ref.data, source=f"<sweep model {ref.name}>"))


def worker_model(ref: ModelRef) -> "CompiledModel":
    """The compiled model of ``ref`` in this process: loaded or built on the first call, then reused."""
    with _models_guard:
        robot = _models.get(ref.token)
        if robot is not None:
            return robot
        from ..toolchain import build, load_module
        if ref.path is not None and Path(ref.path).is_file():
            try:
                robot = load_module(ref.path)
            except BuildError:  # damaged or changed since the build (checksum): build it again
                robot = None
            how = "library"
            if robot is not None and ref.content_hash is not None and robot.content_hash != ref.content_hash:
                robot = None
        if robot is None:
            global build_attempts
            build_attempts += 1
            if ref.data is None:
                raise BuildError(f"the sweep's model {ref.name!r}: no library at {ref.path} on this worker "
                                 f"and no model text to build it from (pass the model, not only its build)")
            robot = build(_valid(ref), build_dir=ref.build_dir, method=ref.method, options=ref.options,
                          progress=False)
            how = "build"
        if ref.content_hash is not None and robot.content_hash != ref.content_hash:
            raise BuildError(f"the sweep's model {ref.name!r} compiled on this worker has content hash "
                             f"{robot.content_hash[:12]}, the client's {ref.content_hash[:12]}: the worker runs "
                             f"another rodgen or compiler; install the same version everywhere")
        if robot.model is None and ref.data is not None:
            robot.model = _valid(ref)
        _models[ref.token] = robot
        obtained.append((ref.token, how))
        return robot


def prepare(ref: ModelRef) -> dict[str, Any]:
    """Task: obtain the model on one worker; its names, defaults, library path and content hash."""
    robot = worker_model(ref)
    return {"path": str(robot.path), "content_hash": robot.content_hash, "name": robot.name,
            "parameters": dict(robot.parameters), "coordinates": list(robot.coordinates),
            "inputs": list(robot.inputs), "y0": robot.initial_state(), "pid": os.getpid()}


# -- summaries ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Builtin:
    """A built-in summary ``STAT:WHAT`` (see the module's docstring); ``labels`` name the columns of a
    vector summary."""

    stat: str
    what: str
    array: str          # "q", "qd" or "u"
    column: Optional[int]
    labels: tuple[str, ...] = ()
    alias: Optional[str] = None     # the name given in a dict of summaries

    @property
    def name(self) -> str:
        return self.alias or f"{self.stat}_{self.what}"

    @property
    def dim(self) -> str:
        """The dimension of a vector summary's values: ``coordinate`` or ``input``."""
        return "input" if self.array == "u" else "coordinate"

    def __call__(self, res: Any) -> dict[str, np.ndarray]:
        a = np.asarray(getattr(res, self.array), dtype=float)
        if self.column is not None:
            a = a[..., self.column:self.column + 1]
        if res.final_only or self.stat == "final":
            if res.final_only:
                out = a
            else:  # the last row each trajectory reached
                last = np.maximum(np.asarray(res.rows) - 1, 0)
                out = a[np.arange(a.shape[0]), last]
            if self.stat not in ("final",):
                raise SweepError(f"summary {self.stat}:{self.what} needs the stored trajectory; it was run with "
                                 f"store='final'")
        else:
            with np.errstate(all="ignore"), _no_nan_warnings():
                if self.stat == "max_abs":
                    out = np.nanmax(np.abs(a), axis=1)
                elif self.stat == "max":
                    out = np.nanmax(a, axis=1)
                elif self.stat == "min":
                    out = np.nanmin(a, axis=1)
                elif self.stat == "mean":
                    out = np.nanmean(a, axis=1)
                else:
                    out = np.sqrt(np.nanmean(a * a, axis=1))
        if self.column is not None:
            out = out[:, 0]
        return {self.name: out}


@contextlib.contextmanager
def _no_nan_warnings() -> Iterator[None]:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def builtin_summary(spec: str, names: Names) -> Builtin:
    """The built-in summary ``STAT:WHAT`` for a model's names; a SweepError names what is wrong."""
    stat, sep, what = spec.partition(":")
    if not sep or stat not in STATS:
        raise SweepError(f"summary {spec!r}: expected STAT:WHAT with STAT one of {', '.join(STATS)}"
                         f"{did_you_mean(stat, STATS) if sep else ''}, or a callable / module:function")
    if what == "q":
        return Builtin(stat, what, "q", None, names.coordinates)
    if what == "qd":
        return Builtin(stat, what, "qd", None, names.coordinates)
    if what == "u":
        return Builtin(stat, what, "u", None, names.inputs)
    if what in names.coordinates:
        return Builtin(stat, what, "q", names.coordinates.index(what))
    if what.endswith("_dot") and what[:-4] in names.coordinates:
        return Builtin(stat, what, "qd", names.coordinates.index(what[:-4]))
    if what in names.inputs:
        return Builtin(stat, what, "u", names.inputs.index(what))
    known = ["q", "qd", "u"] + list(names.coordinates) + list(names.inputs)
    raise SweepError(f"summary {spec!r}: {what!r} is not q, qd, u, a coordinate (or <coordinate>_dot) or an "
                     f"input of the model{did_you_mean(what, known)} (coordinates: {', '.join(names.coordinates)}"
                     f"; inputs: {', '.join(names.inputs) or 'none'})")


def import_summary(spec: str) -> Callable[..., Any]:
    """``module:function`` imported here (the module must be importable on the workers too)."""
    import importlib
    module, _, attr = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise SweepError(f"summary {spec!r}: neither a built-in STAT:WHAT (STAT one of {', '.join(STATS)}) nor an "
                         f"importable module:function ({exc})") from None
    if not callable(fn):
        raise SweepError(f"summary {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


def _summaries(summary: Any, names: Names) -> list[tuple[Optional[str], Callable[..., Any]]]:
    """(name or None, callable) of each summary; a callable's own names come from its mapping."""
    if summary is None:
        return []
    items: list[tuple[Optional[str], Any]]
    if isinstance(summary, Mapping):
        items = [(str(k), v) for k, v in summary.items()]
    elif isinstance(summary, (str,)) or callable(summary):
        items = [(None, summary)]
    else:
        items = [(None, s) for s in summary]
    out: list[tuple[Optional[str], Callable[..., Any]]] = []
    for name, s in items:
        if isinstance(s, str):
            if s.partition(":")[0] in STATS or ":" not in s:
                out.append((name, dataclasses.replace(builtin_summary(s, names), alias=name)))
            else:
                out.append((name, import_summary(s)))
        elif callable(s):
            out.append((name, s))
        else:
            raise SweepError(f"summary {s!r}: expected STAT:WHAT, module:function or a callable")
    return out


def _importable(module: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# -- one task -------------------------------------------------------------------------------------------

@dataclass
class Chunk:
    """One task: the flat indices of its points and their stacked arguments."""

    number: int
    index: np.ndarray
    p: np.ndarray
    y0: np.ndarray
    u: Any              # (n, nu) inputs, a shared (nu,) row, a CController or None
    #: the controller of each run of consecutive points: (controller, number of points); one run unless the
    #: study varies controller gains and the chunk holds points of several gains
    laws: tuple[tuple[Any, int], ...]
    points: dict[str, np.ndarray]


@dataclass(frozen=True)
class Plan:
    """What every task of a study shares; the summaries travel as ``cloudpickle`` bytes (functions of
    ``__main__``, lambdas and modules registered with ``cloudpickle.register_pickle_by_value`` by value,
    the rest by reference), loaded once per worker process."""

    t_end: float
    dt: Optional[float]
    options: dict[str, Any]
    summaries: bytes
    threads: int


_summary_cache: dict[bytes, Any] = {}


def _load_summaries(blob: bytes) -> tuple[tuple[Optional[str], Callable[..., Any]], ...]:
    """The summaries of a Plan, unpickled once per process; one that does not load (its module is not
    importable on the worker) is a SweepError saying so."""
    key = hashlib.sha256(blob).digest()
    got = _summary_cache.get(key)
    if got is None:
        import pickle
        try:
            got = pickle.loads(blob)
        except Exception as exc:  # noqa: BLE001 - whatever unpickling the user's function raises
            raise SweepError(f"the summary functions cannot be loaded on the worker {os.getpid()} ({exc}): define "
                             f"them in a module the workers can import, or in the script run as __main__") from None
        _summary_cache[key] = got
    return got  # type: ignore[no-any-return]


def run_chunk(ref: ModelRef, plan: Plan, job: Chunk) -> dict[str, Any]:
    """Task: one ``simulate_batch`` of a chunk; its status codes and either the trajectories or the
    summaries (computed here, on the worker)."""
    robot = worker_model(ref)
    summaries = _load_summaries(plan.summaries)
    store = "final" if summaries and plan.options.get("store") == "final" else "all"
    opts = {k: v for k, v in plan.options.items() if k != "store"}
    parts, start = [], 0
    for law, count in job.laws:  # one simulate_batch per controller (per gains) of the chunk
        rows = slice(start, start + count)
        uj = job.u[rows] if isinstance(job.u, np.ndarray) and job.u.ndim == 2 else job.u
        parts.append(robot.simulate_batch(job.y0[rows], plan.t_end, plan.dt, p=job.p[rows], u=uj, controller=law,
                                          store=store, threads=plan.threads, **opts))
        start += count
    res = parts[0] if len(parts) == 1 else _concat(parts)
    res.extra["points"] = job.points
    res.extra["index"] = job.index
    out: dict[str, Any] = {"number": job.number, "index": job.index, "codes": np.asarray(res.codes),
                           "messages": [m for m, ok in zip(res.messages, res.ok) if not ok], "pid": os.getpid()}
    n = len(job.index)
    if summaries:
        values: dict[str, np.ndarray] = {}
        for name, fn in summaries:
            got = fn(res)
            if not isinstance(got, Mapping):
                if name is None:
                    raise SweepError(f"summary {_label(fn)} returned {type(got).__name__}; expected a mapping "
                                     f"name -> array of one row per trajectory (or give it a name: "
                                     f"summary={{'name': fn}})")
                got = {name: got}
            elif name is not None and not isinstance(fn, Builtin):  # a named function: its keys under the name
                got = {name: next(iter(got.values()))} if len(got) == 1 else \
                    {f"{name}_{k}": v for k, v in got.items()}
            for k, v in got.items():
                if str(k) in values:
                    raise SweepError(f"summary {_label(fn)}: {k!r} is given by another summary too; name them "
                                     f"apart (summary={{'name': ...}})")
                a = np.asarray(v)
                if a.ndim == 0 or a.shape[0] != n:
                    raise SweepError(f"summary {_label(fn)}: {k!r} has shape {a.shape}; expected ({n}, ...), one "
                                     f"row per trajectory of the chunk")
                values[str(k)] = a
        out["summary"] = values
    else:
        r = int(np.max(res.rows))  # RK4: every finished trajectory has these rows; the array holds a spare one
        out["t"] = np.asarray(res.t[int(np.argmax(res.rows)), :r])
        out["q"], out["qd"], out["u"] = res.q[:, :r], res.qd[:, :r], res.u[:, :r]
    return out


def _concat(parts: Sequence[Any]) -> Any:
    """One BatchResult of the batches ``parts`` (same options, hence the same rows per trajectory), in order."""
    first = parts[0]
    messages: list[str] = []
    offset = 0
    for part in parts:
        for m in part.messages:
            head, _, rest = m.partition(" stopped at ")
            if rest and head.startswith("trajectory ") and head[11:].isdigit():
                m = f"trajectory {int(head[11:]) + offset} stopped at {rest}"
            messages.append(m)
        offset += len(part)
    arrays = {k: np.concatenate([getattr(p, k) for p in parts])
              for k in ("t", "q", "qd", "u", "rows", "status", "codes", "steps", "evaluations")}
    return dataclasses.replace(first, messages=messages, extra={}, **arrays)


def _label(fn: Any) -> str:
    if isinstance(fn, Builtin):
        return f"{fn.stat}:{fn.what}"
    return getattr(fn, "__qualname__", None) or repr(fn)


# -- the client side ------------------------------------------------------------------------------------

@contextlib.contextmanager
def client_for(scheduler: Any = None, workers: Optional[int] = None) -> Iterator[Any]:
    """A ``distributed.Client``: an embedded LocalCluster of ``workers`` processes (default: one per core)
    for ``scheduler=None``, a connection to ``"tcp://host:port"``, a given Client, or a cluster object."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SweepError("rodgen.sweep needs Dask's distributed scheduler: pip install 'rodgen[sweep]' "
                         "(dask[distributed], xarray, pandas, zarr)") from None
    if scheduler is None:
        n = workers or os.cpu_count() or 1
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            yield client
    elif isinstance(scheduler, Client):
        yield scheduler
    elif isinstance(scheduler, str):
        with Client(scheduler) as client:
            yield client
    elif hasattr(scheduler, "scheduler_address"):
        with Client(scheduler) as client:
            yield client
    else:
        raise SweepError(f"scheduler: expected None (a LocalCluster), 'tcp://host:port', a distributed.Client or "
                         f"a cluster; got {type(scheduler).__name__}")


def _model_ref(model: Any, method: Optional[str], options: Any, build_dir: Any) -> tuple[ModelRef, Any]:
    """(ModelRef, the ValidModel or None) of a model file, Model, ValidModel or CompiledModel."""
    from ..model.core import Model
    from ..model.dump import to_dict
    from ..model.loader import load
    from ..model.valid import ValidModel, valid_model
    from .compiled import CompiledModel
    path = content = None
    if isinstance(model, CompiledModel):
        path, content = str(model.path), model.content_hash
        vm = model.model
        method = method or model.method
    elif isinstance(model, (str, os.PathLike)):
        vm = valid_model(load(model))
    elif isinstance(model, (Model, ValidModel)):
        vm = valid_model(model)
    else:
        raise SweepError(f"model: expected a model file, a rodgen Model or a built model; got "
                         f"{type(model).__name__}")
    data = to_dict(vm) if vm is not None else None
    name = vm.name if vm is not None else model.name
    h = hashlib.sha256(repr((data, method, options, content, path,
                             str(build_dir) if build_dir is not None else None)).encode())
    bd = str(Path(build_dir).resolve()) if build_dir is not None else None
    return ModelRef(data, name, h.hexdigest(), method, options, bd, path, content), vm


def _names_of(vm: Any) -> Optional[Names]:
    if vm is None:
        return None
    return Names(tuple(vm.parameter_values()), tuple(c.name for c in vm.independent_coordinates()),
                 tuple(i.name for i in vm.inputs()))


def sweep(model: Any, grid: Optional[Mapping[str, Any]] = None, *, table: Any = None, t_end: float,
          dt: Optional[float] = None, method: str = "rk4", y0: Any = None,
          initial: Optional[Mapping[str, float]] = None, p: Optional[Mapping[str, float]] = None, u: Any = None,
          controller: Any = None, summary: Any = None, store: str = "all",
          chunk: int = DEFAULT_CHUNK, threads: int = 1, scheduler: Any = None, workers: Optional[int] = None,
          output: Union[str, os.PathLike, None] = None, result: str = "auto", progress: Optional[bool] = None,
          build_dir: Union[str, os.PathLike, None] = None, build_method: Optional[str] = None,
          build_options: Any = None, **options: Any) -> Any:
    """Run a study: one trajectory per point of ``grid`` and/or ``table``, in chunks on Dask workers.

    Parameters
    ----------
    model : a model file, a rodgen Model or ValidModel, or a built model (``rodgen.build``'s result).
    grid : name -> values (a sequence, ``"start:stop:num"`` or ``"v1,v2,..."``); the points are the outer
        product, one dimension per name.
    table : a DataFrame or mapping of columns, one point per row.
    t_end, dt, method : as for ``simulate_batch``; further ``options`` (rtol, atol, store_every, max_steps,
        h_max, ...) too.
    y0 : the initial state (default: the model's).
    initial : coordinate (or ``<coordinate>_dot``) -> value, overrides of y0 shared by every point.
    p : parameter overrides shared by every point.
    u : constant inputs (nu,) shared by every point.
    controller : a PD, ComputedTorque or CController.
    summary : see the module's docstring; ``store="final"`` (with summaries of ``final:`` only) keeps only
        the final states on the workers.
    chunk : trajectories per task (default 100).
    threads : threads of each task's ``simulate_batch``.
    scheduler, workers : see :func:`client_for`.
    output : write the result: ``.zarr`` (an xarray Dataset; trajectories or summaries), ``.csv``
        (summaries), ``.parquet`` (summaries; needs pyarrow).
    result : ``"auto"`` (a Dataset of trajectories, a DataFrame of summaries), ``"dataset"`` or ``"frame"``.
    progress : a progress bar on stderr (default: when stderr is a terminal).
    build_dir, build_method, build_options : where and how the model is built (as ``rodgen.build``).

    Returns
    -------
    An xarray Dataset or a pandas DataFrame (see ``result``); ``attrs`` hold the model's name and
    content hash, and the number of failed trajectories (their status codes are in ``status``, 0 = OK).
    """
    from .progress import Progress
    if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
        raise SweepError(f"chunk must be a positive integer; got {chunk!r}")
    if result not in ("auto", "dataset", "frame"):
        raise SweepError(f"result must be 'auto', 'dataset' or 'frame'; got {result!r}")
    if store not in ("all", "final"):
        raise SweepError(f"store must be 'all' or 'final'; got {store!r}")
    if store == "final" and summary is None:
        raise SweepError("store='final' keeps only final states: give summaries (e.g. 'final:q')")
    if summary is None and str(method).lower() != "rk4":
        raise SweepError(f"trajectories of a sweep share one time grid: use method='rk4', or give summaries for "
                         f"{method!r}")
    if output is not None:
        suffix = Path(output).suffix.lower()
        if suffix not in (".zarr", ".csv", ".parquet"):
            raise SweepError(f"output {os.fspath(output)!r}: write .zarr, .csv or .parquet")
        if summary is None and suffix != ".zarr":
            raise SweepError(f"output {os.fspath(output)!r}: trajectories are written to .zarr; .csv and .parquet "
                             f"hold summaries")
        if suffix == ".parquet" and not _importable("pyarrow"):
            raise SweepError(f"output {os.fspath(output)!r}: Parquet needs pyarrow (pip install pyarrow); or write "
                             f".csv or .zarr")
    points = make_points(grid, table)
    ref, vm = _model_ref(model, build_method, build_options, build_dir)
    names = _names_of(vm)
    all_names = list(points.columns)
    if names is not None:  # before anything is built
        for nm in all_names:
            names.kind(nm, controller)
        _summaries(summary, names)

    with client_for(scheduler, workers) as client:
        info = client.submit(prepare, ref, pure=False).result()
        ref = dataclasses.replace(ref, path=info["path"], content_hash=info["content_hash"])
        names = Names(tuple(info["parameters"]), tuple(info["coordinates"]), tuple(info["inputs"]))
        kinds = {nm: names.kind(nm, controller) for nm in all_names}
        summaries = tuple(_summaries(summary, names))
        import cloudpickle
        plan = Plan(float(t_end), None if dt is None else float(dt), dict(options, method=method, store=store),
                    cloudpickle.dumps(summaries), int(threads))
        jobs = _chunks(points, kinds, names, info, y0, initial, p, u, controller, int(chunk))
        start = time.perf_counter()
        futures = {client.submit(run_chunk, ref, plan, job, pure=False): job for job in jobs}
        results: dict[int, dict[str, Any]] = {}
        from distributed import as_completed
        from distributed.client import FutureCancelledError  # noqa: F401 - raised by result() after cancel
        with Progress(total=points.size, desc=f"sweep {info['name']}", unit="traj", enable=progress) as bar:
            try:
                for fut in as_completed(list(futures)):
                    job = futures[fut]
                    try:
                        out = fut.result()
                    except BaseException as exc:
                        _raise_task(exc, job)
                        raise
                    if job.number not in results:  # each chunk once, whatever ran twice
                        results[job.number] = out
                        bar.update(len(job.index))
            finally:
                pending = [f for f in futures if not f.done()]
                if pending:
                    client.cancel(pending)
        seconds = time.perf_counter() - start
    return _assemble(points, info, results, jobs, summaries, result, output, seconds)


def _raise_task(exc: BaseException, job: Chunk) -> None:
    """A task's exception, with the chunk named when a worker died under it too often."""
    try:
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover
        return
    if isinstance(exc, KilledWorker):
        raise RodgenError(f"sweep: the workers running chunk {job.number} (points {int(job.index[0])}.."
                          f"{int(job.index[-1])}) died too often ({exc}); a trajectory of it may crash its worker "
                          f"or exhaust its memory") from None


def _chunks(points: Points, kinds: dict[str, tuple[str, int]], names: Names, info: dict[str, Any], y0: Any,
            initial: Optional[Mapping[str, float]], p: Optional[Mapping[str, float]], u: Any, controller: Any,
            size: int) -> list[Chunk]:
    """The tasks: the points' stacked arguments, cut into chunks of ``size`` points (sorted by gains, so a
    chunk holds few runs of one gain each)."""
    n = points.size
    nq, nu = len(names.coordinates), len(names.inputs)
    pbase = np.array([info["parameters"][k] for k in names.parameters], dtype=float)
    for k, v in (p or {}).items():
        if k not in names.parameters:
            raise SweepError(f"p: {k!r} is not a parameter of the model{did_you_mean(k, names.parameters)}")
        pbase[names.parameters.index(k)] = float(v)
    ybase = np.asarray(info["y0"] if y0 is None else y0, dtype=float).reshape(-1)
    if ybase.size != 2 * nq:
        raise SweepError(f"y0 has {ybase.size} entries; the model has {2 * nq} state entries [q, qd]")
    ybase = ybase.copy()
    for k, v in (initial or {}).items():
        kind, i = names.kind(k, None) if k not in GAINS else ("gain", 0)
        if kind != "y":
            raise SweepError(f"initial: {k!r} is not a coordinate or <coordinate>_dot of the model (coordinates: "
                             f"{', '.join(names.coordinates)})")
        ybase[i] = float(v)
    P = np.tile(pbase, (n, 1))
    Y = np.tile(ybase, (n, 1))
    from .ccontroller import CController
    U: Optional[np.ndarray] = None
    if any(k == "u" for k, _ in kinds.values()):
        if isinstance(controller, (ComputedTorque, CController)) or isinstance(u, CController):
            raise SweepError("inputs in a study need constant inputs or a PD controller (their feedforward); "
                             "this controller sets all inputs")
        ub = np.zeros(nu) if u is None else np.asarray(u, dtype=float).reshape(-1)
        if ub.size != nu:
            raise SweepError(f"u has {ub.size} entries; the model has {nu} inputs")
        U = np.tile(ub, (n, 1))
    gains = np.zeros((n, 2))
    if isinstance(controller, (PD, ComputedTorque)):
        gains[:] = [np.nan, np.nan]
    for nm, (kind, i) in kinds.items():
        col = points.columns[nm]
        if kind == "p":
            P[:, i] = col
        elif kind == "y":
            Y[:, i] = col
        elif kind == "u":
            assert U is not None
            U[:, i] = col
        else:
            gains[:, i] = col
    if any(k == "gain" for k, _ in kinds.values()):
        # a gain the study leaves alone is NaN (the controller's own); NaN never equals NaN, so group on -inf
        keys, group = np.unique(np.where(np.isnan(gains), -np.inf, gains), axis=0, return_inverse=True)
        group = np.asarray(group).reshape(-1)
        laws = []
        for kp, kd in keys:
            change = {}
            if np.isfinite(kp):
                change["kp"] = float(kp)
            if np.isfinite(kd):
                change["kd"] = float(kd)
            laws.append(dataclasses.replace(controller, **change))
        order = np.argsort(group, kind="stable")  # the points of one gain next to each other
    else:
        group, laws, order = np.zeros(n, dtype=int), [controller], np.arange(n)
    jobs: list[Chunk] = []
    # chunks of `size` points whatever the gains: a chunk runs one simulate_batch per gain it holds
    for s in range(0, n, size):
        ix = order[s:s + size]
        g = group[ix]
        cuts = [0] + [int(i) + 1 for i in np.flatnonzero(g[1:] != g[:-1])] + [len(ix)]
        runs = tuple((laws[int(g[a])], b - a) for a, b in zip(cuts[:-1], cuts[1:]))
        uj = U[ix] if U is not None else u if (u is None or isinstance(u, CController)) else \
            np.asarray(u, dtype=float)
        jobs.append(Chunk(len(jobs), ix, P[ix], Y[ix], uj, runs, {k: v[ix] for k, v in points.columns.items()}))
    return jobs


def _assemble(points: Points, info: dict[str, Any], results: dict[int, dict[str, Any]], jobs: list[Chunk],
              summaries: Sequence[Any], result: str, output: Any, seconds: float) -> Any:
    n = points.size
    seen = np.zeros(n, dtype=int)
    codes = np.zeros(n, dtype=np.int32)
    for job in jobs:
        out = results[job.number]
        seen[out["index"]] += 1
        codes[out["index"]] = out["codes"]
    if not np.all(seen == 1):  # pragma: no cover - every chunk is taken once, by its number
        raise RodgenError(f"sweep: {int(np.sum(seen != 1))} points were not taken exactly once")
    failed = int(np.sum(codes != 0))
    attrs = {"model": info["name"], "content_hash": info["content_hash"], "failed": failed,
             "seconds": round(seconds, 3)}
    if summaries:
        values: dict[str, np.ndarray] = {}
        for job in jobs:
            out = results[job.number]
            for k, v in out["summary"].items():
                if k not in values:
                    values[k] = np.full((n,) + v.shape[1:], np.nan, dtype=float if v.dtype.kind != "c" else v.dtype)
                values[k][out["index"]] = v
        labels = {b.name: (b.dim, b.labels) for _, b in summaries if isinstance(b, Builtin) and b.labels}
        want = "frame" if result == "auto" else result
        frame = _frame(points, codes, values, labels)
        frame.attrs.update(attrs)
        ds = None
        if want == "dataset" or (output is not None and Path(output).suffix.lower() == ".zarr"):
            ds = _dataset(points, codes, values, labels, None, attrs)
        _write(output, frame, ds)
        return frame if want == "frame" else ds
    t = max((out["t"] for out in results.values()), key=len)
    R = t.size
    nq, nu = len(info["coordinates"]), len(info["inputs"])
    arrays = {"q": np.full((n, R, nq), np.nan), "qd": np.full((n, R, nq), np.nan), "u": np.full((n, R, nu), np.nan)}
    for job in jobs:
        out = results[job.number]
        for k in arrays:
            arrays[k][out["index"], :out[k].shape[1]] = out[k]
    ds = _dataset(points, codes, {}, {}, (t, arrays, info), attrs)
    _write(output, None, ds)
    if result == "frame":
        raise SweepError("result='frame' holds summaries; give summary=...")
    return ds


def _frame(points: Points, codes: np.ndarray, values: dict[str, np.ndarray],
           labels: dict[str, tuple[str, tuple[str, ...]]]) -> Any:
    import pandas as pd
    cols: dict[str, Any] = {}
    if "point" in points.dims:
        cols["point"] = np.indices(points.shape).reshape(len(points.shape), -1)[0]
    cols.update(points.columns)
    cols["status"] = codes
    for k, v in values.items():
        if v.ndim == 1:
            cols[k] = v
        else:
            flat = v.reshape(v.shape[0], -1)
            lab = labels[k][1] if k in labels else None
            for j in range(flat.shape[1]):
                cols[f"{k}[{lab[j] if lab and len(lab) == flat.shape[1] else j}]"] = flat[:, j]
    return pd.DataFrame(cols)


def _dataset(points: Points, codes: np.ndarray, values: dict[str, np.ndarray],
             labels: dict[str, tuple[str, tuple[str, ...]]], traj: Any, attrs: dict[str, Any]) -> Any:
    import xarray as xr
    dims, shape = list(points.dims), points.shape
    coords: dict[str, Any] = {d: points.coords[d] for d in dims}
    stride = int(np.prod(shape[1:]))  # the table's rows are the slowest dimension
    for nm in points.table_names:
        coords[nm] = ("point", points.columns[nm][::stride])
    data: dict[str, Any] = {"status": (dims, codes.reshape(shape))}
    for k, v in values.items():
        if k in labels and v.ndim == 2:
            dim, lab = labels[k]
            extra = [dim]
            coords[dim] = _labels(lab)
        else:
            extra = [f"{k}_dim{j}" for j in range(1, v.ndim)]
        data[k] = (dims + extra, v.reshape(shape + v.shape[1:]))
    if traj is not None:
        t, arrays, info = traj
        coords["time"] = t
        coords["coordinate"] = _labels(info["coordinates"])
        coords["input"] = _labels(info["inputs"])
        for k, a in arrays.items():
            data[k] = (dims + ["time", "input" if k == "u" else "coordinate"], a.reshape(shape + a.shape[1:]))
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _labels(names: Sequence[str]) -> np.ndarray:
    """Names as an array of Python strings (Zarr stores them as variable-length strings)."""
    return np.array(list(names), dtype=object)


def _write(output: Any, frame: Any, ds: Any) -> None:
    if output is None:
        return
    path = Path(output)
    suffix = path.suffix.lower()
    if suffix == ".zarr":
        import warnings
        with warnings.catch_warnings():  # zarr 3 notes that consolidated metadata is its own extension
            warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
            ds.to_zarr(str(path), mode="w")
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)


__all__ = ["sweep", "parse_values", "make_points", "SweepError", "Builtin", "client_for", "worker_model",
           "DEFAULT_CHUNK", "STATS"]
