"""CompiledModel: the Python face of a compiled model.

Every array function takes one state (1-D arrays) or a stacked batch (2-D
arrays of N rows), which the runtime's kernels loop over in C without the GIL.
The model's functions are reached through its table (``rodgen_model``), bound
by the runtime extension's ``Model``.
Inputs given as one row are used for every row of a batch (the parameters
``p``, say, or a constant ``u``). Arguments are checked here, once, with
messages that name the model and the expected size; the C code itself does
not check anything.
"""
from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from ..contract import StatusCode
from ..errors import RodgenError
from .callables import input_function, names_text

if TYPE_CHECKING:  # pragma: no cover
    from .batch import BatchResult
    from .result import SimulationResult

ArrayLike = Union[np.ndarray, Sequence[float], float]
Params = Union[ArrayLike, Mapping[str, float], None]
#: no parameter vector: the C takes the model's defaults (a routine's empty p)
_NO_P = np.empty(0)

#: Messages of the status codes of the C (``RODGEN_OK``, ``RODGEN_ERR_...``), from :mod:`rodgen.contract`.
STATUS_MESSAGES = {int(code): code.message for code in StatusCode}


class DynamicsError(RodgenError, ArithmeticError):
    """Forward dynamics failed at a state (non-finite input, singular mass matrix, overflow).

    Attributes: ``status`` (the C status code) and ``row`` (index in a batch, or None).
    """

    def __init__(self, message: str, *, status: int, row: Optional[int]) -> None:
        self.status = status
        self.row = row
        super().__init__(message)


class ConstraintBlock(NamedTuple):
    """One constraint block of a compiled model: its rows are ``row .. row + nrows - 1`` of the constraint
    arrays. ``kind``: ``"contact"`` (rows: tangential position, gap), ``"loop"`` (x, y) or ``"limit"``.
    ``sole``: a flat foot's sole ``(x_min, x_max, y_min, y_max)`` (its centre of pressure's bounds), else None."""

    name: str
    kind: str
    row: int
    nrows: int
    sole: Optional[tuple[float, float, float, float]] = None


def numbers(x: Any, name: str, model: str) -> np.ndarray:
    """``x`` as a float64 array; a non-numeric entry is a TypeError naming the argument."""
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Input {name!r} of the model {model!r} holds an entry that is not a number ({exc}).") \
            from None


def _lists_to_arrays(*xs: Any) -> tuple:
    """The arguments with lists and tuples of numbers as float64 arrays (anything else, and lists that do not
    convert, as they are: the checked path names the problem), then whether any was converted."""
    out = []
    listed = False
    for x in xs:
        if isinstance(x, (list, tuple)):
            try:
                x = np.array(x, dtype=float)
                listed = True
            except (TypeError, ValueError):
                pass
        out.append(x)
    return (*out, listed)



def _exported_names(library: Any, count: str, names: str) -> Optional[list[str]]:
    """The names a model's library exports beside its table (``int <count>(void)`` and ``const char
    **<names>(void)``: the spatial frames, the regressor's parameters), or None when it has no ``count``."""
    count_fn = getattr(library, count, None) if library is not None else None
    if count_fn is None:
        return None
    import ctypes
    count_fn.restype, count_fn.argtypes = ctypes.c_int, []
    names_fn = getattr(library, names)
    names_fn.restype, names_fn.argtypes = ctypes.POINTER(ctypes.c_char_p), []
    table = names_fn()
    return [table[i].decode() for i in range(count_fn())]

class CompiledModel:
    """A compiled model (returned by :func:`rodgen.build`).

    Attributes
    ----------
    name : model name.
    nq, nu, np, npoints : numbers of coordinates, inputs, parameters and marker points.
    nv : number of velocities: the length of qd, qdd and of the generalized forces (M is nv x nv); nq
        except for models with free joints (floating bases: nq = nv + 1 each) or spherical joints (ditto;
        see docs/floating-base.md).
    ny : the length of the state y = [q, qd], nq + nv.
    lie_joints : per free, spherical or planar joint (codes 0, 1, 2), the index of its first coordinate in q
        and of its first velocity in qd; their velocities are not their coordinates' rates.
    velocities : the names of the velocities (qd), in order.
    coordinates, inputs : names, in the order of q and u.
    parameters : dict name -> default value, in the order of p.
    point_names : names of the marker points, in the order of ``points``.
    path : the model's shared library; ``folder`` the build folder with the C sources.
    forward : the forward-dynamics algorithm of the C (``"aba"`` or ``"cholesky"``).

    The state vector is y = [q0..q(nq-1), qd0..qd(nv-1)].
    """

    def __init__(self, model: Any, path: Union[str, Path], runtime: ModuleType) -> None:
        # model: the runtime extension's Model around the table of the model's library
        self._m = model
        self._runtime = runtime
        info = model.info()
        self.name: str = info["name"]
        self.prefix: str = info["prefix"]
        self.nq: int = int(info["nq"])
        self.nv: int = int(info.get("nv", self.nq))
        self.ny: int = int(info.get("ny", self.nq + self.nv))
        self.lie_joints: list[tuple[int, int, int]] = [(int(a), int(b), int(c))
                                                       for a, b, c in info.get("lie_joints", [])]
        self.nu: int = int(info["nu"])
        self.np: int = int(info["np"])
        self.npoints: int = int(info["npoints"])
        self.coordinates: list[str] = list(info["coordinates"])
        self.inputs: list[str] = list(info["inputs"])
        self.velocities: list[str] = self._velocity_names()
        self.parameters: dict[str, float] = dict(zip(info["parameters"], info["parameter_values"]))
        self.point_names: list[str] = list(info["points"])
        self.content_hash: str = info["content_hash"]
        self.version: str = info["version"]
        self.method: str = info["method"]
        self.forward: str = info["forward"]
        #: the routines of the model's table this library holds (CodegenOptions(routines=...) may leave some out)
        self.routines: frozenset[str] = frozenset(k for k, v in info["routines"].items() if v)
        # the table whose rhs_jacobian is called: this library's, or (deferred) a build with the Jacobian
        self._jacobian_table: Any = model if info["routines"]["rhs_jacobian"] else None
        self._jacobian_build: Optional[Callable[[], "CompiledModel"]] = None
        self._jacobian_guard = threading.Lock()
        # active sets of the constrained derivatives -> (the table holding constraint_partials, the mask)
        self._partials: dict[Any, tuple[Any, np.ndarray]] = {}
        self.path = Path(path)
        self.folder = self.path.parent
        #: The ValidModel it was built from (set by ``rodgen.build``; None for ``load_module``): with it,
        #: parameters given to ``simulate(p=...)`` are checked (masses positive, ...), and plots and
        #: animations know the model.
        self.model: Any = None
        self._p0 = np.array(info["parameter_values"], dtype=float).reshape(1, self.np)
        self._p0.setflags(write=False)
        self._q0 = np.array(info["initial_q"], dtype=float)
        self._p_index = {nm: i for i, nm in enumerate(info["parameters"])}
        kinds = runtime.BLOCK_KINDS      # RODGEN_CONTACT ... by code, as the C was compiled (rodgen.contract)
        #: The constraint blocks (contacts, loops, limits) of the model's table, in row order.
        soles = [tuple(float(x) for x in b) for b in info["soles"]]
        self.constraints: list[ConstraintBlock] = [
            ConstraintBlock(str(nm), kinds.get(k, str(k)), int(r), int(n),
                            sole if sole[1] > sole[0] and sole[3] > sole[2] else None)  # type: ignore[arg-type]
            for (nm, k, r, n), sole in zip(info["constraints"], soles)]
        self.nrows: int = int(info["nrows"])
        # active masks of constrained_dynamics by their block names (never handed out)
        self._masks: dict[Any, np.ndarray] = {}
        #: The force elements (point forces, friction laws, compliant contacts), in model order.
        self.force_names: list[str] = list(info.get("forces", []))
        # one state of 1-D float64 arrays: checked and evaluated in the runtime extension, no copies;
        # anything else (or a failed status) returns None and takes the checked path below
        self._one_mass_matrix = model.one_mass_matrix
        self._one_bias = model.one_bias
        self._one_forward_dynamics = model.one_forward_dynamics
        self._one_inverse_dynamics = model.one_inverse_dynamics
        self._one_rhs = model.one_rhs
        #: Spatial models: the names of the frames (link frames ``<link>.joint``, segment ends, named masses
        #: and bodies, markers) of :meth:`frames`, :meth:`points` and :meth:`frame_jacobians`; empty for planar
        #: models.
        self.frame_names: list[str] = []
        self._frames_fn: Any = None
        self._frame_jac_fn: Any = None
        library = getattr(model, "library", None)
        frame_names = _exported_names(library, f"{self.prefix}_nframes", f"{self.prefix}_frame_list")
        if frame_names is not None:
            import ctypes
            self.frame_names = frame_names
            dp = ctypes.POINTER(ctypes.c_double)
            self._frames_fn = getattr(library, f"{self.prefix}_frames")
            self._frame_jac_fn = getattr(library, f"{self.prefix}_frame_jacobians")
            for fn in (self._frames_fn, self._frame_jac_fn):
                fn.restype, fn.argtypes = None, [dp, dp, dp]
        #: The identification regressor's parameters (columns of :meth:`regressor`); empty unless built with
        #: ``CodegenOptions(regressor=True)``.
        self.theta_names: list[str] = []
        self._regressor_fn: Any = None
        theta_names = _exported_names(library, f"{self.prefix}_ntheta", f"{self.prefix}_theta_list")
        if theta_names is not None:
            import ctypes
            self.theta_names = theta_names
            dp = ctypes.POINTER(ctypes.c_double)
            self._regressor_fn = getattr(library, f"{self.prefix}_regressor")
            self._regressor_fn.restype = None
            self._regressor_fn.argtypes = [ctypes.c_double, dp, dp, dp, dp, dp]
        self._sizes = {"q": (self.nq, "coordinates"), "qd": (self.nv, "coordinate rates"),
                       "qdd": (self.nv, "coordinate accelerations"), "u": (self.nu, "inputs"),
                       "p": (self.np, "parameters"), "y": (self.ny, "state entries [q, qd]")}

    def _velocity_names(self) -> list[str]:
        """qd's names: a free, spherical or planar joint's velocities (``<link>_vx ... <link>_wz``), every
        other coordinate's rate ``<name>'``."""
        from ..model.spatial import LIE_JOINTS
        from .liegroups import KINDS
        starts = {iq: kind for kind, iq, _ in self.lie_joints}
        out: list[str] = []
        i = 0
        while i < self.nq:
            if i in starts:
                coords, vels, _ = LIE_JOINTS[KINDS[starts[i]]]
                link = self.coordinates[i][:-len(coords[0]) - 1]
                out += [f"{link}_{s}" for s in vels]
                i += len(coords)
                continue
            out.append(self.coordinates[i] + "'")
            i += 1
        return out

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
        """q ⊕ v dt: the configuration reached from q (nq,) moving with the velocity v (nv,) for dt.

        A free joint moves by the exponential map of SE(3) (``M1 = M0 exp(v dt)``, Pinocchio's
        ``integrate``), its quaternion staying a unit quaternion; a spherical joint by that of SO(3), a planar
        joint by that of SE(2); every other coordinate by ``q + v dt``.
        Rows of q and v (N, nq), (N, nv) give (N, nq)."""
        q2, a = self._rows(q, "q")
        v2, b = self._rows(v, "qd")
        n, batched = self._batch(q=(q2, a), v=(v2, b))
        q2 = np.ascontiguousarray(np.broadcast_to(q2, (n, self.nq)))
        v2 = np.ascontiguousarray(np.broadcast_to(v2, (n, self.nv)))
        out = np.empty((n, self.nq))
        for i in range(n):      # rodgen_integrate (csrc/rodgen_lie.c)
            self._runtime.lie_integrate(self._m, q2[i], v2[i], float(dt), out[i])
        return out if batched else out[0]

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
        """The velocity v (nv,) that takes q0 to q1 in unit time, ``integrate(q0, v) = q1`` (Pinocchio's
        ``difference``: the logarithm of SE(3), SO(3), SE(2) for a free, spherical, planar joint, ``q1 - q0``
        for the other coordinates)."""
        a2, a = self._rows(q0, "q")
        b2, b = self._rows(q1, "q")
        n, batched = self._batch(q0=(a2, a), q1=(b2, b))
        a2 = np.ascontiguousarray(np.broadcast_to(a2, (n, self.nq)))
        b2 = np.ascontiguousarray(np.broadcast_to(b2, (n, self.nq)))
        out = np.empty((n, self.nv))
        for i in range(n):      # rodgen_difference (csrc/rodgen_lie.c)
            self._runtime.lie_difference(self._m, a2[i], b2[i], out[i])
        return out if batched else out[0]

    def check_quaternions(self, q: ArrayLike, what: str = "q") -> None:
        """ValueError naming the coordinates when a quaternion in q (nq,) or (N, nq) is zero."""
        if self.lie_joints:
            from .liegroups import check_quaternions
            check_quaternions(np.asarray(q, dtype=float)[..., :self.nq], self.lie_joints, self.coordinates, what)

    def __repr__(self) -> str:
        return (f"<CompiledModel {self.name!r}: nq={self.nq}, nu={self.nu}, np={self.np}, "
                f"npoints={self.npoints}, {self.path}>")

    @property
    def table(self) -> Any:
        """The runtime extension's ``Model`` bound to this model's table: the batch kernels
        ``<routine>(n, ...)``, the one-state methods ``one_<routine>``, ``info()`` and ``address()`` (the
        ``const rodgen_model *``, for further C of the runtime)."""
        return self._m

    @property
    def runtime(self) -> ModuleType:
        """rodgen's runtime extension (``Model``, ``Simulation`` and the bindings of ``csrc/*.pxi``)."""
        return self._runtime

    @property
    def header(self) -> Path:
        """The generated C header (slot tables of q, u, p, points)."""
        return self.folder / f"{self.prefix}.h"

    @property
    def source(self) -> Path:
        """The generated C source."""
        return self.folder / f"{self.prefix}.c"

    # -- helpers ---------------------------------------------------------------
    def parameter_vector(self, values: Optional[Mapping[str, float]] = None, /, **overrides: float) -> np.ndarray:
        """The default parameter vector (np,), with some entries replaced by name."""
        p = self._p0[0].copy()
        for nm, v in {**(values or {}), **overrides}.items():
            if nm not in self._p_index:
                known = ", ".join(self._p_index) or "none"
                from ..model.suggest import did_you_mean
                raise KeyError(f"the model {self.name!r} has no parameter {nm!r}{did_you_mean(nm, self._p_index)} "
                               f"(parameters: {known})")
            p[self._p_index[nm]] = float(v)
        return p

    def initial_state(self) -> np.ndarray:
        """y0 = [q0, 0]: the initial coordinates of the model file, at rest."""
        return np.concatenate([self._q0, np.zeros(self.nv)])

    def _order(self, name: str) -> str:
        """Which names the entries of input ``name`` follow, for messages."""
        if name in ("q", "qd", "qdd"):
            return f"in the order of .coordinates: {names_text(self.coordinates)}"
        if name == "y":
            return f"[q, qd], q in the order of .coordinates: {names_text(self.coordinates)}"
        if name == "u":
            return f"in the order of .inputs: {names_text(self.inputs)}"
        return f"in the order of .parameters: {names_text(list(self.parameters))}"

    def _rows(self, x: ArrayLike, name: str) -> tuple[np.ndarray, int]:
        """(2-D C-contiguous float64 array, number of rows or -1 for a single 1-D state)."""
        width, what = self._sizes[name]
        a = numbers(x, name, self.name)
        if a.ndim == 1:
            if a.shape[0] != width:
                raise ValueError(f"Input {name!r} has length {a.shape[0]}; the model {self.name!r} expects "
                                 f"{width} {what} ({self._order(name)}).")
            return np.ascontiguousarray(a).reshape(1, width), -1
        if a.ndim == 2:
            if a.shape[1] != width:
                raise ValueError(f"Input {name!r} has shape {a.shape}; the model {self.name!r} expects rows of "
                                 f"{width} {what}, shape (N, {width}) ({self._order(name)}).")
            return np.ascontiguousarray(a), a.shape[0]
        if a.ndim == 0 and width == 1:
            return a.reshape(1, 1), -1
        raise ValueError(f"Input {name!r} has {a.ndim} dimensions; the model {self.name!r} expects a vector of "
                         f"{width} {what} or a stack of them, shape (N, {width}).")

    def _params(self, p: Params) -> tuple[np.ndarray, int]:
        if p is None:
            return self._p0, -1
        if isinstance(p, Mapping):
            return self.parameter_vector(p).reshape(1, self.np), -1
        return self._rows(p, "p")

    def _inputs(self, u: Optional[ArrayLike]) -> tuple[np.ndarray, int]:
        if u is None:
            return np.zeros((1, self.nu)), -1
        return self._rows(u, "u")

    def _state_call(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike], p: Params,
                    t: Union[float, ArrayLike]) -> tuple[int, bool, np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray, np.ndarray]:
        """The C arrays of a call on q, qd, u, p and t (checked in that order), after its number of
        rows and whether it is batched (as :meth:`_batch`)."""
        q2, a = self._rows(q, "q")
        qd2, b = self._rows(qd, "qd")
        u2, c = self._inputs(u)
        p2, d = self._params(p)
        t2, e = self._times(t)
        n, batched = self._batch(q=(q2, a), qd=(qd2, b), u=(u2, c), p=(p2, d), t=(t2, e))
        return n, batched, q2, qd2, u2, p2, t2

    def _batch(self, **arrays: tuple[np.ndarray, int]) -> tuple[int, bool]:
        """Number of rows of a call and whether it is batched; all stacked inputs must agree."""
        stacked = {k: n for k, (_, n) in arrays.items() if n >= 0}
        sizes = sorted(set(stacked.values()))
        if len(sizes) > 1:
            desc = ", ".join(f"{k!r} has {n}" for k, n in stacked.items())
            raise ValueError(f"Stacked inputs must have the same number of rows: {desc}.")
        if sizes:
            return sizes[0], True
        return 1, False

    def _out(self, out: Optional[np.ndarray], shape: tuple[int, ...], name: str = "out") -> np.ndarray:
        if out is None:
            return np.empty(shape)
        if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.float64 \
                or not out.flags.c_contiguous or not out.flags.writeable:
            got = (f"{type(out).__name__}" if not isinstance(out, np.ndarray) else
                   f"shape {out.shape}, dtype {out.dtype}, "
                   f"{'C-contiguous' if out.flags.c_contiguous else 'not C-contiguous'}"
                   f"{'' if out.flags.writeable else ', read-only'}")
            raise ValueError(f"Output {name!r} must be a writable C-contiguous float64 array of shape {shape}; "
                             f"got {got}.")
        return out

    def _check_status(self, status: np.ndarray, what: str, batched: bool) -> None:
        bad = np.flatnonzero(status)
        if bad.size:
            row = int(bad[0])
            code = int(status[row])
            where = f" at row {row} of {status.size}" if batched else ""
            raise DynamicsError(f"{what} of the model {self.name!r} failed{where}: "
                                f"{StatusCode.describe(code)}.", status=code,
                                row=row if batched else None)

    # -- the compiled functions ------------------------------------------------
    def mass_matrix(self, q: ArrayLike, p: Params = None, *, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Mass matrix M(q): (nv, nv), or (N, nv, nv) for q of shape (N, nq)."""
        r = self._one_mass_matrix(q, p, out)     # one state: None for anything else (or a failed state)
        if r is not None:
            return r
        q, p, listed = _lists_to_arrays(q, p)
        if listed:     # lists or tuples, converted once: the one-state path again
            r = self._one_mass_matrix(q, p, out)
            if r is not None:
                return r
        q2, nq_ = self._rows(q, "q")
        p2, np_ = self._params(p)
        n, batched = self._batch(q=(q2, nq_), p=(p2, np_))
        res = self._out(out, (n, self.nv, self.nv) if batched else (self.nv, self.nv))
        self._m.mass_matrix(n, q2, p2, res)
        return res

    def bias(self, q: ArrayLike, qd: ArrayLike, p: Params = None, *,
             out: Optional[np.ndarray] = None, t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """Bias forces h + G + K + D - F (velocity terms, gravity, springs, dampers, force elements), as in
        M qdd + bias = B u; ``t`` is the time of the force elements' expressions (one per row of a batch, or
        one for all)."""
        r = self._one_bias(t, q, qd, p, out)     # one state: None for anything else (or a failed state)
        if r is not None:
            return r
        q, qd, p, listed = _lists_to_arrays(q, qd, p)
        if listed:     # lists or tuples, converted once: the one-state path again
            r = self._one_bias(t, q, qd, p, out)
            if r is not None:
                return r
        return self._vec("bias", (q, "q"), (qd, "qd"), p=p, out=out, width=self.nv, t=t)

    def gravity(self, q: ArrayLike, p: Params = None, *, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Gravity forces G(q) (part of the bias)."""
        return self._vec("gravity", (q, "q"), p=p, out=out, width=self.nv)

    def input_map(self, q: ArrayLike, p: Params = None, *, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Input map B(q): (nv, nu) or (N, nv, nu); the generalized forces of the inputs are B u."""
        q2, nq_ = self._rows(q, "q")
        p2, np_ = self._params(p)
        n, batched = self._batch(q=(q2, nq_), p=(p2, np_))
        res = self._out(out, (n, self.nv, self.nu) if batched else (self.nv, self.nu))
        self._m.input_map(n, q2, p2, res)
        return res

    def forward_dynamics(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None, p: Params = None, *,
                         out: Optional[np.ndarray] = None, check: bool = True,
                         t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """Accelerations qdd = M^-1 (B u - bias): (nv,) or (N, nv). ``u`` defaults to zero; ``t`` (default 0) is
        the time of the force elements' expressions.

        Raises DynamicsError where the state is not finite or M is not positive
        definite; with ``check=False`` those rows hold NaN instead.
        """
        r = self._one_forward_dynamics(t, q, qd, u, p, out)     # one state: None for anything else (or a failed state)
        if r is not None:
            return r
        q, qd, u, p, listed = _lists_to_arrays(q, qd, u, p)
        if listed:     # lists or tuples, converted once: the one-state path again
            r = self._one_forward_dynamics(t, q, qd, u, p, out)
            if r is not None:
                return r
        n, batched, q2, qd2, u2, p2, t2 = self._state_call(q, qd, u, p, t)
        res = self._out(out, (n, self.nv) if batched else (self.nv,))
        status = np.zeros(n, dtype=np.intc)
        self._m.forward_dynamics(n, t2, q2, qd2, u2, p2, res, status)
        if check:
            self._check_status(status, "forward_dynamics", batched)
        return res

    def inverse_dynamics(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, p: Params = None, *,
                         out: Optional[np.ndarray] = None, t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """Generalized forces Q = M qdd + bias that produce ``qdd``: (nv,) or (N, nv), at time ``t`` (of the
        force elements' expressions; default 0).

        Q equals B(q) u for the inputs u that produce qdd (for a fully
        actuated model with square B, u = solve(B, Q)).
        """
        r = self._one_inverse_dynamics(t, q, qd, qdd, p, out)     # one state: None for anything else
        if r is not None:
            return r
        q, qd, qdd, p, listed = _lists_to_arrays(q, qd, qdd, p)
        if listed:     # lists or tuples, converted once: the one-state path again
            r = self._one_inverse_dynamics(t, q, qd, qdd, p, out)
            if r is not None:
                return r
        return self._vec("inverse_dynamics", (q, "q"), (qd, "qd"), (qdd, "qdd"), p=p, out=out, width=self.nv,
                         t=t)

    def parameter_partials(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, u: Optional[ArrayLike] = None,
                           p: Params = None, *, t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """∂(M qdd + bias - B u)/∂p at fixed q, qd, qdd and u (default zero), at time ``t``: (nv, np), or (N,
        nv, np) for stacked inputs, columns in the order of :attr:`parameters`. At the forward dynamics' qdd,
        ∂qdd/∂p = -M⁻¹ times it. Needs a build with ``CodegenOptions(parameter_derivatives=True)``."""
        if not self._m.info()["routines"].get("parameter_partials"):
            raise TypeError(f"{self.name!r} was built without the parameter derivatives: "
                            "rodgen.build(model, codegen=CodegenOptions(parameter_derivatives=True))")
        uu = np.zeros(self.nu) if u is None else u
        res = self._vec("parameter_partials", (q, "q"), (qd, "qd"), (qdd, "qdd"), (uu, "u"), p=p, out=None,
                        width=self.nv * self.np, t=t)
        return res.reshape(res.shape[:-1] + (self.nv, self.np))

    def rhs(self, t: Union[float, ArrayLike], y: ArrayLike, u: Optional[ArrayLike] = None, p: Params = None, *,
            out: Optional[np.ndarray] = None, check: bool = True) -> np.ndarray:
        """dy/dt for y = [q, qd] at time t: (nq + nv,) or (N, nq + nv). ``u`` defaults to zero."""
        r = self._one_rhs(t, y, u, p, out)     # one state: None for anything else (or a failed state)
        if r is not None:
            return r
        y, u, p, listed = _lists_to_arrays(y, u, p)
        if listed:     # lists or tuples, converted once: the one-state path again
            r = self._one_rhs(t, y, u, p, out)
            if r is not None:
                return r
        y2, a = self._rows(y, "y")
        u2, c = self._inputs(u)
        p2, d = self._params(p)
        t2, tn = self._times(t)
        n, batched = self._batch(y=(y2, a), u=(u2, c), p=(p2, d), t=(t2, tn))
        res = self._out(out, (n, self.ny) if batched else (self.ny,))
        status = np.zeros(n, dtype=np.intc)
        self._m.rhs(n, t2, y2, u2, p2, res, status)
        if check:
            self._check_status(status, "rhs", batched)
        return res

    def ode(self, u: Union[ArrayLike, Callable[..., ArrayLike], None] = None,
            p: Params = None) -> Callable[[float, np.ndarray], np.ndarray]:
        """f(t, y) for ``scipy.integrate.solve_ivp``; ``u`` is constant or a function ``u(t, q, qd)``, as in
        :meth:`simulate` (``u(t, y)`` is accepted too: see :mod:`rodgen.runtime.callables`).

        Parameters and a constant ``u`` are checked once, here; ``y`` must be
        a (2 nq,) state (solve_ivp's ``vectorized=True`` is not supported).

        The returned function carries ``f.jac(t, y)``, the exact (2 nq, 2 nq)
        Jacobian of f (see :meth:`rhs_jacobian`), for the implicit methods::

            f = robot.ode(u=u0)
            solve_ivp(f, (0, 10), y0, method="Radau", jac=f.jac)

        With a function ``u`` the Jacobian holds the inputs fixed at
        their value at (t, y): it leaves out du/dy (Newton iterations still converge with it).
        """
        p2, d = self._params(p)
        if d > 1:
            raise ValueError(f"ode() takes one parameter vector; got {d} rows")
        p2 = p2.copy()
        kernel = self._m.rhs
        ny = self.ny

        def status_error(st: np.ndarray, t: float) -> None:
            code = int(st[0])
            raise DynamicsError(f"rhs of the model {self.name!r} failed at t = {t!r}: "
                                f"{StatusCode.describe(code)}.", status=code, row=None)

        nq = self.nq

        def jacobian_at(t: float, y: np.ndarray, u1: np.ndarray) -> np.ndarray:
            if self.lie_joints:
                raise RodgenError(f"the model {self.name!r} has a free, spherical or planar joint: its RHS Jacobian "
                                  f"is on the tangent space (rhs_jacobian), not d f/d y of the ODE in y = [q, qd]; "
                                  f"use an explicit method (RK45, DOP853) or robot.simulate")
            jac_kernel = self._jacobian_kernel()
            y1 = np.ascontiguousarray(y, dtype=float).reshape(-1)
            if y1.shape != (ny,):
                raise ValueError(f"Input 'y' has shape {y1.shape}; the model {self.name!r} expects ({ny},)")
            J = np.empty((ny, ny))
            st = np.zeros(1, dtype=np.intc)
            jac_kernel(1, np.array([float(t)]), y1[:nq], y1[nq:], u1, p2, J, st)
            if st[0]:
                status_error(st, t)
            return J

        inputs_at: Callable[[float, np.ndarray], np.ndarray]
        if callable(u):
            inputs_at = input_function(u, nq=self.nq, inputs=self.inputs, model=self.name)
        else:
            u2, c = self._inputs(u)
            if c > 1:
                raise ValueError(f"ode() takes one input vector or a function u(t, y); got {c} rows")
            u2 = u2.copy()

            def inputs_at(t: float, y1: np.ndarray) -> np.ndarray:
                return u2

        name = self.name

        def f(t: float, y: np.ndarray) -> np.ndarray:
            y1 = np.ascontiguousarray(y, dtype=float)
            if y1.shape != (ny,):
                raise ValueError(f"Input 'y' has shape {y1.shape}; the model {name!r} expects ({ny},)")
            dy = np.empty(ny)
            st = np.zeros(1, dtype=np.intc)
            kernel(1, np.array([float(t)]), y1, inputs_at(t, y1), p2, dy, st)
            if st[0]:
                status_error(st, t)
            return dy

        def jac(t: float, y: np.ndarray) -> np.ndarray:
            y1 = np.ascontiguousarray(y, dtype=float)
            return jacobian_at(t, y1, inputs_at(t, y1))
        f.jac = jac  # type: ignore[attr-defined]
        return f

    @property
    def has_jacobian(self) -> bool:
        """Whether :meth:`rhs_jacobian` (and ``ode().jac``) is available: compiled into this library, or
        deferred by ``rodgen.build`` to its first use (see :meth:`defer_jacobian`)."""
        return self._jacobian_table is not None or self._jacobian_build is not None

    @property
    def jacobian_built(self) -> bool:
        """Whether the Jacobian's compiled code is loaded (False while it is deferred to its first use)."""
        return self._jacobian_table is not None

    def defer_jacobian(self, build: Callable[[], "CompiledModel"]) -> None:
        """Build the Jacobian of the right-hand side on its first use: ``build()`` returns a compiled model
        of the same equations with ``rhs_jacobian`` (``rodgen.build`` passes a build with
        ``CodegenOptions(jacobian=True)``, which then lands in the build cache like any model)."""
        if self._jacobian_table is None:
            self._jacobian_build = build

    def _jacobian_kernel(self) -> Any:
        """The batch kernel ``rhs_jacobian`` (building the deferred Jacobian first); RodgenError without one."""
        table = self._jacobian_table
        if table is not None:
            return table.rhs_jacobian
        with self._jacobian_guard:
            if self._jacobian_table is None:
                if self._jacobian_build is None:
                    raise RodgenError(self._no_jacobian())
                full = self._jacobian_build()
                if not full.jacobian_built or full.nq != self.nq or full.np != self.np or full.nu != self.nu:
                    raise RodgenError(f"the deferred Jacobian of the model {self.name!r} was built without "
                                      f"rhs_jacobian or with other sizes")
                self._jacobian_model = full     # keeps its library loaded
                self._jacobian_table = full.table
                self._jacobian_build = None
            return self._jacobian_table.rhs_jacobian

    def jacobian_model(self) -> "CompiledModel":
        """The compiled model whose library holds ``rhs_jacobian``: this one, or the deferred build of the same
        equations (built now if it is not yet); RodgenError without one. Its files are those an FMU with
        directional derivatives compiles; its ``table.address()`` is the ``const rodgen_model *`` that C
        extensions of the runtime (the collocation of :mod:`rodgen.optimize`) call (keep the model while they
        use it)."""
        self._jacobian_kernel()
        return getattr(self, "_jacobian_model", self)

    def _no_jacobian(self) -> str:
        return (f"the model {self.name!r} was built without the Jacobian of its right-hand side (CodegenOptions("
                f"jacobian=False), or rodgen.build's deferred Jacobian, which it compiles on first use into a second "
                f"library that a library loaded by its path does not know); rebuild with "
                f"rodgen.build(model, codegen=CodegenOptions(jacobian=True))")

    def rhs_jacobian(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None, p: Params = None, *,
                     out: Optional[np.ndarray] = None, check: bool = True,
                     t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """Exact Jacobian of the right-hand side at constant u and time t: d[qd, qdd]/d[q, qd].

        Returns (2 nv, 2 nv), or (N, 2 nv, 2 nv) for stacked inputs; rows are
        the entries of dy = [qd, qdd], columns those of y = [q, qd]. With free, spherical or planar joints
        (``lie_joints``) it is on the tangent space, d[v, qdd]/d[dq, v] with q moved by ``integrate(q,
        dq)`` (as Pinocchio's ``computeABADerivatives``): its first nv columns are the tangent directions,
        not the nq coordinates. Computed in C
        from generated derivatives of M, bias and B and the Cholesky factor of M:
        d qdd/dx = M^-1 (d(B u - bias)/dx - (dM/dx) qdd). Raises DynamicsError
        where forward dynamics fails (``check=False``: NaN rows instead).
        """
        table = self._jacobian_table
        if table is not None:   # one state: the table's one-state path (None for anything else or a failed state)
            r = table.one_rhs_jacobian(t, q, qd, u, p, out)
            if r is not None:
                return r
        kernel = self._jacobian_kernel()
        one = self._jacobian_table.one_rhs_jacobian
        if table is None:       # the deferred Jacobian, built just now
            r = one(t, q, qd, u, p, out)
            if r is not None:
                return r
        q, qd, u, p, listed = _lists_to_arrays(q, qd, u, p)
        if listed:
            r = one(t, q, qd, u, p, out)
            if r is not None:
                return r
        n, batched, q2, qd2, u2, p2, t2 = self._state_call(q, qd, u, p, t)
        ny = 2 * self.nv
        res = self._out(out, (n, ny, ny) if batched else (ny, ny))
        status = np.zeros(n, dtype=np.intc)
        kernel(n, t2, q2, qd2, u2, p2, res, status)
        if check:
            self._check_status(status, "rhs_jacobian", batched)
        return res

    def linearize(self, q0: ArrayLike, qd0: Optional[ArrayLike] = None, u0: Optional[ArrayLike] = None,
                  p: Params = None) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) of the first-order system about (q0, qd0, u0): dy = A dy + B du, y = [q, qd].

        A is the exact :meth:`rhs_jacobian`; B = [0; M^-1 B(q0)] (the inputs enter linearly).
        See :func:`rodgen.runtime.linear.linearize`.
        """
        from .linear import linearize
        return linearize(self, q0, qd0, u0, p)

    def modes(self, q0: Optional[ArrayLike] = None, **kwargs: Any) -> Any:
        """Natural frequencies and mode shapes about the equilibrium q0 (see :func:`rodgen.modes`)."""
        from .linear import modes
        return modes(self, q0, **kwargs)

    def simulate(self, y0: ArrayLike, t_end: float, dt: Optional[float] = None, *, method: str = "rk4",
                 rtol: float = 1e-6, atol: float = 1e-9, u: Any = None, p: Params = None, controller: Any = None,
                 store_every: int = 1, max_steps: Optional[int] = None, t0: float = 0.0,
                 h_max: Optional[float] = None, h_min: float = 0.0,
                 progress: Optional[bool] = None, contacts: Any = None, hold: bool = False,
                 **hybrid: Any) -> "SimulationResult":
        """Integrate in C with RK4 (fixed step ``dt``) or DOPRI5 (adaptive, rtol/atol).

        ``u``: None, a constant (nu,), an InputTable or a callable u(t, q, qd)
        (slow path; u(t, y) is accepted too, see :mod:`rodgen.runtime.callables`); ``controller``: PD or
        ComputedTorque toward a Reference, or a CController. ``hold=True`` (RK4 only): sample-and-hold, the
        input law is evaluated once at the start of each step (and right after each event of the hybrid
        simulation) and its inputs held over the RK4 stages, as a digital controller with period ``dt``.
        See :func:`rodgen.runtime.integrate.simulate` for every argument.
        Returns a SimulationResult (t, q, qd, u, energy, status, message).

        ``contacts`` (the initial active set: constraint block names, or a mapping name -> mode) runs the
        hybrid simulation instead (RK4, located touchdown, lift-off, slip and limit events); a model with
        dry friction with stiction (``friction:`` of a joint or a variable segment) always runs it (its
        coordinates stick and slip as phases; ``contacts`` may then set a block to ``"stick"``,
        ``"slide_plus"`` or ``"slide_minus"``, else it sticks at a zero rate and slips otherwise); its options
        (alpha, beta, event_tol, arm_gap, check_tol, disarmed, on_slip, max_events) go in ``hybrid``. See
        :func:`rodgen.runtime.integrate.simulate_hybrid`; the result also has lam, active, events, phases.
        """
        from .integrate import simulate, simulate_hybrid
        if contacts is None and any(b.kind == "friction" for b in self.constraints):
            # dry friction with stiction is a phase of the hybrid simulation: it runs without contacts=...
            if method != "rk4":
                raise ValueError(f"the model {self.name!r} has dry friction with stiction, which the hybrid "
                                 f"simulation (RK4 with located stick and slip events) runs; use method='rk4' "
                                 f"with a step dt")
            contacts = ()
        if contacts is not None:
            if method != "rk4" or max_steps is not None or h_max is not None or h_min:
                raise ValueError("the hybrid simulation (contacts=...) is RK4 with a fixed step dt; method, "
                                 "max_steps, h_max and h_min do not apply")
            if dt is None:
                raise ValueError("the hybrid simulation (contacts=...) needs the step dt")
            return simulate_hybrid(self, y0, t_end, dt, contacts=contacts, u=u, p=p, controller=controller,
                                   store_every=store_every, t0=t0, hold=hold, **hybrid)
        if hybrid:
            raise TypeError(f"simulate() got unexpected arguments {', '.join(sorted(hybrid))} (hybrid options "
                            f"need contacts=...)")
        return simulate(self, y0, t_end, dt, method=method, rtol=rtol, atol=atol, u=u, p=p,
                        controller=controller, store_every=store_every, max_steps=max_steps, t0=t0, h_max=h_max,
                        h_min=h_min, progress=progress, hold=hold)

    def simulate_batch(self, y0s: ArrayLike, t_end: float, dt: Optional[float] = None, *, method: str = "rk4",
                       rtol: float = 1e-6, atol: float = 1e-9, u: Any = None, p: Any = None,
                       controller: Any = None, store_every: int = 1, store: str = "all",
                       max_steps: Optional[int] = None, max_rows: Optional[int] = None, t0: float = 0.0,
                       h_max: Optional[float] = None, h_min: float = 0.0,
                       threads: Optional[int] = None) -> "BatchResult":
        """N trajectories in one call, in C without the GIL on ``threads`` threads (default: every core).

        ``y0s`` (N, 2 nq), ``p`` (N, np) and constant ``u`` (N, nu) may be stacked or shared (one row);
        the input law is a constant, a PD or ComputedTorque controller or a CController (no Python
        callables). Each trajectory gives the same numbers as :meth:`simulate`, for any thread count.
        ``store="final"`` keeps only the final states. See :func:`rodgen.runtime.batch.simulate_batch`.
        """
        from .batch import simulate_batch
        if any(b.kind == "friction" for b in self.constraints):
            raise ValueError(f"the model {self.name!r} has dry friction with stiction, which only the hybrid "
                             f"simulation runs (simulate() with a step dt); the batch integrators would ignore it")
        return simulate_batch(self, y0s, t_end, dt, method=method, rtol=rtol, atol=atol, u=u, p=p,
                              controller=controller, store_every=store_every, store=store, max_steps=max_steps,
                              max_rows=max_rows, t0=t0, h_max=h_max, h_min=h_min, threads=threads)

    def energy(self, q: ArrayLike, qd: ArrayLike, p: Params = None) -> tuple:
        """(kinetic, potential) energy: two floats, or two (N,) arrays for a batch."""
        e = self._vec("energy", (q, "q"), (qd, "qd"), p=p, out=None, width=2)
        if e.ndim == 1:
            return float(e[0]), float(e[1])
        return e[:, 0].copy(), e[:, 1].copy()

    @property
    def spatial(self) -> bool:
        """True for a spatial (3D) model: points are (3,), and :meth:`frames` and :meth:`frame_jacobians` apply."""
        return self._frames_fn is not None

    def _spatial_rows(self, fn: Any, width: int, q: ArrayLike, p: Params) -> tuple[np.ndarray, bool]:
        """A spatial routine of (q, p) on every row: (N, width) and whether q was a batch."""
        import ctypes
        q2, nq_ = self._rows(q, "q")
        p2, np_ = self._params(p)
        n, batched = self._batch(q=(q2, nq_), p=(p2, np_))
        q2 = np.ascontiguousarray(q2, dtype=float).reshape(-1, self.nq)
        p2 = np.ascontiguousarray(p2, dtype=float).reshape(-1, self.np) if self.np else np.zeros((1, 1))
        out = np.empty((n, width))
        dp = ctypes.POINTER(ctypes.c_double)
        for i in range(n):
            qi = q2[i if q2.shape[0] > 1 else 0]
            pi = p2[i if p2.shape[0] > 1 else 0]
            fn(qi.ctypes.data_as(dp), pi.ctypes.data_as(dp), out[i].ctypes.data_as(dp))
        return out, batched

    def regressor(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, p: Params = None) -> np.ndarray:
        """The identification regressor Y (nq, ntheta) with ``M qdd + h + G = Y theta`` (theta: the
        :attr:`theta_names`; docs/identification.md), or (N, nq, ntheta) for a batch; needs a build with
        ``CodegenOptions(regressor=True)``."""
        import ctypes
        if self._regressor_fn is None:
            raise TypeError(f"{self.name!r} was built without the regressor: "
                            "rodgen.build(model, codegen=CodegenOptions(regressor=True))")
        rows = [self._rows(x, nm) for x, nm in ((q, "q"), (qd, "qd"), (qdd, "qdd"))]
        p2, np_ = self._params(p)
        n, batched = self._batch(q=rows[0], qd=rows[1], qdd=rows[2], p=(p2, np_))
        arrs = [np.ascontiguousarray(a, dtype=float).reshape(-1, w) for (a, _), w in
                zip(rows, (self.nq, self.nv, self.nv))]
        p2 = np.ascontiguousarray(p2, dtype=float).reshape(-1, self.np) if self.np else np.zeros((1, 1))
        k = len(self.theta_names)
        out = np.empty((n, self.nv, k))
        dp = ctypes.POINTER(ctypes.c_double)
        for i in range(n):
            a = [x[i if x.shape[0] > 1 else 0] for x in arrs]
            pi = p2[i if p2.shape[0] > 1 else 0]
            self._regressor_fn(0.0, *(x.ctypes.data_as(dp) for x in a), pi.ctypes.data_as(dp),
                               out[i].ctypes.data_as(dp))
        return out if batched else out[0]

    def _need_spatial(self, what: str) -> None:
        if not self.spatial:
            raise TypeError(f"{what} applies to spatial models; {self.name!r} is planar (use points())")

    def frames(self, q: ArrayLike, p: Params = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Spatial models: name -> (position (3,), rotation (3, 3)) of every frame in the ground frame (the
        rotation's columns are the frame's axes), or ((N, 3), (N, 3, 3)) for a batch of q."""
        self._need_spatial("frames()")
        r, batched = self._spatial_rows(self._frames_fn, 12 * len(self.frame_names), q, p)
        r = r.reshape(r.shape[0], len(self.frame_names), 12)
        out = {}
        for i, nm in enumerate(self.frame_names):
            pos, rot = r[:, i, :3].copy(), r[:, i, 3:].reshape(-1, 3, 3).copy()
            out[nm] = (pos, rot) if batched else (pos[0], rot[0])
        return out

    def frame_jacobians(self, q: ArrayLike, p: Params = None) -> dict[str, np.ndarray]:
        """Spatial models: name -> (6, nv) Jacobian of every frame (rows 0-2: velocity of its origin, rows 3-5:
        its angular velocity, ground frame; times qd), or (N, 6, nv) for a batch of q."""
        self._need_spatial("frame_jacobians()")
        nf = len(self.frame_names)
        r, batched = self._spatial_rows(self._frame_jac_fn, 6 * nf * self.nv, q, p)
        r = r.reshape(r.shape[0], nf, 6, self.nv)
        return {nm: (r[:, i].copy() if batched else r[0, i].copy()) for i, nm in enumerate(self.frame_names)}

    def points(self, q: ArrayLike, p: Params = None) -> dict[str, np.ndarray]:
        """Marker positions: name -> (2,) array [x, y], or (N, 2) for a batch; for a spatial model (3,)
        [x, y, z] or (N, 3), the origins of :meth:`frames`."""
        if self.spatial:
            return {nm: pos for nm, (pos, _) in self.frames(q, p).items()}
        r = self._vec("points", (q, "q"), p=p, out=None, width=2 * self.npoints)
        if r.ndim == 1:
            r = r.reshape(self.npoints, 2)
            return {nm: r[i].copy() for i, nm in enumerate(self.point_names)}
        r = r.reshape(r.shape[0], self.npoints, 2)
        return {nm: r[:, i, :].copy() for i, nm in enumerate(self.point_names)}

    # -- force elements ----------------------------------------------------------
    def element_forces(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None, p: Params = None, *,
                       t: Union[float, ArrayLike] = 0.0) -> np.ndarray:
        """Force of every force element on its point, ground frame: (nforces, d) or (N, nforces, d), d = 2
        in a planar model, 3 in a spatial one (rows in the order of ``force_names``; ``u`` defaults to zero
        and matters for input forces only; ``t``, one time or one per row, for point forces that are
        expressions of the time). A spring-damper's row is the force on its first point."""
        if not self.force_names:
            raise ValueError(f"the model {self.name!r} has no force elements")
        n, batched, q2, qd2, u2, p2, t2 = self._state_call(q, qd, u, p, t)
        k, d = len(self.force_names), int(self._m.fdim)
        res = np.empty((n, d * k))
        self._m.element_forces(n, t2, q2, qd2, u2, p2, res)
        return res.reshape(n, k, d) if batched else res.reshape(k, d)

    def contact_forces(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None, p: Params = None, *,
                       t: Union[float, ArrayLike] = 0.0) -> dict[str, np.ndarray]:
        """Force of each force element on its point, ground frame: name -> (2,) [Fx, Fy] (spatial: (3,)), or
        (N, 2) for a batch (``t`` as in :meth:`element_forces`). For a ground contact that is the ground reaction; for
        friction the drag on the point."""
        f = self.element_forces(q, qd, u, p, t=t)
        return {nm: f[..., i, :].copy() for i, nm in enumerate(self.force_names)}

    # -- constraints, contacts and impacts ------------------------------------
    def _need_constraints(self, what: str) -> None:
        if not self.constraints:
            raise ValueError(f"the model {self.name!r} has no constraint blocks (contacts, loops, limits); "
                             f"{what} needs them")

    def constraint_position(self, q: ArrayLike, p: Params = None) -> np.ndarray:
        """Positions of every constraint row c(q): (nrows,) or (N, nrows) (see ``constraints``)."""
        self._need_constraints("constraint_position")
        return self._vec("constraint_position", (q, "q"), p=p, out=None, width=self.nrows)

    def constraint_jacobian(self, q: ArrayLike, p: Params = None) -> np.ndarray:
        """Jacobian dc/dq of every constraint row: (nrows, nv) or (N, nrows, nv) (with free, spherical or planar
        joints, of the velocities: J qd = dc/dt)."""
        self._need_constraints("constraint_jacobian")
        r = self._vec("constraint_jacobian", (q, "q"), p=p, out=None, width=self.nrows * self.nv)
        return r.reshape(r.shape[:-1] + (self.nrows, self.nv))

    def constraint_bias(self, q: ArrayLike, qd: ArrayLike, p: Params = None) -> np.ndarray:
        """Velocity product J̇ q̇ of every constraint row: (nrows,) or (N, nrows)."""
        self._need_constraints("constraint_bias")
        return self._vec("constraint_bias", (q, "q"), (qd, "qd"), p=p, out=None, width=self.nrows)

    def constraint_friction(self, p: Params = None) -> np.ndarray:
        """Friction coefficient of every block (nconstraints,) (negative: no friction limit)."""
        self._need_constraints("constraint_friction")
        p2, rows = self._params(p)
        if rows > 1:
            raise ValueError("constraint_friction takes one parameter vector")
        res = np.empty(len(self.constraints))
        self._m.constraint_friction(1, p2, res)
        return res

    def kinetic_friction(self, p: Params = None) -> np.ndarray:
        """Kinetic friction limit of every block (nconstraints,): that of a dry-friction block (joint
        torque or length force), 0 for the others (their static limits: :meth:`constraint_friction`)."""
        res = np.zeros(len(self.constraints))
        if any(b.kind == "friction" for b in self.constraints):
            p2, rows = self._params(p)
            if rows > 1:
                raise ValueError("kinetic_friction takes one parameter vector")
            self._m.kinetic_friction(1, p2, res)
        return res

    def friction_forces(self, q: ArrayLike, qd: ArrayLike, p: Params = None) -> np.ndarray:
        """The generalized forces of the dry-friction blocks on a moving coordinate, (nv,) or (N, nv):
        ``-F_k sign(J_r qd) J_r`` summed over the blocks (J_r the block's row, its coordinate), zero at a
        zero rate (where the friction force is whatever holds the coordinate, up to the static limit).
        What a prescribed motion's drive must add to the inverse dynamics is minus this
        (:func:`~rodgen.runtime.trajectory.prescribed_forces` and mixed problems do)."""
        qa = np.asarray(q, dtype=float)
        qda = np.asarray(qd, dtype=float)
        rows = [b.row for b in self.constraints if b.kind == "friction"]
        out = np.zeros(np.broadcast_shapes(qa.shape, qda.shape))
        if not rows:
            return out
        fk = self.kinetic_friction(p)[[i for i, b in enumerate(self.constraints) if b.kind == "friction"]]
        J = self.constraint_jacobian(qa, p)[..., rows, :]                 # (..., k, nv)
        v = np.einsum("...kj,...j->...k", J, qda)
        return -np.einsum("...k,...kj->...j", fk * np.sign(v), J)

    def active_mask(self, active: Union[str, Sequence[str], Mapping[str, str]]) -> np.ndarray:
        """The C active mask (nconstraints,) of int of the named blocks: a name or a list of names (active,
        a contact sticking) or a mapping name -> ``"stick"``, ``"slide_plus"`` or ``"slide_minus"`` (a 2-row
        contact, a dry-friction block) or ``"slide"`` (a 3-row contact; a flat foot, 6 rows, only sticks).
        Loops are always active. Raises ValueError naming an unknown block or a mode it cannot take."""
        codes = self._runtime.ACTIVE_CODES
        mask = np.zeros(len(self.constraints), dtype=np.intc)
        by = {b.name: i for i, b in enumerate(self.constraints)}
        items = active.items() if isinstance(active, Mapping) else \
            [(nm, "stick") for nm in ([active] if isinstance(active, str) else list(active))]
        for nm, how in items:
            if nm not in by:
                raise ValueError(f"the model {self.name!r} has no constraint block {nm!r}; its blocks are "
                                 f"{', '.join(by) or 'none'}")
            if how not in codes:
                raise ValueError(f"constraint block {nm!r}: unknown mode {how!r}; use one of {', '.join(codes)}")
            b = self.constraints[by[nm]]
            if b.kind == "contact" and b.nrows == 6 and how != "stick":
                raise ValueError(f"contact {nm!r} of the model {self.name!r} is a flat foot (6 rows): it sticks "
                                 f"(\"stick\") or is free; it does not slide")
            mask[by[nm]] = codes[how]
        for i, b in enumerate(self.constraints):
            if b.kind == "loop":
                mask[i] = codes["stick"]
        return mask

    def _one(self, x: ArrayLike, name: str) -> np.ndarray:
        a, rows = self._rows(x, name)
        if rows >= 0:
            raise ValueError(f"Input {name!r}: constrained dynamics and impacts take one state, not a batch")
        return np.ascontiguousarray(a.reshape(-1), dtype=float)

    def _one_params(self, p: Params) -> np.ndarray:
        p2, rows = self._params(p)
        if rows >= 0:
            raise ValueError("Input 'p': constrained dynamics and impacts take one parameter vector, not a batch")
        return np.array(p2.reshape(-1), dtype=float)  # a writable copy (the defaults are read-only)

    def _contact_error(self, what: str, code: int, mask: np.ndarray) -> DynamicsError:
        names = [b.name for b, a in zip(self.constraints, mask) if a]
        return DynamicsError(f"{what} of the model {self.name!r} failed with the active blocks "
                             f"{', '.join(names) or 'none'}: {StatusCode.describe(code)}", status=code, row=None)

    def constrained_dynamics(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None,
                             active: Union[str, Sequence[str], Mapping[str, str]] = (), p: Params = None, *,
                             alpha: float = 0.0, beta: float = 0.0, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(qdd (nv,), lam (nrows,)) of M qdd + bias = B u + Jᵀ λ with the ``active`` blocks held (J qdd =
        -J̇ q̇ - 2 alpha J q̇ - beta² (c - c_target); alpha = beta = 0: no drift control). ``lam`` holds every
        row, 0 in those of inactive blocks (contact: [tangential, normal] ground reaction). ``active``: block
        names (loops are always active), or name -> "stick" / "slide_plus" / "slide_minus" (a 2-row contact) /
        "slide" (a 3-row contact: its friction ``-mu f_n v_t / norm(v_t)`` against its tangential velocity,
        not 0). Raises
        DynamicsError with the contract's message (singular constraints, M not positive definite, ...)."""
        self._need_constraints("constrained_dynamics")
        # the path of one state given as arrays (the C call and little else): the mask of a name or a list of
        # names is kept, the arrays are taken as they are when they fit (else None: the checked path below)
        key = active if isinstance(active, str) else tuple(active) if isinstance(active, (tuple, list)) else None
        mask = self._masks.get(key) if key is not None else None
        if mask is None:
            mask = self.active_mask(active)
            if key is not None and len(self._masks) < 256:
                self._masks[key] = mask
        if p is None or not isinstance(p, Mapping):
            r = self._runtime.one_constrained_dynamics(self._m, q, qd, u, p, mask, alpha, beta, t)
            if r is not None:
                if r[0]:
                    raise self._contact_error("constrained_dynamics", r[0], mask)
                return r[1], r[2]
        qv, qdv = self._one(q, "q"), self._one(qd, "qd")
        uv = self._one(u, "u") if u is not None else np.empty(0)
        pv = self._one_params(p)
        qdd, lam = np.empty(self.nv), np.empty(self.nrows)
        code = self._runtime.constrained_dynamics(self._m, qv, qdv, uv, mask, pv, qdd, lam, float(alpha),
                                                  float(beta), 0.0, float(t))
        if code:
            raise self._contact_error("constrained_dynamics", code, mask)
        return qdd, lam

    def impact(self, q: ArrayLike, qd_minus: ArrayLike, active: Union[str, Sequence[str]] = (),
               p: Params = None) -> tuple[np.ndarray, np.ndarray, list[str], float]:
        """Plastic impact onto the ``active`` blocks (the set after the impact, the touching one included):
        M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0, releasing a contact or limit whose impulse would pull.
        Returns (qd_plus (nv,), impulse (nrows,), the active block names after, energy loss >= 0)."""
        self._need_constraints("impact")
        mask = self.active_mask(active)
        qv, qdv = self._one(q, "q"), self._one(qd_minus, "qd")
        pv = self._one_params(p)
        qdp, imp = np.empty(self.nv), np.empty(self.nrows)
        after = np.zeros(len(self.constraints), dtype=np.intc)
        code, loss = self._runtime.impact(self._m, qv, qdv, mask, pv, qdp, imp, after)
        if code:
            raise self._contact_error("impact", code, mask)
        return qdp, imp, [b.name for b, a in zip(self.constraints, after) if a], float(loss)

    def _vec(self, kernel: str, *args: tuple[ArrayLike, str], p: Params, out: Optional[np.ndarray],
             width: int, t: Union[float, ArrayLike, None] = None) -> np.ndarray:
        """A kernel of inputs ``args`` and p (and the time first, for a routine that takes t)."""
        rows = {name: self._rows(x, name) for x, name in args}
        p2, d = self._params(p)
        times = {} if t is None else {"t": self._times(t)}
        n, batched = self._batch(**rows, p=(p2, d), **times)
        res = self._out(out, (n, width) if batched else (width,))
        getattr(self._m, kernel)(n, *[a for a, _ in times.values()], *[a for a, _ in rows.values()], p2, res)
        return res

    def _times(self, t: Union[float, ArrayLike]) -> tuple[np.ndarray, int]:
        """The time of a call as a C-contiguous float64 array: one value (rows -1: used for every row of a
        batch) or one per row."""
        a = numbers(t, "t", self.name)
        if a.ndim > 1:
            raise ValueError(f"Input 't' has shape {a.shape}; the model {self.name!r} expects one time or one per "
                             f"row, shape (N,).")
        a = np.ascontiguousarray(a.reshape(-1))
        return a, (a.shape[0] if a.shape[0] != 1 else -1)

    # ---- derivatives of the constrained dynamics and of the impact map (csrc/rodgen_cderiv.c) ----

    def _partials_table(self, what: str, active: Union[str, Sequence[str]]) -> tuple[Any, np.ndarray]:
        """The table holding ``constraint_partials`` (this library's, or the RHS Jacobian's build, made on
        first use) and the active mask, every held block sticking (kept per list of block names)."""
        key = active if isinstance(active, str) else tuple(active) if isinstance(active, (tuple, list)) else None
        hit = self._partials.get(key) if key is not None else None
        if hit is not None:
            return hit
        self._need_constraints(what)
        if isinstance(active, Mapping):
            sliding = [nm for nm, how in active.items() if how != "stick"]
            if sliding:
                raise ValueError(f"{what}: the blocks {', '.join(map(repr, sliding))} slide; derivatives are "
                                 f"given for sticking blocks only (active as block names)")
        mask = self.active_mask(active)
        self._jacobian_kernel()            # builds the deferred Jacobian's library if needed
        table = self._jacobian_table
        if not table.info()["routines"].get("constraint_partials") and self.nq != self.nv:
            raise ValueError(f"{what}: the model {self.name!r} has free, spherical or planar joints (nq = "
                             f"{self.nq}, nv = {self.nv}) and no derivative of the recursive Newton-Euler "
                             f"algorithm (coupled coordinates, or more pairs of joints on one branch than "
                             f"rodgen.symbolic.rnea_derivatives.MAX_PAIRS), which its constraint partials need")
        if not table.info()["routines"].get("constraint_partials"):
            raise RodgenError(f"{what}: the library of the model {self.name!r} has no constraint_partials (it "
                              f"is generated with the RHS Jacobian); rebuild the model with this rodgen")
        if key is not None and len(self._partials) < 256:
            self._partials[key] = (table, mask)
        return table, mask

    def _one_vector(self, x: ArrayLike, name: str) -> np.ndarray:
        """One state's vector: a contiguous float64 array as it is, anything else through the checked path."""
        if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous:
            return x
        return self._one(x, name)

    def constrained_dynamics_derivatives(self, q: ArrayLike, qd: ArrayLike, u: Optional[ArrayLike] = None,
                                         active: Union[str, Sequence[str]] = (), p: Params = None, *,
                                         t: float = 0.0) -> tuple[np.ndarray, ...]:
        """Derivatives of the constrained dynamics (``constrained_dynamics`` without drift control, alpha =
        beta = 0) with the ``active`` blocks held (block names; loops always; every block sticking):
        ``(dqdd_dq, dqdd_dqd, dqdd_du, dlam_dq, dlam_dqd, dlam_du)``, shapes (nv, nv), (nv, nv), (nv, nu),
        (nrows, nv), (nrows, nv), (nrows, nu); the rows of λ of blocks left out are 0. From the KKT
        system M q̈ + bias = B u + Jᵀ λ, J q̈ + J̇ q̇ = 0 differentiated at fixed active set
        (``rodgen_constrained_derivatives`` of ``csrc/rodgen_cderiv.c``, the partials generated with the
        RHS Jacobian). With free, spherical or planar joints the derivatives by q are on the tangent space
        (along ``integrate(q, dq)``, as ``rhs_jacobian``'s). Raises DynamicsError (singular constraints, M not
        positive definite, ...)."""
        table, mask = self._partials_table("constrained_dynamics_derivatives", active)
        n, r = self.nv, self.nrows
        # the one-state path: arrays as they are, the results in one block (None: the checked path)
        got = self._runtime.one_constrained_derivatives(table, q, qd, u, mask, None if p is None else
                                                        self._one_params(p), float(t))
        if got is not None:
            code, block = got
            if code:
                raise self._contact_error("constrained_dynamics_derivatives", code, mask)
            D = block[n + r:n + r + (n + r) * (2 * n + self.nu)].reshape(n + r, 2 * n + self.nu)
            return (D[:n, :n], D[:n, n:2 * n], D[:n, 2 * n:], D[n:, :n], D[n:, n:2 * n], D[n:, 2 * n:])
        qv, qdv = self._one_vector(q, "q"), self._one_vector(qd, "qd")
        uv = self._one_vector(u, "u") if u is not None else np.zeros(self.nu)
        pv = _NO_P if p is None else self._one_params(p)
        if qv.shape[0] != self.nq or qdv.shape[0] != self.nv or uv.shape[0] != self.nu:
            raise ValueError(f"constrained_dynamics_derivatives: q, qd, u of the model {self.name!r} have "
                             f"{self.nq}, {self.nv}, {self.nu} entries; got {qv.shape[0]}, {qdv.shape[0]}, "
                             f"{uv.shape[0]}")
        n = self.nv
        qdd, lam = np.empty(n), np.empty(self.nrows)
        D = np.empty((n + self.nrows, 2 * n + self.nu))
        code = self._runtime.constrained_derivatives(table, qv, qdv, uv, mask, pv, float(t), qdd, lam, D)
        if code:
            raise self._contact_error("constrained_dynamics_derivatives", code, mask)
        return (D[:n, :n], D[:n, n:2 * n], D[:n, 2 * n:], D[n:, :n], D[n:, n:2 * n], D[n:, 2 * n:])

    def constraint_partials(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, u: Optional[ArrayLike] = None,
                            lam: Optional[ArrayLike] = None, p: Params = None, *,
                            t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Partials of the KKT system g = M qdd + bias - B u - Jᵀ λ and k = J qdd + J̇ qd by [q, qd] at fixed
        qdd, u (default zero) and λ (default zero), one state: ``(dg, dk)``, shapes (nv, 2 nv) and (nrows,
        2 nv) (by q on the tangent space where nq != nv). With u = λ = 0, dg is ∂(M a + bias)/∂[q, qd] at the
        acceleration a = qdd: the derivative of the inverse dynamics. Generated with the RHS Jacobian."""
        table, _ = self._partials_table("constraint_partials", ())
        qv, qdv, av = self._one_vector(q, "q"), self._one_vector(qd, "qd"), self._one_vector(qdd, "qdd")
        uv = self._one_vector(u, "u") if u is not None else np.zeros(self.nu)
        lv = self._one_vector(lam, "lam") if lam is not None else np.zeros(self.nrows)
        pv = _NO_P if p is None else self._one_params(p)
        if (qv.shape[0], qdv.shape[0], av.shape[0], uv.shape[0], lv.shape[0]) != (
                self.nq, self.nv, self.nv, self.nu, self.nrows):
            raise ValueError(f"constraint_partials: q, qd, qdd, u, lam of the model {self.name!r} have {self.nq}, "
                             f"{self.nv}, {self.nv}, {self.nu}, {self.nrows} entries; got {qv.shape[0]}, "
                             f"{qdv.shape[0]}, {av.shape[0]}, {uv.shape[0]}, {lv.shape[0]}")
        dg, dk = np.empty((self.nv, 2 * self.nv)), np.empty((self.nrows, 2 * self.nv))
        if self._runtime.constraint_partials(table, float(t), qv, qdv, av, uv, lv, pv, dg, dk):
            raise RodgenError(f"constraint_partials: the library of the model {self.name!r} has none")
        return dg, dk

    def impact_derivatives(self, q: ArrayLike, qd_minus: ArrayLike, active: Union[str, Sequence[str]] = (),
                           p: Params = None) -> tuple[np.ndarray, ...]:
        """Derivatives of the plastic impact onto the ``active`` blocks (the set after the impact, held as
        given: none released; friction blocks left out), M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0:
        ``(dqd_plus_dq, dqd_plus_dqd_minus, dimpulse_dq, dimpulse_dqd_minus)``, shapes (nv, nv), (nv, nv),
        (nrows, nv), (nrows, nv) (``rodgen_impact_derivatives`` of ``csrc/rodgen_cderiv.c``); by q on the
        tangent space as ``constrained_dynamics_derivatives``."""
        table, mask = self._partials_table("impact_derivatives", active)
        qv, qdv = self._one_vector(q, "q"), self._one_vector(qd_minus, "qd")
        pv = _NO_P if p is None else self._one_params(p)
        if qv.shape[0] != self.nq or qdv.shape[0] != self.nv:
            raise ValueError(f"impact_derivatives: q, qd_minus of the model {self.name!r} have {self.nq}, "
                             f"{self.nv} entries; got {qv.shape[0]}, {qdv.shape[0]}")
        n = self.nv
        qdp, imp = np.empty(n), np.empty(self.nrows)
        D = np.empty((n + self.nrows, 2 * n))
        code = self._runtime.impact_derivatives(table, qv, qdv, mask, pv, qdp, imp, D)
        if code:
            raise self._contact_error("impact_derivatives", code, mask)
        return (D[:n, :n], D[:n, n:], D[n:, :n], D[n:, n:])
