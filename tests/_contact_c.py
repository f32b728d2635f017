"""ctypes access to rodgen_contact.c through the hand-written models of tests/contact_c/harness.c."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rodgen import contract

REPO = Path(__file__).resolve().parents[1]
CSRC = REPO / "generator" / "rodgen" / "csrc"
HARNESS = Path(__file__).resolve().parent / "contact_c" / "harness.c"
CC = shutil.which("gcc") or shutil.which("cc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

COMPASS, FOURBAR, FOURBAR_TWICE, POINT = 0, 1, 2, 3

# the status codes and named constants of the C, from rodgen's contract (the C's headers are rendered from it)
OK, ERR_NONFINITE_INPUT, ERR_SINGULAR_CONSTRAINTS, ERR_EVENT_NOT_LOCATED, ERR_FRICTION_CONE, ERR_INITIAL_STATE, \
    ERR_TOO_MANY_EVENTS = (int(contract.StatusCode[n]) for n in (
        "OK", "ERR_NONFINITE_INPUT", "ERR_SINGULAR_CONSTRAINTS", "ERR_EVENT_NOT_LOCATED", "ERR_FRICTION_CONE",
        "ERR_INITIAL_STATE", "ERR_TOO_MANY_EVENTS"))
EVENT_TOUCHDOWN, EVENT_LIFTOFF, EVENT_SLIP, EVENT_LIMIT, EVENT_LIMIT_RELEASE, EVENT_STICK = (
    contract.constant(f"EVENT_{n}") for n in ("TOUCHDOWN", "LIFTOFF", "SLIP", "LIMIT", "LIMIT_RELEASE", "STICK"))
SLIP_STOP, SLIP_CONTINUE, SLIP_SLIDE = (contract.constant(f"SLIP_{n}") for n in ("STOP", "CONTINUE", "SLIDE"))
STICK, SLIDE_PLUS, SLIDE_MINUS = (contract.constant(n) for n in ("STICK", "SLIDE_PLUS", "SLIDE_MINUS"))

#: Compass gait parameters (Goswami): m, m_H, a, b, g, slope (3 degrees down towards +x), mu
COMPASS_P = np.array([5.0, 10.0, 0.5, 0.5, 9.81, -np.deg2rad(3.0), 0.8])
#: Four-bar: l1, l2, l3, m1, m2, m3, g, px, py, lower limit of th1
FOURBAR_P = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 1.5, 9.81, 1.2, 0.0, -0.3])
#: Point mass: m, g, slope (20 degrees down towards +x), mu
POINT_P = np.array([2.0, 9.81, -np.deg2rad(20.0), 0.2])

D = ctypes.POINTER(ctypes.c_double)
I = ctypes.POINTER(ctypes.c_int)
L = ctypes.POINTER(ctypes.c_long)


def build(out_dir: Path) -> ctypes.CDLL:
    """Compile rodgen_contact.c, its Cholesky (rodgen_linalg.c) and the harness with the strict flags into a
    shared library."""
    lib = out_dir / "libcontact_harness.so"
    cmd = [CC, *STRICT, "-O2", "-fPIC", "-shared", f"-I{CSRC}", str(HARNESS), str(CSRC / "rodgen_contact.c"),
           str(CSRC / "rodgen_linalg.c"), "-o", str(lib), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(lib))


def _d(a: np.ndarray):
    return a.ctypes.data_as(D)


def _i(a: np.ndarray | None):
    return None if a is None else a.ctypes.data_as(I)


def _f(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _mask(x) -> np.ndarray | None:
    return None if x is None else np.ascontiguousarray(x, dtype=np.intc)


@dataclass
class Sim:
    status: int
    t: np.ndarray
    y: np.ndarray
    lam: np.ndarray
    active: np.ndarray
    u: np.ndarray
    ev_t: np.ndarray
    ev_kind: np.ndarray
    ev_block: np.ndarray
    ev_imp: np.ndarray
    ev_loss: np.ndarray
    block: int
    calls: int
    steps: int


class Harness:
    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

    def sizes(self, model: int) -> tuple[int, int, int, int, int]:
        out = np.zeros(5, dtype=np.intc)
        self.lib.h_sizes(model, _i(out))
        return tuple(int(v) for v in out)  # nq, nu, np, nconstraints, nrows

    def eval(self, model: int, p, q, qd) -> dict[str, np.ndarray]:
        nq, nu, _, _, nr = self.sizes(model)
        p, q, qd = _f(p), _f(q), _f(qd)
        M, h, B = np.zeros((nq, nq)), np.zeros(nq), np.zeros((nq, nu))
        c, J, b, e, r = np.zeros(nr), np.zeros((nr, nq)), np.zeros(nr), np.zeros(2), np.zeros(6)
        self.lib.h_eval(model, _d(p), _d(q), _d(qd), _d(M), _d(h), _d(B), _d(c), _d(J), _d(b), _d(e), _d(r))
        return {"M": M, "h": h, "B": B, "c": c, "J": J, "b": b, "T": e[0], "V": e[1], "r": r.reshape(3, 2)}

    def cfd(self, model: int, p, q, qd, u, active, target=None, alpha=10.0, beta=10.0):
        nq, _, _, _, nr = self.sizes(model)
        p, q, qd, u = _f(p), _f(q), _f(qd), _f(u)
        act = _mask(active)
        tgt = None if target is None else _f(target)
        qdd, lam = np.zeros(nq), np.zeros(nr)
        self.lib.h_cfd.argtypes = [ctypes.c_int, D, D, D, D, I, D, ctypes.c_double, ctypes.c_double, D, D]
        status = self.lib.h_cfd(model, _d(p), _d(q), _d(qd), _d(u), _i(act), None if tgt is None else _d(tgt),
                                alpha, beta, _d(qdd), _d(lam))
        return status, qdd, lam

    def impact(self, model: int, p, q, qdm, active):
        nq, _, _, nc, nr = self.sizes(model)
        p, q, qdm = _f(p), _f(q), _f(qdm)
        act = _mask(active)
        qdp, imp, after, loss = np.zeros(nq), np.zeros(nr), np.zeros(nc, dtype=np.intc), ctypes.c_double()
        status = self.lib.h_impact(model, _d(p), _d(q), _d(qdm), _i(act), _d(qdp), _d(imp), _i(after),
                                   ctypes.byref(loss))
        return status, qdp, imp, after.astype(bool), loss.value

    def simulate(self, model: int, p, y0, active0, t_end, dt, *, disarmed0=None, event_tol=1e-10, alpha=10.0,
                 beta=10.0, arm_gap=1e-6, check_tol=1e-8, u=0.0, max_events=0, on_slip=SLIP_STOP,
                 store_every=1, chunk=100000, capacity=None, ecap=2000) -> Sim:
        nq, nu, _, nc, nr = self.sizes(model)
        if capacity is None:
            capacity = int(2 * t_end / max(dt, 1e-3) / max(store_every, 1)) + 3 * ecap + 10
        p, y0 = _f(p), _f(y0)
        opts = _f([t_end, dt, event_tol, alpha, beta, arm_gap, check_tol, u, max_events])
        iopts = np.array([on_slip, store_every, chunk], dtype=np.intc)
        t, y = np.zeros(capacity), np.zeros((capacity, 2 * nq))
        lam, act = np.zeros((capacity, nr)), np.zeros((capacity, nc), dtype=np.intc)
        uo = np.zeros((capacity, nu))
        ev_t, ev_kind, ev_block = np.zeros(ecap), np.zeros(ecap, dtype=np.intc), np.zeros(ecap, dtype=np.intc)
        ev_imp, ev_loss = np.zeros((ecap, 2)), np.zeros(ecap)
        info = np.zeros(5, dtype=np.int_)
        f = self.lib.h_simulate
        f.argtypes = [ctypes.c_int, D, D, I, D, I, I, ctypes.c_long, D, D, D, I, D, ctypes.c_long, D, I, I, D, D,
                      L]
        status = f(model, _d(p), _d(opts), _i(iopts), _d(y0), _i(_mask(active0)), _i(_mask(disarmed0)),
                   capacity, _d(t), _d(y), _d(lam), _i(act), _d(uo), ecap, _d(ev_t), _i(ev_kind), _i(ev_block),
                   _d(ev_imp), _d(ev_loss), info.ctypes.data_as(L))
        n, ne = int(info[0]), int(info[1])
        return Sim(status, t[:n], y[:n], lam[:n], act[:n], uo[:n], ev_t[:ne], ev_kind[:ne],
                   ev_block[:ne], ev_imp[:ne], ev_loss[:ne], int(info[2]), int(info[3]), int(info[4]))
