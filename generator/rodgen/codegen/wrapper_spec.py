"""The Cython wrapper's view of a model: batch kernels and one-state methods around its C functions."""
from __future__ import annotations

from .spec import Kernel, Single


def _singles(prefix: str, macro: str) -> tuple[Single, ...]:
    NQ, NU, NP = f"{macro}_NQ", f"{macro}_NU", f"{macro}_NP"

    def one(name: str, args: list[str], widths: dict[str, str], shape: str, status: bool = False) -> Single:
        inputs = tuple((a, widths[a]) for a in args if a != "t")
        call = [("c_t" if a == "t" else f"d_{a}" if a in ("u", "p") else f"<const double *>b_{a}.buf")
                for a in args] + ["<double *>b_out.buf"]
        return Single(name, f"{prefix}_{name}", tuple(args), inputs, shape, tuple(call), status, "t" in args)

    w = {"q": NQ, "qd": NQ, "qdd": NQ, "u": NU, "p": NP, "y": f"2 * {NQ}"}
    return (one("mass_matrix", ["q", "p"], w, f"({NQ}, {NQ})"),
            one("bias", ["q", "qd", "p"], w, NQ),
            one("forward_dynamics", ["q", "qd", "u", "p"], w, NQ, status=True),
            one("inverse_dynamics", ["q", "qd", "qdd", "p"], w, NQ),
            one("rhs", ["t", "y", "u", "p"], w, f"2 * {NQ}", status=True))


def _kernels(prefix: str, macro: str, jacobian: bool) -> tuple[Kernel, ...]:
    NQ, NU, NP, NPTS = f"{macro}_NQ", f"{macro}_NU", f"{macro}_NP", f"{macro}_NPOINTS"
    k = []

    def kern(name: str, ins: list[tuple[str, str]], outs: list[tuple[str, str]], status: bool = False,
             scalar_t: bool = False) -> Kernel:
        call = []
        for nm, _ in ins + outs:
            call.append(f"b_{nm}.d[i * b_{nm}.step]" if (scalar_t and nm == "t") else f"b_{nm}.d + i * b_{nm}.step")
        return Kernel(name, f"{prefix}_{name}", tuple(ins), tuple(outs), tuple(call), status)

    q, qd, qdd, u, p = ("q", NQ), ("qd", NQ), ("qdd", NQ), ("u", NU), ("p", NP)
    k.append(kern("mass_matrix", [q, p], [("M", f"{NQ}*{NQ}")]))
    k.append(kern("bias", [q, qd, p], [("h", NQ)]))
    k.append(kern("gravity", [q, p], [("g", NQ)]))
    k.append(kern("input_map", [q, p], [("B", f"{NQ}*{NU}")]))
    k.append(kern("forward_dynamics", [q, qd, u, p], [qdd], status=True))
    k.append(kern("inverse_dynamics", [q, qd, qdd, p], [("Q", NQ)]))
    k.append(kern("rhs", [("t", "1"), ("y", f"2*{NQ}"), u, p], [("dy", f"2*{NQ}")], status=True, scalar_t=True))
    k.append(kern("energy", [q, qd, p], [("e", "2")]))
    k.append(kern("points", [q, p], [("r", f"2*{NPTS}")]))
    if jacobian:
        k.append(kern("rhs_jacobian", [q, qd, u, p], [("J", f"4*{NQ}*{NQ}")], status=True))
    return tuple(k)
