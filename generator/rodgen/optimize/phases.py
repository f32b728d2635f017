"""Several phases of collocation joined by impact maps: a sequence of contact modes, each with its own mesh,
duration and contacts held (a :class:`~.problem.Problem` each), continuity or a plastic impact between
consecutive phases, and periodicity up to a relabelling from the last phase to the first.

    from rodgen import optimize
    stance = optimize.Problem(model, nodes=21, duration=(0.3, 1.5), contacts=["foot_a"], objective="tau**2")
    gait = optimize.MultiPhase([stance], periodic=optimize.Periodic(
        touchdown=["foot_b"], relabel={"th_a": "th_b", "th_b": "th_a"}, shift={"x": 0.0}))
    result = gait.solve()

Every phase is compiled as a one-phase problem (its defects, path constraints, cones and boundary rows in C,
its exact Jacobian); the links are rows of their own, their Jacobian exact from the compiled model's
``impact`` and ``impact_derivatives`` (q̇⁺ and the impulse) and ``constraint_position`` /
``constraint_jacobian`` (the touching contact's gap). The second derivatives of the impact map are not
generated: the multi-phase problem is solved with IPOPT's limited-memory Hessian (CasADi's IPOPT, its
callbacks in Python over the phases' C evaluations).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .build import casadi_module
from .problem import OptimizeError, Problem, ValidProblem, rate_name


@dataclass
class Transition:
    """What joins a phase to the next one.

    touchdown : the model's contacts that touch the ground at the end of the phase before (empty: the states
        are continuous). With touchdown, q⁺ = q⁻ and q̇⁺ = ``impact(q⁻, q̇⁻, active=touchdown + keep)``, the
        touching contacts' gaps are 0 at the phase's end and their normal impulses are >= 0.
    keep : contacts held through the impact besides the touching ones (the others leave the ground).
    """

    touchdown: Sequence[str] = ()
    keep: Sequence[str] = ()


@dataclass
class Periodic(Transition):
    """The map from the last phase's end to the first phase's start: an impact (or continuity), then the
    relabelling ``relabel`` (coordinate of the first phase's start -> coordinate of the last phase's end it
    takes the value of; their rates follow; a coordinate not named keeps its own) and the forward ``shift``
    (coordinate -> its advance over the cycle: the relabelled end = the start + shift, as ``Problem.shift``)."""

    relabel: Mapping[str, str] = field(default_factory=dict)
    shift: Mapping[str, float] = field(default_factory=dict)


@dataclass
class MultiPhase:
    """A multi-phase problem: ``phases`` (one :class:`Problem` each, all on the same model, their objectives
    added), ``transitions`` (one per pair of consecutive phases; None or missing: continuity) and an optional
    ``periodic`` map from the last phase to the first.

    ``input_rate`` : a weight w (or input name -> weight) of a penalty on the inputs' rates added to the
    objective: per phase, w Σ (u_{i+1} - u_i)² / (t_{i+1} - t_i) over consecutive points (the integral of
    w u̇², by differences), which keeps the optimal inputs from alternating between a mesh's points."""

    phases: Sequence[Problem]
    transitions: Sequence[Optional[Transition]] = ()
    periodic: Optional[Periodic] = None
    input_rate: Any = 0.0

    def check(self) -> "ValidMultiPhase":
        return check_multiphase(self)

    def compile(self, build_dir: Any = None) -> "MultiPhaseNLP":
        return MultiPhaseNLP(self.check(), build_dir=build_dir)

    def solve(self, guess: Any = None, *, options: Optional[Mapping[str, Any]] = None,
              build_dir: Any = None) -> "MultiPhaseResult":
        """Compile every phase and solve with IPOPT (limited-memory Hessian); ``guess``: None, a previous
        :class:`MultiPhaseResult` (on any meshes: a coarse solution refined), or a list of one guess per phase
        (a previous result, a SimulationResult, or an x vector of the phase)."""
        nlp = self.compile(build_dir)
        return nlp.solve(nlp.guess(guess), options=options)


@dataclass(frozen=True)
class Link:
    """A checked transition: the phases it joins, the impact's active blocks (empty: continuity), the touching
    contacts' gap rows, the permutation of the states and the shift."""

    before: int
    after: int
    active: tuple[str, ...]
    gap_rows: tuple[int, ...]
    #: rows c . impulse >= 0: the touching contacts' normal impulses and their friction cones (planar
    #: mu Ln -+ Lt; spatial the inscribed pyramid mu Ln -+ Lt1, mu Ln -+ Lt2)
    impulse_rows: tuple[tuple[float, ...], ...]
    perm: tuple[int, ...]                 # start state i of `after` takes end state perm[i] of `before`
    shift: tuple[float, ...]              # per state of `after`
    where: str


@dataclass(frozen=True)
class ValidMultiPhase:
    phases: tuple[ValidProblem, ...]
    links: tuple[Link, ...]
    input_rate: tuple[float, ...] = ()       # per input: the weight of its rate's penalty (empty: none)


def _contacts_of(cm: Any) -> dict[str, Any]:
    return {b.name: b for b in getattr(cm, "constraints", ())}


def _names(items: Any, where: str, known: Mapping[str, Any]) -> tuple[str, ...]:
    from .problem import _suggest
    if isinstance(items, str) or not hasattr(items, "__iter__"):
        raise OptimizeError(f"expected a list of contact names, got {items!r}", where=where)
    out = []
    for k, name in enumerate(items):
        if not isinstance(name, str) or name not in known:
            raise OptimizeError(f"unknown contact {name!r}{_suggest(str(name), list(known))}; the model's contacts: "
                                f"{', '.join(known) or 'none'}", where=f"{where}[{k}]")
        out.append(name)
    return tuple(out)


def _interval_at(vp: ValidProblem, i: int, end: bool) -> tuple[float, float]:
    """The values state ``i`` may take at the phase's first (end False) or last node: fixed or its bounds."""
    fixed = dict(vp.final if end else vp.initial)
    if i in fixed:
        return fixed[i], fixed[i]
    return vp.bounds[i]


def check_multiphase(mp: MultiPhase) -> ValidMultiPhase:
    """Check a :class:`MultiPhase`; OptimizeError naming the phase, the transition or the relabelling."""
    if isinstance(mp.phases, Problem) or not mp.phases:
        raise OptimizeError("expected a non-empty list of phases (one Problem each)", where="phases")
    valid = []
    for k, ph in enumerate(mp.phases):
        if not isinstance(ph, Problem):
            raise OptimizeError(f"expected a Problem, got {type(ph).__name__}", where=f"phases[{k}]")
        try:
            valid.append(ph.check())
        except OptimizeError as exc:
            raise OptimizeError(str(exc), where=f"phases[{k}]") from None
    cm = valid[0].model
    for k, vp in enumerate(valid):
        if vp.model is not cm:
            raise OptimizeError("every phase is on the same compiled model as phases[0]", where=f"phases[{k}].model")
        if vp.hessian != "limited-memory":
            raise OptimizeError("the impact map's second derivatives are not generated: a multi-phase problem is "
                                "solved with IPOPT's limited-memory Hessian; state hessian='limited-memory'",
                                where=f"phases[{k}].hessian")
    n = len(valid)
    trans = list(mp.transitions)
    if len(trans) > n - 1:
        raise OptimizeError(f"{len(trans)} transitions for {n} phases (at most {n - 1})", where="transitions")
    trans += [None] * (n - 1 - len(trans))
    known = _contacts_of(cm)
    coords = list(cm.coordinates)
    nq = len(coords)
    links = []
    pairs: list[tuple[int, int, Optional[Transition], str]] = [
        (k, k + 1, t, f"transitions[{k}]") for k, t in enumerate(trans)]
    if mp.periodic is not None:
        pairs.append((n - 1, 0, mp.periodic, "periodic"))
    for before, after, tr, where in pairs:
        if tr is not None and not isinstance(tr, Transition):
            raise OptimizeError(f"expected a Transition, got {type(tr).__name__}", where=where)
        touch = _names(tr.touchdown, f"{where}.touchdown", known) if tr is not None else ()
        keep = _names(tr.keep, f"{where}.keep", known) if tr is not None else ()
        for c in touch:
            if known[c].nrows not in (2, 3):
                raise OptimizeError(f"the contact {c!r} is not a point contact", where=f"{where}.touchdown")
        perm = list(range(2 * nq))
        shift = [0.0] * (2 * nq)
        if isinstance(tr, Periodic):
            from .problem import _finite, _suggest
            seen: dict[str, str] = {}
            for a, b in dict(tr.relabel).items():
                for nm in (a, b):
                    if not isinstance(nm, str) or nm not in coords:
                        raise OptimizeError(f"unknown coordinate {nm!r}{_suggest(str(nm), coords)}; the model's "
                                            f"coordinates: {', '.join(coords)}", where=f"{where}.relabel[{a!r}]")
                if b in seen:
                    raise OptimizeError(f"{b!r} is the image of both {seen[b]!r} and {a!r}",
                                        where=f"{where}.relabel[{a!r}]")
                seen[b] = a
                perm[coords.index(a)] = coords.index(b)
                perm[nq + coords.index(a)] = nq + coords.index(b)
            if sorted(perm) != list(range(2 * nq)):
                raise OptimizeError("the relabelling is not a one-to-one map of the coordinates (name every "
                                    "coordinate that moves, both ways)", where=f"{where}.relabel")
            for a, v in dict(tr.shift).items():
                if not isinstance(a, str) or a not in coords:
                    raise OptimizeError(f"unknown coordinate {a!r}{_suggest(str(a), coords)}; the model's "
                                        f"coordinates: {', '.join(coords)}", where=f"{where}.shift[{a!r}]")
                shift[coords.index(a)] = _finite(v, f"{where}.shift[{a!r}]")
        # the states' admissible values on both sides must meet (the map is an equality)
        vb, va = valid[before], valid[after]
        states = coords + [rate_name(c) for c in coords]
        for i in range(2 * nq if not touch else nq):
            lo_a, hi_a = _interval_at(va, i, end=False)
            lo_b, hi_b = _interval_at(vb, perm[i], end=True)
            lo_b, hi_b = lo_b - shift[i], hi_b - shift[i]
            if max(lo_a, lo_b) > min(hi_a, hi_b) + 1e-12:
                raise OptimizeError(
                    f"phases[{after}] starts with {states[i]} in [{lo_a:g}, {hi_a:g}] but the map from the end of "
                    f"phases[{before}] ({states[perm[i]]} in [{lo_b + shift[i]:g}, {hi_b + shift[i]:g}]"
                    f"{f' - {shift[i]:g}' if shift[i] else ''}) gives [{lo_b:g}, {hi_b:g}]: inconsistent bounds",
                    where=f"{where}")
        gap_rows = tuple(known[c].row + known[c].nrows - 1 for c in touch)
        links.append(Link(before, after, tuple(dict.fromkeys(touch + keep)), gap_rows,
                          _impulse_rows(cm, touch, valid[0].p), tuple(perm), tuple(shift), where))
    # a phase entered from a phase or an impact that holds its contacts already: its first-node gap and velocity
    # rows would repeat the link's rows (a rank-deficient Jacobian), so they are left to the link
    out = list(valid)
    for ln in links:
        vb, va = valid[ln.before], valid[ln.after]
        inherited = set(ln.active) if ln.active else set(vb.contacts)
        if isinstance(mp.periodic, Periodic) and ln.where == "periodic":
            names = {c: c for c in known}
            inherited = {_relabelled_contact(cm, c, ln.perm) or names[c] for c in inherited}
        held = {c for c in va.contacts if c in inherited}
        if held:
            rows = {r for c in held for r in range(known[c].row, known[c].row + known[c].nrows)}
            out[ln.after] = dataclasses.replace(
                out[ln.after], start_position_rows=tuple(r for r in out[ln.after].start_position_rows if r not in rows),
                start_velocity_rows=tuple(r for r in out[ln.after].start_velocity_rows if r not in rows))
    return ValidMultiPhase(tuple(out), tuple(links), _input_rate(mp.input_rate, list(cm.inputs)))


def _input_rate(weights: Any, inputs: Sequence[str]) -> tuple[float, ...]:
    """The weights of the inputs' rate penalty, one per input (empty when every weight is 0)."""
    from .problem import _suggest
    if isinstance(weights, Mapping):
        w = [0.0] * len(inputs)
        for name, v in weights.items():
            if not isinstance(name, str) or name not in inputs:
                raise OptimizeError(f"unknown input {name!r}{_suggest(str(name), list(inputs))}; the model's "
                                    f"inputs: {', '.join(inputs) or 'none'}", where=f"input_rate[{name!r}]")
            w[inputs.index(name)] = _weight(v, f"input_rate[{name!r}]")
    else:
        w = [_weight(weights, "input_rate")] * len(inputs)
    return tuple(w) if any(w) else ()


def _weight(v: Any, where: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise OptimizeError(f"expected a number >= 0, got {v!r}", where=where) from None
    if not (f >= 0.0 and np.isfinite(f)):
        raise OptimizeError(f"expected a finite number >= 0, got {v!r}", where=where)
    return f


def _impulse_rows(cm: Any, touch: Sequence[str], p: Sequence[float]) -> tuple[tuple[float, ...], ...]:
    """Per touching contact: its normal impulse >= 0 and, with a friction coefficient mu >= 0, its cone."""
    if not touch:
        return ()
    mu = cm.constraint_friction(np.asarray(p, dtype=float))
    out = []
    for i, b in enumerate(cm.constraints):
        if b.name not in touch:
            continue
        n = b.row + b.nrows - 1
        e = np.zeros(int(cm.nrows))
        e[n] = 1.0
        out.append(tuple(e))
        if mu[i] < 0:
            continue
        for t in range(b.row, n):
            for sign in (-1.0, 1.0):
                c = np.zeros(int(cm.nrows))
                c[n], c[t] = mu[i], sign
                out.append(tuple(c))
    return tuple(out)


def _relabelled_contact(cm: Any, contact: str, perm: Sequence[int]) -> Optional[str]:
    """The contact whose gap, at the relabelled configuration, is ``contact``'s: found numerically at a random
    configuration (the relabelling swaps the legs, so it swaps the feet)."""
    rng = np.random.default_rng(7)
    nq = int(cm.nq)
    q = rng.uniform(-0.7, 0.7, nq)
    qa = q[list(perm[:nq])]
    c, ca = cm.constraint_position(q), cm.constraint_position(qa)
    for b in cm.constraints:
        if b.name == contact:
            gb = c[b.row + b.nrows - 1]
    for b in cm.constraints:
        if abs(ca[b.row + b.nrows - 1] - gb) < 1e-9 * max(1.0, abs(gb)):
            return str(b.name)
    return None


class MultiPhaseNLP:
    """The compiled phases and the links' rows: x = the phases' variables one after the other; g = the
    phases' constraints, then per link its rows (q: nq, q̇: nq, the touching gaps, the normal impulses)."""

    def __init__(self, problem: ValidMultiPhase, *, build_dir: Any = None) -> None:
        from .solve import compile_problem
        start = time.perf_counter()
        self.problem = problem
        self.phases = [compile_problem(vp, build_dir=build_dir) for vp in problem.phases]
        self.model = problem.phases[0].model
        self.nq = int(self.model.nq)
        self.xoff = np.cumsum([0] + [p.n for p in self.phases])
        self.goff = np.cumsum([0] + [p.m for p in self.phases])
        self.link_rows = [2 * self.nq + len(ln.gap_rows) + len(ln.impulse_rows) for ln in problem.links]
        self.loff = self.goff[-1] + np.cumsum([0] + self.link_rows)
        self.n, self.m = int(self.xoff[-1]), int(self.loff[-1])
        self._p = np.asarray(problem.phases[0].p, dtype=float)
        self.build_seconds = time.perf_counter() - start
        rows, cols = [], []
        for k, ph in enumerate(self.phases):
            r, c = ph.jacobian_structure()
            rows.append(r.astype(np.int64) + self.goff[k])
            cols.append(c.astype(np.int64) + self.xoff[k])
        for j, ln in enumerate(problem.links):
            r, c = self._link_structure(j, ln)
            rows.append(r)
            cols.append(c)
        self._rows, self._cols = np.concatenate(rows), np.concatenate(cols)

    # -- the states at the phases' ends --------------------------------------------------------------------
    def _end(self, k: int) -> int:
        ph = self.phases[k]
        return int(self.xoff[k] + (ph.points - 1) * ph.nz)

    def _start(self, k: int) -> int:
        return int(self.xoff[k])

    def _link_structure(self, j: int, ln: Link) -> tuple[np.ndarray, np.ndarray]:
        nq, base = self.nq, int(self.loff[j])
        e, s = self._end(ln.before), self._start(ln.after)
        rows, cols = [], []
        for i in range(2 * nq):                    # start state i of `after` minus the map
            rows.append(base + i)
            cols.append(s + i)
            if not ln.active or i < nq:
                rows.append(base + i)
                cols.append(e + ln.perm[i])
            else:                                  # q̇⁺ depends on every q⁻ and q̇⁻
                rows.extend([base + i] * (2 * nq))
                cols.extend(range(e, e + 2 * nq))
        for r in range(len(ln.gap_rows) + len(ln.impulse_rows)):      # gaps in q⁻; impulses in q⁻, q̇⁻
            width = nq if r < len(ln.gap_rows) else 2 * nq
            rows.extend([base + 2 * nq + r] * width)
            cols.extend(range(e, e + width))
        return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)

    def _link(self, j: int, ln: Link, x: np.ndarray, jac: bool) -> tuple[np.ndarray, Optional[np.ndarray]]:
        nq, cm = self.nq, self.model
        e, s = self._end(ln.before), self._start(ln.after)
        qm, qdm = x[e:e + nq], x[e + nq:e + 2 * nq]
        perm = np.array(ln.perm)
        if ln.active:
            qdp, imp = self._impact(qm, qdm, ln.active)
        else:
            qdp, imp = qdm, None
        mapped = np.concatenate([qm, qdp])
        g = x[s:s + 2 * nq] - (mapped[perm] - np.array(ln.shift))
        gaps = cm.constraint_position(qm, self._p)[list(ln.gap_rows)] if ln.gap_rows else np.zeros(0)
        C = np.array(ln.impulse_rows, dtype=float).reshape(len(ln.impulse_rows), int(cm.nrows))
        imps = C @ imp if imp is not None else np.zeros(0)
        vals = np.concatenate([g, gaps, imps])
        if not jac:
            return vals, None
        out = []
        if ln.active:
            dvq, dvv, diq, div = cm.impact_derivatives(qm, qdm, list(ln.active), self._p)
        for i in range(2 * nq):
            out.append(1.0)
            if not ln.active or i < nq:
                out.append(-1.0)
            else:
                src = perm[i] - nq
                out.extend(-dvq[src])
                out.extend(-dvv[src])
        if ln.gap_rows:
            Jc = cm.constraint_jacobian(qm, self._p)
            for r in ln.gap_rows:
                out.extend(Jc[r])
            out.extend(np.hstack([C @ diq, C @ div]).ravel())
        return vals, np.array(out, dtype=float)

    def _impact(self, q: np.ndarray, qd: np.ndarray, active: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """q̇⁺ and the impulse with the ``active`` blocks held as given (none released): the impact's linear
        system M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0 on the active rows, as ``impact_derivatives`` differentiates it."""
        cm = self.model
        M = cm.mass_matrix(q, self._p)
        J = cm.constraint_jacobian(q, self._p)
        rows = [r for b in cm.constraints if b.name in active for r in range(b.row, b.row + b.nrows)]
        Ja = J[rows]
        n, r = len(q), len(rows)
        K = np.zeros((n + r, n + r))
        K[:n, :n], K[:n, n:], K[n:, :n] = M, -Ja.T, Ja
        sol = np.linalg.solve(K, np.concatenate([M @ qd, np.zeros(r)]))
        imp = np.zeros(int(cm.nrows))
        imp[rows] = sol[n:]
        return sol[:n], imp

    # -- the NLP's functions --------------------------------------------------------------------------------
    def _x(self, x: Any) -> np.ndarray:
        a = np.ascontiguousarray(x, dtype=float)
        if a.shape != (self.n,):
            raise ValueError(f"x has shape {a.shape}; expected ({self.n},)")
        return a

    def split(self, x: Any) -> list[np.ndarray]:
        """x cut into the phases' variables."""
        a = self._x(x)
        return [a[self.xoff[k]:self.xoff[k + 1]] for k in range(len(self.phases))]

    def objective(self, x: Any) -> float:
        parts = self.split(x)
        return float(sum(ph.objective(xk) + self._rate(ph, xk, None) for ph, xk in zip(self.phases, parts)))

    def gradient(self, x: Any) -> np.ndarray:
        out = []
        for ph, xk in zip(self.phases, self.split(x)):
            g = ph.gradient(xk)
            self._rate(ph, xk, g)
            out.append(g)
        return np.concatenate(out)

    def _rate(self, ph: Any, xk: np.ndarray, grad: Optional[np.ndarray]) -> float:
        """The phase's input-rate penalty Σ w (Δu)² / Δt over consecutive points (its gradient added to
        ``grad`` when given)."""
        w = self.problem.input_rate
        if not w:
            return 0.0
        pr = ph.problem
        nz, P, u0 = ph.nz, ph.points, 2 * pr.nq
        U = xk[:P * nz].reshape(P, nz)[:, u0:]
        T = float(xk[P * nz]) if pr.free_duration else pr.duration[0]
        dt = T / (P - 1)
        W = np.asarray(w)
        dU = np.diff(U, axis=0)
        val = float(np.sum(W * dU ** 2) / dt)
        if grad is not None:
            G = 2.0 * W * dU / dt
            gu = np.zeros_like(U)
            gu[1:] += G
            gu[:-1] -= G
            grad[:P * nz].reshape(P, nz)[:, u0:] += gu
            if pr.free_duration:
                grad[P * nz] -= val / T
        return val

    def constraints(self, x: Any) -> np.ndarray:
        a = self._x(x)
        parts = [ph.constraints(xk) for ph, xk in zip(self.phases, self.split(a))]
        parts += [self._link(j, ln, a, False)[0] for j, ln in enumerate(self.problem.links)]
        return np.concatenate(parts)

    def jacobian_structure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._rows, self._cols

    def jacobian_values(self, x: Any) -> np.ndarray:
        a = self._x(x)
        parts = [ph.jacobian_values(xk) for ph, xk in zip(self.phases, self.split(a))]
        parts += [self._link(j, ln, a, True)[1] for j, ln in enumerate(self.problem.links)]  # type: ignore[misc]
        return np.concatenate(parts)

    def jacobian(self, x: Any) -> Any:
        """The constraint Jacobian as a SciPy sparse matrix (m, n) (duplicate entries summed)."""
        from scipy.sparse import coo_matrix
        return coo_matrix((self.jacobian_values(x), (self._rows, self._cols)), shape=(self.m, self.n)).tocsr()

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x lower, x upper, g lower, g upper): the phases' own, the links' rows = 0 (normal impulses >= 0)."""
        from .nlp import INF
        b = [ph.bounds() for ph in self.phases]
        gl = [bk[2] for bk in b]
        gu = [bk[3] for bk in b]
        for ln in self.problem.links:
            z = np.zeros(2 * self.nq + len(ln.gap_rows))
            gl.append(np.concatenate([z, np.zeros(len(ln.impulse_rows))]))
            gu.append(np.concatenate([z, np.full(len(ln.impulse_rows), INF)]))
        return (np.concatenate([bk[0] for bk in b]), np.concatenate([bk[1] for bk in b]), np.concatenate(gl),
                np.concatenate(gu))

    def guess(self, previous: Any = None) -> np.ndarray:
        """The phases' guesses one after the other. ``previous``: None, one guess per phase (a previous
        phase's result, a SimulationResult, or an x vector of the phase), or a :class:`MultiPhaseResult` of
        the same phases, on any meshes: each phase's trajectories interpolated onto this problem's mesh and
        its duration taken over (refining a coarse solution on a finer mesh)."""
        if previous is None:
            previous = [None] * len(self.phases)
        if isinstance(previous, MultiPhaseResult):
            previous = previous.phases
        if len(previous) != len(self.phases):
            raise OptimizeError(f"{len(previous)} guesses for {len(self.phases)} phases", where="guess")
        out = []
        for ph, g in zip(self.phases, previous):
            if isinstance(g, np.ndarray) and g.ndim == 1:
                out.append(np.clip(g, *ph.bounds()[:2]))
            else:
                out.append(ph.guess(g))
        return np.concatenate(out)

    # -- solving --------------------------------------------------------------------------------------------
    def solve(self, x0: Optional[np.ndarray] = None, options: Optional[Mapping[str, Any]] = None,
              ) -> "MultiPhaseResult":
        """Solve with CasADi's IPOPT (limited-memory Hessian), the functions and the exact sparse Jacobian
        evaluated by this object's C and Python callbacks."""
        casadi = casadi_module()
        x = np.array(self.guess() if x0 is None else x0, dtype=float)
        xl, xu, gl, gu = self.bounds()
        x = np.clip(x, xl, xu)
        fcb = _Callback("rodopt_f", self.n, 1, lambda a: np.array([self.objective(a)]),
                        np.zeros(self.n, dtype=np.int64), np.arange(self.n), lambda a: self.gradient(a))
        gcb = _Callback("rodopt_g", self.n, self.m, self.constraints, self._rows, self._cols, self.jacobian_values)
        X = casadi.MX.sym("x", self.n)
        opts: dict[str, Any] = {"ipopt.hessian_approximation": "limited-memory", "ipopt.print_level": 0,
                                "print_time": False}
        for k, v in dict(options or {}).items():
            opts[k if "." in k or k in ("print_time",) else f"ipopt.{k}"] = v
        solver = casadi.nlpsol("rodopt_phases", "ipopt", {"x": X, "f": fcb(X), "g": gcb(X)}, opts)
        start = time.perf_counter()
        sol = solver(x0=x, lbx=xl, ubx=xu, lbg=gl, ubg=gu)
        seconds = time.perf_counter() - start
        stats = solver.stats()
        xs = np.array(sol["x"]).ravel()
        return MultiPhaseResult.build(self, xs, np.array(sol["lam_g"]).ravel(), float(sol["f"]),
                                      str(stats.get("return_status", "")), int(stats.get("iter_count", -1)),
                                      bool(stats.get("success", False)), seconds)


class _Callback:
    """A CasADi function of x with its sparse Jacobian, both evaluated by Python callables (kept alive here)."""

    def __new__(cls, name: str, n: int, m: int, fn: Any, rows: np.ndarray, cols: np.ndarray, jac: Any) -> Any:
        casadi_module()   # the OptimizeError that names the extra, if CasADi is missing
        import casadi

        # duplicate (row, col) entries are summed: CasADi's sparsity takes each once
        key = rows.astype(np.int64) * n + cols.astype(np.int64)
        uniq, inverse = np.unique(key, return_inverse=True)
        ur, uc = (uniq // n).astype(int), (uniq % n).astype(int)
        sp = casadi.Sparsity.triplet(m, n, ur.tolist(), uc.tolist())
        # CasADi stores column-major: the order of its nonzeros
        order = np.lexsort((ur, uc))
        where = np.empty_like(order)
        where[order] = np.arange(len(order))

        class Jac(casadi.Callback):
            def __init__(self) -> None:
                casadi.Callback.__init__(self)
                self.construct(f"jac_{name}", {})

            def get_n_in(self) -> int:
                return 2

            def get_n_out(self) -> int:
                return 1

            def get_sparsity_in(self, i: int) -> Any:
                return casadi.Sparsity.dense(n, 1) if i == 0 else casadi.Sparsity(m, 1)

            def get_sparsity_out(self, i: int) -> Any:
                return sp

            def eval(self, arg: Any) -> Any:
                vals = np.zeros(len(uniq))
                np.add.at(vals, where[inverse], jac(np.array(arg[0]).ravel()))
                return [casadi.DM(sp, vals)]

        class F(casadi.Callback):
            def __init__(self) -> None:
                casadi.Callback.__init__(self)
                self.construct(name, {})

            def get_n_in(self) -> int:
                return 1

            def get_n_out(self) -> int:
                return 1

            def get_sparsity_in(self, i: int) -> Any:
                return casadi.Sparsity.dense(n, 1)

            def get_sparsity_out(self, i: int) -> Any:
                return casadi.Sparsity.dense(m, 1)

            def eval(self, arg: Any) -> Any:
                return [casadi.DM(fn(np.array(arg[0]).ravel()))]

            # the Jacobian's pattern: without it CasADi takes it dense and IPOPT factors a dense KKT matrix
            def has_jac_sparsity(self, oind: int, iind: int) -> bool:
                return True

            def get_jac_sparsity(self, oind: int, iind: int, symmetric: bool) -> Any:
                return sp

            def has_jacobian(self) -> bool:
                return True

            def get_jacobian(self, nm: str, inames: Any, onames: Any, opts: Any) -> Any:
                self._jac = Jac()
                return self._jac

        return F()


@dataclass
class MultiPhaseResult:
    """A multi-phase solution: one :class:`~.result.OptimizationResult` per phase (``phases``; times from each
    phase's start, ``t0`` the phases' start times), the impulses of the impacts (per link, by contact name:
    the impulse's rows), the objective and IPOPT's report."""

    phases: list[Any]
    t0: list[float]
    impulses: list[dict[str, np.ndarray]]
    objective: float
    message: str
    iterations: int
    success: bool
    solve_seconds: float
    constraint_violation: float
    x: np.ndarray
    nlp: MultiPhaseNLP

    @classmethod
    def build(cls, nlp: MultiPhaseNLP, x: np.ndarray, lam: np.ndarray, obj: float, message: str, iterations: int,
              success: bool, seconds: float) -> "MultiPhaseResult":
        from .result import OptimizationResult
        g = nlp.constraints(x)
        xl, xu, gl, gu = nlp.bounds()
        viol = float(max(np.max(np.maximum(gl - g, 0.0)), np.max(np.maximum(g - gu, 0.0)),
                         np.max(np.maximum(xl - x, 0.0), initial=0.0), np.max(np.maximum(x - xu, 0.0), initial=0.0)))
        phases, t0, t = [], [], 0.0
        for k, ph in enumerate(nlp.phases):
            xk = x[nlp.xoff[k]:nlp.xoff[k + 1]]
            zero = np.zeros(ph.n)
            r = OptimizationResult.from_solution(ph, xk, g[nlp.goff[k]:nlp.goff[k + 1]],
                                                 lam[nlp.goff[k]:nlp.goff[k + 1]], zero, zero, ph.objective(xk),
                                                 0 if success else -1, message, iterations, seconds)
            phases.append(r)
            t0.append(t)
            t += r.duration
        impulses: list[dict[str, np.ndarray]] = []
        cm = nlp.model
        for ln in nlp.problem.links:
            if not ln.active:
                impulses.append({})
                continue
            e = nlp._end(ln.before)
            _, imp = nlp._impact(x[e:e + nlp.nq], x[e + nlp.nq:e + 2 * nlp.nq], ln.active)
            impulses.append({b.name: imp[b.row:b.row + b.nrows].copy() for b in cm.constraints if b.name in ln.active})
        return cls(phases, t0, impulses, obj, message, iterations, success, seconds, viol, x, nlp)

    @property
    def duration(self) -> float:
        return float(sum(r.duration for r in self.phases))


__all__ = ["MultiPhase", "Transition", "Periodic", "MultiPhaseNLP", "MultiPhaseResult", "ValidMultiPhase",
           "check_multiphase"]
