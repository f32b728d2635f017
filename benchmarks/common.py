"""Shared pieces of the benchmarks: timing, machine info, and the same mechanism in the anchor libraries.

The anchors (Pinocchio, MuJoCo, PyDy) get the *same* mechanism as rodgen: it
is rebuilt from rodgen's expanded rigid tree (one revolute or prismatic joint
per node, the node's bodies as its inertia), so every library integrates
identical physics in its own joint coordinates ``s = T q`` (relative angles,
lengths).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import sympy as sp

import rodgen
from rodgen.symbolic.recursive import Node, expanded_tree
from rodgen.toolchain.compiler import CONTRACT_FLAG

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CC = os.environ.get("CC", "gcc")
C_FLAGS = ["-O2", "-std=c99", CONTRACT_FLAG]   # the fused multiply-adds rodgen.build compiles with


# -- timing ---------------------------------------------------------------------------------------
def median_time(fn: Callable[[], Any], *, number: int, repeat: int = 7) -> float:
    """Median over ``repeat`` runs of the mean time of ``number`` calls (seconds per call)."""
    fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number)
    return statistics.median(runs)


def median_run(fn: Callable[[], Any], repeat: int) -> float:
    """Median over ``repeat`` runs of one call's time (seconds), no warm-up run: for runs of seconds."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def c_array(values: Any) -> str:
    """The numbers as a C initialiser ``{a, b, ...}`` (exact: repr of each double)."""
    return "{" + ", ".join(repr(float(v)) for v in np.asarray(values, dtype=float).reshape(-1)) + "}"


#: The walking runs compared with MuJoCo (bench_walk, bench_walk3d): (key, rodgen's hold, MuJoCo's harness
#: mode or None).
WALK_VARIANTS = (("rodgen", False, None), ("rodgen_hold", True, None), ("mujoco_rk4", False, "rk4"),
                 ("mujoco_euler", False, "euler"), ("mujoco_rk4_hold", True, "rk4_hold"),
                 ("mujoco_euler_hold", True, "euler_hold"))


def callgrind(cmd: list[str], cwd: Path, collect: tuple[str, ...], out_file: Path, controller: str
              ) -> tuple[int, int]:
    """(instructions inside the functions ``collect``, of them inside the C function ``controller``) of one
    run under callgrind (the functions must not call each other: each toggles the collection)."""
    import re
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                           *[f"--toggle-collect={c}" for c in collect], *cmd], cwd=cwd, capture_output=True,
                          text=True, env=dict(os.environ), check=True)
    total = int(re.search(r"Collected : (\d+)", proc.stderr).group(1))  # type: ignore[union-attr]
    # --threshold=100: every function listed, however small its share (a cheap controller is under 1 %)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
                         capture_output=True, text=True).stdout
    m = re.search(rf"^\s*([\d,]+) \([ \d.]+%\)\s+\*?\s*\S*:{re.escape(controller)} \[", ann, re.M)
    return total, int(m.group(1).replace(",", "")) if m else 0


def autorange(fn: Callable[[], Any], *, target: float = 0.05, repeat: int = 7) -> float:
    """median_time with ``number`` chosen so that one run takes about ``target`` seconds."""
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return median_time(fn, number=max(1, int(target / one)), repeat=repeat)


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cc = subprocess.run([CC, "--version"], capture_output=True, text=True).stdout.splitlines()
    versions = {"python": platform.python_version(), "numpy": np.__version__, "sympy": sp.__version__,
                "rodgen": rodgen.__version__}
    for mod in ("pinocchio", "mujoco", "pydy", "Cython"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(),
            "compiler": cc[0] if cc else CC, "harness_cflags": C_FLAGS, "versions": versions}


def fresh_copy(files: list[Path], root: Path) -> Path:
    """``files`` copied into a new folder under ``root``: a library's speed moves with where its pages land in
    memory (up to 40 % seen between loads of the same file), so a timed run that loads fresh copies samples the
    placements, and the median over runs is kept (bench_walk3d.py, bench_schedule.py)."""
    folder = Path(tempfile.mkdtemp(dir=root))
    for f in files:
        shutil.copy2(f, folder / f.name)
    return folder


def library_files(folder: Path) -> list[Path]:
    """A built model's files a load needs (its library, header and table) in its build folder."""
    return [f for f in Path(folder).iterdir() if f.suffix in (".so", ".json", ".h")]


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """Write ``results/<name>.json`` (``name`` may also be a path of its own, e.g. ``/tmp/run1``)."""
    path = RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"machine": machine(), **payload}, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    shown = path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path
    print(f"wrote {shown}")
    return path


def missing(what: str) -> Optional[str]:
    """None if the module imports, else a message saying why a part is skipped."""
    try:
        __import__(what)
        return None
    except ImportError as exc:
        return f"{what} is not installed ({exc}); pip install -e '.[bench]'"


# -- the expanded tree, numerically --------------------------------------------------------------
class NumericTree:
    """rodgen's expanded tree of a model with the default parameter values, and the map s = T q."""

    def __init__(self, model: rodgen.Model) -> None:
        nodes, k = expanded_tree(model)
        vals = dict(k.param_values)

        def num(x: sp.Expr) -> float:
            return float(sp.sympify(x).xreplace(vals))
        self.nodes: list[Node] = nodes
        self.n = len(k.q)
        self.T = np.array([[num(sp.diff(nd.coord, qj)) for qj in k.q] for nd in nodes])
        if self.T.shape[0] != self.n or abs(np.linalg.det(self.T)) < 1e-12:
            raise ValueError(f"model {model.name!r} has joints that are not independent coordinates "
                             f"(masses at intermediate fractions of variable segments); the anchors cannot "
                             f"represent it without constraints")
        self.revolute = [nd.revolute for nd in nodes]
        self.parent = [nd.parent for nd in nodes]
        self.p0 = [(num(nd.p0[0]), num(nd.p0[1])) for nd in nodes]
        self.beta = [num(nd.beta) for nd in nodes]
        self.axis = [(num(nd.axis[0]), num(nd.axis[1])) for nd in nodes]
        # lumped body of each node: mass, centre of mass (node frame), central inertia
        self.body: list[tuple[float, float, float, float]] = []
        for nd in nodes:
            m = sum(num(b[0]) for b in nd.bodies)
            if m == 0:
                self.body.append((0.0, 0.0, 0.0, 0.0))
                continue
            cx = sum(num(b[0]) * num(b[1]) for b in nd.bodies) / m
            cy = sum(num(b[0]) * num(b[2]) for b in nd.bodies) / m
            inertia = sum(num(b[3]) + num(b[0]) * ((num(b[1]) - cx) ** 2 + (num(b[2]) - cy) ** 2)
                          for b in nd.bodies)
            self.body.append((m, cx, cy, inertia))
        self.gravity = (num(k.gravity[0]), num(k.gravity[1]))


def pinocchio_model(tree: NumericTree) -> Any:
    import pinocchio as pin
    model = pin.Model()
    model.gravity.linear = np.array([tree.gravity[0], tree.gravity[1], 0.0])
    ids = []
    for i in range(tree.n):
        parent = 0 if tree.parent[i] < 0 else ids[tree.parent[i]]
        px, py = tree.p0[i]
        if tree.revolute[i]:
            placement = pin.SE3(pin.utils.rotate("z", tree.beta[i]), np.array([px, py, 0.0]))
            joint = pin.JointModelRZ()
        else:
            placement = pin.SE3(np.eye(3), np.array([px, py, 0.0]))
            ax, ay = tree.axis[i]
            joint = pin.JointModelPrismaticUnaligned(np.array([ax, ay, 0.0]))
        jid = model.addJoint(parent, joint, placement, f"j{i}")
        ids.append(jid)
        m, cx, cy, inertia = tree.body[i]
        if m > 0:
            iz = max(inertia, 1e-12)
            model.appendBodyToJoint(jid, pin.Inertia(m, np.array([cx, cy, 0.0]), np.diag([iz, iz, iz])),
                                    pin.SE3.Identity())
    return model


def mjcf(tree: NumericTree, name: str, dt: float = 1e-3, *, geoms: Optional[dict[int, list[str]]] = None,
         ground: Optional[str] = None) -> str:
    """The tree as an MJCF model: hinge and slide joints, no armature or damping, RK4 with time step ``dt``.

    Without ``geoms`` and ``ground``: inertials only, contact disabled. ``geoms`` adds MJCF geom elements to
    the bodies of the given tree nodes and ``ground`` to the world body; contact is then MuJoCo's default."""
    children: dict[int, list[int]] = {}
    for i, p in enumerate(tree.parent):
        children.setdefault(p, []).append(i)

    def body(i: int, depth: int) -> str:
        pad = "  " * depth
        px, py = tree.p0[i]
        if tree.revolute[i]:
            frame = f'pos="{px!r} {py!r} 0" euler="0 0 {tree.beta[i]!r}"'
            joint = f'<joint name="j{i}" type="hinge" axis="0 0 1"/>'
        else:
            frame = f'pos="{px!r} {py!r} 0"'
            ax, ay = tree.axis[i]
            joint = f'<joint name="j{i}" type="slide" axis="{ax!r} {ay!r} 0"/>'
        m, cx, cy, inertia = tree.body[i]
        # MuJoCo refuses massless moving bodies; a joint frame without a body gets a negligible mass
        m, iz = (m, max(inertia, 1e-9)) if m > 0 else (1e-9, 1e-12)
        lines = [f'{pad}<body name="b{i}" {frame}>', f"{pad}  {joint}",
                 f'{pad}  <inertial pos="{cx!r} {cy!r} 0" mass="{m!r}" diaginertia="{iz!r} {iz!r} {iz!r}"/>']
        lines += [f"{pad}  {g}" for g in (geoms or {}).get(i, [])]
        for c in children.get(i, []):
            lines.append(body(c, depth + 1))
        lines.append(f"{pad}</body>")
        return "\n".join(lines)

    contact = geoms is not None or ground is not None
    flags = "" if contact else '\n    <flag contact="disable" constraint="disable"/>\n  '
    world = f"    {ground}\n" if ground else ""
    motors = "\n".join(f'    <motor joint="j{i}" gear="1" ctrllimited="false"/>' for i in range(tree.n))
    bodies = "\n".join(body(i, 2) for i in children.get(-1, []))
    gx, gy = tree.gravity
    return f"""<mujoco model="{name}">
  <option timestep="{dt!r}" integrator="RK4" gravity="{gx!r} {gy!r} 0">{flags}</option>
  <worldbody>
{world}{bodies}
  </worldbody>
  <actuator>
{motors}
  </actuator>
</mujoco>
"""


# -- PyDy (Kane's method + its Cython code generator) --------------------------------------------
def pydy_build(tree: NumericTree, *, tmp_dir: Optional[str] = None) -> tuple[Callable[..., np.ndarray], float,
                                                                              float]:
    """Kane's equations of the tree and PyDy's Cython RHS.

    Returns (rhs(x, t, r, p), derive_seconds, generate_and_compile_seconds); x = [s, sd] in the tree's
    joint coordinates, r the joint inputs (torques, forces), p = [g].
    """
    from pydy.codegen.ode_function_generators import generate_ode_function
    from sympy.physics import mechanics as me

    t0 = time.perf_counter()
    n = tree.n
    q = me.dynamicsymbols(f"s0:{n}")
    u = me.dynamicsymbols(f"w0:{n}")
    r = me.dynamicsymbols(f"r0:{n}")
    g = sp.Symbol("g")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    frames: list[me.ReferenceFrame] = []
    points: list[me.Point] = []
    bodies: list[Any] = []
    loads: list[tuple[Any, Any]] = []
    gdir = np.array(tree.gravity) / np.linalg.norm(tree.gravity)
    for i in range(n):
        Fp = N if tree.parent[i] < 0 else frames[tree.parent[i]]
        Pp = O if tree.parent[i] < 0 else points[tree.parent[i]]
        px, py = (sp.nsimplify(v, rational=False) for v in tree.p0[i])
        if tree.revolute[i]:
            F = Fp.orientnew(f"F{i}", "Axis", [q[i] + tree.beta[i], Fp.z])
            F.set_ang_vel(Fp, u[i] * Fp.z)
            P = Pp.locatenew(f"P{i}", px * Fp.x + py * Fp.y)
            P.v2pt_theory(Pp, N, Fp)
        else:
            F = Fp
            ax, ay = tree.axis[i]
            P = Pp.locatenew(f"P{i}", (px + ax * q[i]) * Fp.x + (py + ay * q[i]) * Fp.y)
            P.set_vel(Fp, u[i] * (ax * Fp.x + ay * Fp.y))
            P.v1pt_theory(Pp, N, Fp)
        frames.append(F)
        points.append(P)
        m, cx, cy, inertia = tree.body[i]
        if m > 0:
            C = P.locatenew(f"C{i}", cx * F.x + cy * F.y)
            C.v2pt_theory(P, N, F)
            body = me.RigidBody(f"B{i}", C, F, m, (me.inertia(F, inertia, inertia, inertia), C))
            bodies.append(body)
            loads.append((C, m * g * (gdir[0] * N.x + gdir[1] * N.y)))
    kane = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)])
    fr, frstar = kane.kanes_equations(bodies, loads)
    Mm = kane.mass_matrix
    forcing = kane.forcing + sp.Matrix(r)     # the inputs act directly on the joint coordinates
    t1 = time.perf_counter()
    work = tmp_dir or tempfile.mkdtemp(prefix="pydy_")
    cwd = os.getcwd()
    os.chdir(work)           # PyDy's Cython generator writes into the working directory
    try:
        rhs = generate_ode_function(forcing, q, u, [g], mass_matrix=Mm,
                                    coordinate_derivatives=sp.Matrix(u), specifieds=r, generator="cython")
    finally:
        os.chdir(cwd)
    t2 = time.perf_counter()
    return rhs, t1 - t0, t2 - t1


# -- C harness -----------------------------------------------------------------------------------
HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "{name}.h"
void aba_fd(const double *q, const double *qd, const double *u, const double *p, double *qdd);
static int aba_rhs(double t, const double *y, const double *u, const double *p, double *dy) {{
    int j; (void)t;
    for (j = 0; j < {NQ}; ++j) dy[j] = y[{NQ} + j];
    aba_fd(y, y + {NQ}, u, p, dy + {NQ});
    return 0;
}}

static double now(void) {{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}}

int main(int argc, char **argv) {{
    const double p[{NP}] = {P};
    double y[2 * {NQ}], k1[2 * {NQ}], k2[2 * {NQ}], k3[2 * {NQ}], k4[2 * {NQ}], tmp[2 * {NQ}];
    double u[{NU}] = {{0}};
    double qdd[{NQ}];
    const double y0[2 * {NQ}] = {Y0};
    const char *mode = argc > 1 ? argv[1] : "fd";
    long reps = argc > 2 ? atol(argv[2]) : 100000;
    int i, j, st = 0;
    double t0, t1, acc = 0.0;
    memcpy(y, y0, sizeof y);
    if (strcmp(mode, "fd") == 0 || strcmp(mode, "abafd") == 0) {{
        int aba = strcmp(mode, "abafd") == 0;
        t0 = now();
        for (i = 0; i < reps; ++i) {{
            y[0] = y0[0] + 1e-9 * (i & 15);        /* defeat hoisting */
            if (aba) aba_fd(y, y + {NQ}, u, p, qdd);
            else st |= {name}_forward_dynamics(0.0, y, y + {NQ}, u, p, qdd);
            acc += qdd[0];
        }}
        t1 = now();
        printf("%.9e %d %.17g\n", (t1 - t0) / reps, st, acc);
        return 0;
    }}
    /* rk4 / abark4: reps steps of size dt = 1e-3 */
    {{
        const double dt = 1e-3;
        int (*rhs)(double, const double *, const double *, const double *, double *) =
            strcmp(mode, "abark4") == 0 ? aba_rhs : {name}_rhs;
        t0 = now();
        for (i = 0; i < reps; ++i) {{
            st |= rhs(0.0, y, u, p, k1);
            for (j = 0; j < 2 * {NQ}; ++j) tmp[j] = y[j] + 0.5 * dt * k1[j];
            st |= rhs(0.0, tmp, u, p, k2);
            for (j = 0; j < 2 * {NQ}; ++j) tmp[j] = y[j] + 0.5 * dt * k2[j];
            st |= rhs(0.0, tmp, u, p, k3);
            for (j = 0; j < 2 * {NQ}; ++j) tmp[j] = y[j] + dt * k3[j];
            st |= rhs(0.0, tmp, u, p, k4);
            for (j = 0; j < 2 * {NQ}; ++j) y[j] += dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }}
        t1 = now();
        printf("%.9e %d", t1 - t0, st);
        for (j = 0; j < 2 * {NQ}; ++j) printf(" %.17g", y[j]);
        printf("\n");
    }}
    return 0;
}}
"""


def aba_c_source(model: rodgen.Model, name: str) -> str:
    """C of rodgen's articulated-body forward dynamics (rodgen.symbolic.recursive.forward_dynamics),
    printed with the code stage's CSE and printer: ``void <name>(q, qd, u, p, qdd)``."""
    from rodgen.codegen.printer import SlotPrinter
    from rodgen.codegen.straight import straight_line
    from rodgen.symbolic.recursive import forward_dynamics
    fd = forward_dynamics(model)
    temps, outs = straight_line(fd.assignments, list(fd.qdd))
    slots: dict[sp.Basic, str] = {}
    for group, syms in (("q", fd.q), ("qd", fd.qd), ("u", fd.u), ("p", fd.params)):
        slots.update({s_: f"{group}[{i}]" for i, s_ in enumerate(syms)})
    slots.update({s_: f"t{i}" for i, (s_, _) in enumerate(temps)})
    pr = SlotPrinter(slots, routine=name)
    body = [f"    const double t{i} = {pr.doprint(ex)};" for i, (_, ex) in enumerate(temps)]
    body += [f"    qdd[{i}] = {pr.doprint(ex)};" for i, ex in enumerate(outs)]
    return ("#include <math.h>\n"
            f"void {name}(const double *q, const double *qd, const double *u, const double *p, double *qdd);\n"
            f"void {name}(const double *q, const double *qd, const double *u, const double *p, double *qdd)\n"
            "{\n    (void)u; (void)p;\n" + "\n".join(body) + "\n}\n")


class CHarness:
    """The generated C of a model compiled with a small timing main() (no Python involved)."""

    def __init__(self, eqs: rodgen.Equations, y0: np.ndarray, *, cflags: Optional[list[str]] = None,
                 forward: str = "cholesky") -> None:
        from rodgen.codegen import CodegenOptions, lower, render
        files = render(lower(eqs, options=CodegenOptions(forward=forward)))
        self.dir = Path(tempfile.mkdtemp(prefix="rodgen_harness_"))
        for fname, text in files.files.items():
            (self.dir / fname).write_text(text)
        name = files.spec.prefix
        nq, nu, npar = len(eqs.q), max(len(eqs.u), 1), max(len(eqs.params), 1)
        pvals = [eqs.param_values[s] for s in eqs.params] or [0.0]

        def arr(v: Any) -> str:
            return "{" + ", ".join(repr(float(x)) for x in v) + "}"
        src = HARNESS.format(name=name, NQ=nq, NU=nu, NP=npar, P=arr(pvals), Y0=arr(y0))
        (self.dir / "harness.c").write_text(src)
        try:
            (self.dir / "aba.c").write_text(aba_c_source(eqs.model, "aba_fd"))
            self.has_aba = True
        except rodgen.DerivationError:     # masses at fractions of variable segments: no ABA; a stub
            (self.dir / "aba.c").write_text("void aba_fd(const double *q, const double *qd, const double *u, "
                                            "const double *p, double *qdd);\nvoid aba_fd(const double *q, "
                                            "const double *qd, const double *u, const double *p, double *qdd)"
                                            "\n{ (void)q; (void)qd; (void)u; (void)p; (void)qdd; }\n")
            self.has_aba = False
        self.exe = self.dir / "harness"
        cmd = [CC, *(cflags or C_FLAGS), "-o", str(self.exe), "harness.c", f"{name}.c", "rodgen_linalg.c", "aba.c",
               "-lm"]
        proc = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"harness failed to compile: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
        self.c_bytes = len(files.source)

    def forward_dynamics_seconds(self, reps: int = 200000, repeat: int = 5, *, aba: bool = False) -> float:
        """Seconds per call of the generated forward dynamics (``aba``: of the articulated-body one)."""
        runs = []
        for _ in range(repeat):
            out = subprocess.run([str(self.exe), "abafd" if aba else "fd", str(reps)], capture_output=True,
                                 text=True, check=True)
            runs.append(float(out.stdout.split()[0]))
        return statistics.median(runs)

    def rk4(self, steps: int, repeat: int = 5, *, aba: bool = False) -> tuple[float, np.ndarray]:
        """(seconds, final state) of ``steps`` RK4 steps of 1 ms from y0, all in C."""
        runs, final = [], None
        for _ in range(repeat):
            out = subprocess.run([str(self.exe), "abark4" if aba else "rk4", str(steps)], capture_output=True,
                                 text=True, check=True)
            vals = out.stdout.split()
            runs.append(float(vals[0]))
            final = np.array([float(v) for v in vals[2:]])
        return statistics.median(runs), final  # type: ignore[return-value]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}×" if x < 10 else f"{x:.0f}×"


if __name__ == "__main__":  # pragma: no cover
    json.dump(machine(), sys.stdout, indent=2)
