"""The compiled collocation NLP, bound with ctypes: its functions (for checks) and IPOPT's solve.

No SymPy here: the problem's library (``rodopt_*`` of ``rodgen_collocation.c`` and the generated
routines) is called with the model's table pointer, the parameters and the mesh; every function
evaluates all points in one C call.
"""
from __future__ import annotations

import ctypes
import math
import time
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .problem import METHODS, OptimizeError, ValidProblem

_dp = ctypes.POINTER(ctypes.c_double)
_ip = ctypes.POINTER(ctypes.c_int)
#: IPOPT's bounds beyond which a bound is none (its nlp_lower_bound_inf / nlp_upper_bound_inf)
INF = 1e20

#: IPOPT's ApplicationReturnStatus
STATUS = {
    0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates", 5: "User_Requested_Stop",
    6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded", -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded", -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom", -11: "Invalid_Problem_Definition", -12: "Invalid_Option",
    -13: "Invalid_Number_Detected", -100: "Unrecoverable_Exception", -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory", -199: "Internal_Error",
}


def _ptr(a: np.ndarray) -> Any:
    return a.ctypes.data_as(_dp)


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.rodopt_new.restype = ctypes.c_void_p
    lib.rodopt_new.argtypes = [ctypes.c_void_p, _dp, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                               ctypes.c_int, _ip, _ip, ctypes.c_int, _ip, ctypes.c_int, _ip, ctypes.c_int, _ip, _ip]
    lib.rodopt_contact_forces.restype = ctypes.c_int
    lib.rodopt_contact_forces.argtypes = [ctypes.c_void_p, _dp, _dp]
    lib.rodopt_free.restype = None
    lib.rodopt_free.argtypes = [ctypes.c_void_p]
    lib.rodopt_sizes.restype = None
    lib.rodopt_sizes.argtypes = [ctypes.c_void_p, _ip]
    for fn in ("rodopt_eval_f", "rodopt_eval_grad_f", "rodopt_eval_g", "rodopt_eval_jac"):
        getattr(lib, fn).restype = ctypes.c_int
        getattr(lib, fn).argtypes = [ctypes.c_void_p, _dp, _dp]
    for fn in ("rodopt_jac_structure", "rodopt_hess_structure"):
        getattr(lib, fn).restype = None
        getattr(lib, fn).argtypes = [ctypes.c_void_p, _ip, _ip]
    lib.rodopt_eval_h.restype = ctypes.c_int
    lib.rodopt_eval_h.argtypes = [ctypes.c_void_p, _dp, ctypes.c_double, _dp, _dp]
    lib.rodopt_solve.restype = ctypes.c_int
    lib.rodopt_solve.argtypes = [ctypes.c_void_p, _dp, _dp, _dp, _dp, _dp, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), _ip,
                                 _dp, _dp, _dp, _dp, _dp]
    return lib


class CollocationNLP:
    """A problem's nonlinear program, compiled: variables, constraints, their values and derivatives.

    Variables ``x``: per point (the nodes, and with Hermite–Simpson the interval midpoints between them)
    ``[q, qd, u]``, then the duration if it is free, then the free parameters. Constraints: the collocation
    defects (per interval, 2 nq rows each, one set for trapezoidal and two for Hermite–Simpson), the path
    constraints per point, the periodicity rows, the boundary constraints.
    """

    def __init__(self, problem: ValidProblem, library: Path, *, build_seconds: float = 0.0) -> None:
        self.problem = problem
        self.library = Path(library)
        self.build_seconds = build_seconds
        cm = problem.model
        self._jmodel = cm.jacobian_model()         # keeps the model's library (with rhs_jacobian) loaded
        self._table = self._jmodel.table
        self._lib = _load(self.library)
        self._p = np.ascontiguousarray(problem.p, dtype=float)
        per = np.array([i for i, _ in problem.periodic] or [0], dtype=np.intc)
        T0 = problem.duration[0]
        # a model with contacts: the constrained dynamics with the active blocks held (None: the model's rhs)
        self._active = np.array(problem.active, dtype=np.intc) if problem.nlam else None
        self._start = [np.array(list(rows) or [0], dtype=np.intc)
                       for rows in (problem.start_position_rows, problem.start_velocity_rows, problem.hold_rows,
                                    problem.hold_columns)]
        ctx = self._lib.rodopt_new(ctypes.c_void_p(self._table.address()), _ptr(self._p), problem.nodes,
                                   METHODS[problem.method], int(problem.free_duration), T0,
                                   len(problem.periodic), per.ctypes.data_as(_ip),
                                   None if self._active is None else self._active.ctypes.data_as(_ip),
                                   len(problem.start_position_rows), self._start[0].ctypes.data_as(_ip),
                                   len(problem.start_velocity_rows), self._start[1].ctypes.data_as(_ip),
                                   len(problem.hold_rows), self._start[2].ctypes.data_as(_ip),
                                   self._start[3].ctypes.data_as(_ip))
        if not ctx:
            raise MemoryError("the collocation's workspace could not be allocated")
        self._ctx: Optional[ctypes.c_void_p] = ctypes.c_void_p(ctx)
        sizes = np.zeros(7, dtype=np.intc)
        self._lib.rodopt_sizes(self._ctx, sizes.ctypes.data_as(_ip))
        self.n, self.m, self.nnz, self.points = (int(v) for v in sizes[:4])
        #: nonzeros of the Hessian's lower triangle (0: IPOPT's limited-memory approximation)
        self.nnz_hessian = int(sizes[6])
        self.nz = 2 * cm.nq + cm.nu
        self.nset = 2 if problem.method == "hermite-simpson" else 1
        self.npath = len(problem.path)

    def __del__(self) -> None:
        ctx = getattr(self, "_ctx", None)
        if ctx is not None and ctx.value:
            self._lib.rodopt_free(ctx)
            self._ctx = None

    # -- the NLP's functions, for checks and users ------------------------------------------------------
    def _x(self, x: Any) -> np.ndarray:
        a = np.ascontiguousarray(x, dtype=float)
        if a.shape != (self.n,):
            raise ValueError(f"x has shape {a.shape}; expected ({self.n},)")
        return a

    def _fail(self, what: str) -> OptimizeError:
        sizes = np.zeros(7, dtype=np.intc)
        self._lib.rodopt_sizes(self._ctx, sizes.ctypes.data_as(_ip))
        code = int(sizes[4])
        if code:
            from ..contract import StatusCode
            return OptimizeError(f"{what} failed at this point: the model's status {code}: "
                                 f"{StatusCode.describe(code)}")
        return OptimizeError(f"{what} failed at this point: a value is not finite")

    def contact_forces(self, x: Any) -> np.ndarray:
        """The constraint forces λ at every point, (points, nrows) (0 in the rows of contacts not held), from the
        constrained dynamics at the points of ``x``; OptimizeError for a problem without contacts."""
        if not self.problem.nlam:
            raise OptimizeError("the problem holds no contacts", where="contacts")
        a, out = self._x(x), np.zeros(self.points * self.problem.nlam)
        if not self._lib.rodopt_contact_forces(self._ctx, _ptr(a), _ptr(out)):
            raise self._fail("the contact forces")
        return out.reshape(self.points, self.problem.nlam)

    def objective(self, x: Any) -> float:
        a, out = self._x(x), np.zeros(1)
        if not self._lib.rodopt_eval_f(self._ctx, _ptr(a), _ptr(out)):
            raise self._fail("the objective")
        return float(out[0])

    def gradient(self, x: Any) -> np.ndarray:
        a, out = self._x(x), np.zeros(self.n)
        if not self._lib.rodopt_eval_grad_f(self._ctx, _ptr(a), _ptr(out)):
            raise self._fail("the objective's gradient")
        return out

    def constraints(self, x: Any) -> np.ndarray:
        a, out = self._x(x), np.zeros(self.m)
        if not self._lib.rodopt_eval_g(self._ctx, _ptr(a), _ptr(out)):
            raise self._fail("the constraints")
        return out

    def jacobian_structure(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, columns) of the constraint Jacobian's nonzeros."""
        rows, cols = np.zeros(self.nnz, dtype=np.intc), np.zeros(self.nnz, dtype=np.intc)
        self._lib.rodopt_jac_structure(self._ctx, rows.ctypes.data_as(_ip), cols.ctypes.data_as(_ip))
        return rows, cols

    def jacobian_values(self, x: Any) -> np.ndarray:
        a, out = self._x(x), np.zeros(self.nnz)
        if not self._lib.rodopt_eval_jac(self._ctx, _ptr(a), _ptr(out)):
            raise self._fail("the constraint Jacobian")
        return out

    def jacobian(self, x: Any) -> Any:
        """The constraint Jacobian as a SciPy sparse matrix (m, n)."""
        from scipy.sparse import coo_matrix
        rows, cols = self.jacobian_structure()
        return coo_matrix((self.jacobian_values(x), (rows, cols)), shape=(self.m, self.n)).tocsr()

    def hessian(self, x: Any, sigma: float, lam: Any) -> Any:
        """The exact Hessian of the Lagrangian ``sigma f(x) + lam^T g(x)`` as a symmetric SciPy sparse matrix
        (n, n); OptimizeError for a problem stated with ``hessian="limited-memory"``."""
        from scipy.sparse import coo_matrix
        if not self.nnz_hessian:
            raise OptimizeError("the problem has no exact Hessian (state it with hessian='exact')",
                                where="hessian")
        a, out = self._x(x), np.zeros(self.nnz_hessian)
        lm = np.ascontiguousarray(lam, dtype=float)
        if lm.shape != (self.m,):
            raise ValueError(f"lam has shape {lm.shape}; expected ({self.m},)")
        if not self._lib.rodopt_eval_h(self._ctx, _ptr(a), float(sigma), _ptr(lm), _ptr(out)):
            raise self._fail("the Hessian")
        rows, cols = np.zeros(self.nnz_hessian, dtype=np.intc), np.zeros(self.nnz_hessian, dtype=np.intc)
        self._lib.rodopt_hess_structure(self._ctx, rows.ctypes.data_as(_ip), cols.ctypes.data_as(_ip))
        lower = coo_matrix((out, (rows, cols)), shape=(self.n, self.n)).tocsr()
        return lower + lower.T - coo_matrix((out[rows == cols], (rows[rows == cols], cols[rows == cols])),
                                            shape=(self.n, self.n)).tocsr()

    # -- bounds and guesses -------------------------------------------------------------------------------
    def times(self, duration: float) -> np.ndarray:
        """The points' times for a duration."""
        return np.linspace(0.0, duration, self.points)

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x lower, x upper, g lower, g upper), infinite bounds as ±1e20."""
        pr = self.problem
        lo = np.array([b[0] for b in pr.bounds], dtype=float)
        hi = np.array([b[1] for b in pr.bounds], dtype=float)
        xl = np.tile(lo, self.points)
        xu = np.tile(hi, self.points)
        last = (self.points - 1) * self.nz
        for i, v in pr.initial:
            xl[i] = xu[i] = v
        for i, v in pr.final:
            xl[last + i] = xu[last + i] = v
        if pr.free_duration:
            xl = np.append(xl, pr.duration[0])
            xu = np.append(xu, pr.duration[1])
        xl = np.append(xl, [lo for _, lo, _ in pr.free_parameters])
        xu = np.append(xu, [hi for _, _, hi in pr.free_parameters])
        nd = (pr.nodes - 1) * self.nset * 2 * pr.nq
        gl, gu = np.zeros(self.m), np.zeros(self.m)
        plo = np.array([c[1] for c in pr.path], dtype=float)
        phi = np.array([c[2] for c in pr.path], dtype=float)
        gl[nd:nd + self.points * self.npath] = np.tile(plo, self.points)
        gu[nd:nd + self.points * self.npath] = np.tile(phi, self.points)
        start = nd + self.points * self.npath
        for k, (_, s) in enumerate(pr.periodic):
            gl[start + k] = gu[start + k] = s
        start += len(pr.periodic)
        for k, (_, lo_b, hi_b) in enumerate(pr.boundary):
            gl[start + k], gu[start + k] = lo_b, hi_b
        return (np.clip(xl, -INF, INF), np.clip(xu, -INF, INF), np.clip(gl, -INF, INF), np.clip(gu, -INF, INF))

    def guess(self, previous: Any = None) -> np.ndarray:
        """A starting point: from a previous result or a simulation (interpolated onto the mesh), else the
        states interpolated linearly between the given initial and final values and the inputs zero, each
        moved into its bounds; the free parameters from a previous result that has them, else their values."""
        pr = self.problem
        xl, xu, _, _ = self.bounds()
        T = 0.5 * (pr.duration[0] + pr.duration[1]) if pr.free_duration else pr.duration[0]
        nq, nu = pr.nq, pr.nu
        Z = np.zeros((self.points, self.nz))
        if previous is not None:
            t, q, qd, u, dur = _trajectory(previous, nq, nu)
            if pr.free_duration and dur is not None:
                T = float(np.clip(dur, pr.duration[0], pr.duration[1]))
            s = np.linspace(0.0, 1.0, self.points)
            tt = s * (t[-1] - t[0]) + t[0] if dur is not None else s * T
            data = np.hstack([q, qd, u])
            for c in range(self.nz):
                Z[:, c] = np.interp(tt, t, data[:, c])
        else:
            start, end = dict(pr.initial), dict(pr.final)
            s = np.linspace(0.0, 1.0, self.points)
            for c in range(self.nz):
                a = start.get(c, end.get(c, 0.0))
                b = end.get(c, a)
                Z[:, c] = a + (b - a) * s
        x = Z.ravel()
        if pr.free_duration:
            x = np.append(x, T)
        known = dict(getattr(previous, "parameters", None) or {})
        x = np.append(x, [known.get(pr.parameters[i], pr.p[i]) for i, _, _ in pr.free_parameters])
        return np.clip(x, xl, xu)

    # -- solving ----------------------------------------------------------------------------------------
    def solve(self, x0: Optional[np.ndarray] = None, options: Optional[Mapping[str, Any]] = None) -> Any:
        """Solve with IPOPT from ``x0`` (the exact Hessian where the problem has one, else IPOPT's limited-memory
        approximation); an OptimizationResult."""
        from .result import OptimizationResult
        x = np.array(self.guess() if x0 is None else x0, dtype=float)
        if x.shape != (self.n,):
            raise ValueError(f"x0 has shape {x.shape}; expected ({self.n},)")
        xl, xu, gl, gu = self.bounds()
        x = np.clip(x, xl, xu)
        opts = dict(options or {})
        keys, vals, kinds = [], [], []
        for k, v in opts.items():
            if not isinstance(k, str):
                raise OptimizeError(f"an IPOPT option's name is text, got {k!r}", where="options")
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise OptimizeError(f"expected text or a number, got {v!r}", where=f"options[{k!r}]")
            kinds.append(0 if isinstance(v, str) else 2 if isinstance(v, int) else 1)
            keys.append(k.encode())
            vals.append((v if isinstance(v, str) else repr(v)).encode())
        ck = (ctypes.c_char_p * max(1, len(keys)))(*keys)
        cv = (ctypes.c_char_p * max(1, len(vals)))(*vals)
        ci = np.array(kinds or [0], dtype=np.intc)
        g, lam = np.zeros(self.m), np.zeros(self.m)
        zl, zu, obj = np.zeros(self.n), np.zeros(self.n), np.zeros(1)
        start = time.perf_counter()
        status = self._lib.rodopt_solve(self._ctx, _ptr(x), _ptr(xl), _ptr(xu), _ptr(gl), _ptr(gu), len(keys),
                                        ck, cv, ci.ctypes.data_as(_ip), _ptr(g), _ptr(lam), _ptr(zl), _ptr(zu),
                                        _ptr(obj))
        seconds = time.perf_counter() - start
        if status <= -1000:
            bad = -status - 1001
            what = f"the option {keys[bad].decode()!r} = {vals[bad].decode()!r}" if 0 <= bad < len(keys) else \
                "the problem"
            raise OptimizeError(f"IPOPT refused {what} (unknown option or wrong type)", where="options")
        sizes = np.zeros(7, dtype=np.intc)
        self._lib.rodopt_sizes(self._ctx, sizes.ctypes.data_as(_ip))
        return OptimizationResult.from_solution(self, x, g, lam, zl, zu, float(obj[0]), int(status),
                                                STATUS.get(int(status), f"status {status}"), int(sizes[5]),
                                                seconds)


def _trajectory(previous: Any, nq: int, nu: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                         Optional[float]]:
    """(t, q, qd, u, duration or None) of an OptimizationResult (duration known) or a SimulationResult."""
    from .result import OptimizationResult
    t = np.asarray(previous.t, dtype=float)
    q = np.asarray(previous.q, dtype=float).reshape(len(t), -1)
    qd = np.asarray(previous.qd, dtype=float).reshape(len(t), -1)
    u = np.asarray(previous.u, dtype=float).reshape(len(t), -1) if np.size(previous.u) else np.zeros((len(t), 0))
    if q.shape[1] != nq or qd.shape[1] != nq or u.shape[1] != nu:
        raise OptimizeError(f"the guess has {q.shape[1]} coordinates, {qd.shape[1]} rates and {u.shape[1]} "
                            f"inputs; the problem's model has {nq}, {nq} and {nu}", where="guess")
    if len(t) < 2 or not np.all(np.diff(t) > 0) or not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise OptimizeError("the guess needs at least two increasing, finite samples", where="guess")
    dur = float(previous.duration) if isinstance(previous, OptimizationResult) else None
    return t, q, qd, u, dur if dur is None or math.isfinite(dur) else None


__all__ = ["CollocationNLP", "STATUS"]
