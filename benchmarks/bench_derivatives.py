"""Native derivatives against Pinocchio's C++ library: RHS Jacobian, inverse-dynamics derivatives, forward
dynamics and mass matrix, same states, same compiler flags, one run.

For each robot the script generates rodgen's C (``rodgen.generate`` with the Jacobian) into a temporary
folder, writes a small C glue file that includes the generated ``<prefix>.c`` (so its static
``inverse_dynamics_partials``/``inverse_dynamics_tangent`` are reachable without a new public routine) and
links it with ``derivatives_harness.cpp``, which loads the same robot into Pinocchio (the model serialised
from Python) and times, on the same random states, interleaved:

    <prefix>_rhs_jacobian                        vs  pinocchio::computeABADerivatives
    partials + 2 nv tangents (d tau/d q, d tau/d v)  vs  pinocchio::computeRNEADerivatives
    <prefix>_forward_dynamics                    vs  pinocchio::aba
    <prefix>_mass_matrix                         vs  pinocchio::crba
    the RHS Jacobian with one Cholesky solve per column (as generated before the block solve), in the glue
                                                 vs  pinocchio::computeABADerivatives

Both sides are compiled with ``-O3 -march=native`` (C: gcc -std=c99 -ffp-contract=fast, the multiply-adds
fused as g++ fuses them by default; C++: g++ -std=c++17 -DNDEBUG, as a release build of Pinocchio is, and as the
other native harnesses are); Pinocchio's
algorithms are instantiated in the harness (its precompiled instantiations are not used). Before timing, the
harness prints the largest difference of every result against Pinocchio's over all states.

Needs: the ``pin`` wheel (headers and libraries under site-packages/cmeel.prefix), example-robot-data,
Eigen 3 headers (``apt-get install -y libeigen3-dev``, or a cmeel eigen package), g++ and gcc.
The harness object is compiled once (about 5 minutes: Pinocchio's templates) and kept in a cache folder.

    python benchmarks/bench_derivatives.py [--robots ur5 panda ...] [--rounds 15] [--states 32] [--python]
        [--callgrind] [--node-loop-min N]

``--callgrind`` also counts the instructions per call of the Jacobian and the inverse-dynamics derivatives on both
sides (valgrind's callgrind; both sides rebuilt with ``-march=x86-64-v3`` added, a second harness object, since
valgrind stops at AVX-512). ``--node-loop-min`` sets ``CodegenOptions.node_loop_min`` for the native rows.

``--python`` also times ``robot.rhs_jacobian`` from Python (the library as ``rodgen.build`` compiles it)
against ``pinocchio.computeABADerivatives`` through Pinocchio's bindings, one state per call.

Writes ``results/derivatives.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import math
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions  # noqa: E402
from rodgen.toolchain.compiler import CONTRACT_FLAG  # noqa: E402

from common import machine, write_json  # noqa: E402

CFLAGS = ["-O3", "-march=native"]
#: the C side's language flags: -std=c99 alone would not fuse multiply-adds, which g++ does by default (rodgen.build
#: compiles with both, see rodgen.toolchain.compiler.CONTRACT_FLAG)
C_STD = ["-std=c99", CONTRACT_FLAG]
PIN_DEFINES = ["-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
               "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
TARGETS = {"jacobian": 0.5, "id_derivatives": 0.5}


# ---------------------------------------------------------------------------------------------- toolchain
def prefix_dirs() -> tuple[Path, Path]:
    """(include, lib) of the cmeel prefix of the ``pin`` wheel; SystemExit naming what is missing."""
    site = Path(sysconfig.get_paths()["purelib"])
    root = site / "cmeel.prefix"
    if not (root / "include" / "pinocchio" / "algorithm" / "aba-derivatives.hpp").exists():
        raise SystemExit(f"Pinocchio's C++ headers are not under {root / 'include'}: pip install pin")
    if not (root / "lib" / "libboost_serialization.so").exists():
        raise SystemExit(f"libboost_serialization.so is not under {root / 'lib'} (it comes with the pin wheel)")
    return root / "include", root / "lib"


def eigen_dir(include: Path) -> Path:
    for cand in (include / "eigen3", Path("/usr/include/eigen3"), Path("/usr/local/include/eigen3")):
        if (cand / "Eigen" / "Core").exists():
            return cand
    raise SystemExit("Eigen 3 headers not found (looked in the cmeel prefix and /usr/include/eigen3): "
                     "apt-get install -y libeigen3-dev")


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"{name} is not on PATH: the benchmark compiles C with gcc and C++ with g++")
    return path


def compiler_version(cc: str) -> str:
    return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def harness_object(include: Path, eigen: Path, source: str = "derivatives_harness.cpp",
                   flags: tuple[str, ...] = ()) -> Path:
    """A C++ harness against Pinocchio (``source`` under benchmarks/) compiled once per source and flags, kept in a
    cache folder."""
    src = HERE / source
    cmd = [tool("g++"), *CFLAGS, *flags, "-std=c++17", *PIN_DEFINES, f"-I{include}", f"-I{eigen}", "-c", str(src)]
    # keyed by the source's text and the flags, not its path: another checkout reuses the object
    key = hashlib.sha256((src.read_text() + " ".join(c if c != str(src) else src.name for c in cmd)).encode()
                         ).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"rodgen_bench_{src.stem.replace('_harness', '')}_{key}"
    obj = cache / f"{src.stem}.o"
    if obj.exists():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    print(f"compiling {src.name} against Pinocchio (once; a few minutes) ...", flush=True)
    proc = subprocess.run([*cmd, "-o", str(obj) + ".tmp"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the harness failed to compile:\n{' '.join(cmd)}\n{proc.stderr[-4000:]}")
    Path(str(obj) + ".tmp").rename(obj)
    return obj


GLUE_HEAD = """\
/* benchmark glue: the generated model with its static routines in reach */
#include "{prefix}.c"

int bench_forward(const double *q, const double *v, const double *u, const double *p, double *qdd)
{{ return {prefix}_forward_dynamics(0.0, q, v, u, p, qdd); }}

void bench_mass(const double *q, const double *p, double *M)
{{ {prefix}_mass_matrix(q, p, M); }}

int bench_jacobian(const double *q, const double *v, const double *u, const double *p, double *J)
{{ return {prefix}_rhs_jacobian(0.0, q, v, u, p, J); }}
"""

#: the derivatives of a model whose rhs_jacobian runs 2 nv tangents of the inverse dynamics (planar models,
#: coupled coordinates; every model before the derivative of the recursive algorithm)
GLUE_TANGENT = """
/* d tau/d q and d tau/d v (row-major nv x nv) of tau = M a + bias at u = 0: the partials once, one
   tangent per direction, as rhs_jacobian does */
void bench_id_derivatives(const double *q, const double *v, const double *a, const double *p, double *dq,
                          double *dv)
{{
    double pd[{npd}], dx[{nq} + {nv}], dg[{nv}], e[{nv}], u[{nu1}];
    int i, k;
    for (i = 0; i < {nu1}; ++i) u[i] = 0.0;
    for (i = 0; i < {nv}; ++i) e[i] = 0.0;
    for (i = 0; i < {nq} + {nv}; ++i) dx[i] = 0.0;
    {prefix}_inverse_dynamics_partials(0.0, q, v, a, u, p, pd);
    for (k = 0; k < 2 * {nv}; ++k) {{
        for (i = 0; i < {nq} + {nv}; ++i) dx[i] = 0.0;
        if (k < {nv}) {{
{seed_q}
        }} else {{
            dx[{nq} + k - {nv}] = 1.0;
        }}
        {prefix}_inverse_dynamics_tangent(0.0, q, v, a, u, p, pd, dx, dg);
        for (i = 0; i < {nv}; ++i) {{
            if (k < {nv}) dq[i * {nv} + k] = dg[i]; else dv[i * {nv} + k - {nv}] = dg[i];
        }}
    }}
}}

/* the RHS Jacobian as rhs_jacobian computed it before the block solve: per column one tangent and one
   Cholesky solve (rodgen_cholesky_solve); the lower half of J only */
int bench_jacobian_per_column(const double *q, const double *v, const double *u, const double *p, double *J)
{{
    double M[{nv} * {nv}], qdd[{nv}], pd[{npd}], dx[{nq} + {nv}], x[{nv}], e[{nv}];
    const int n = {nv};
    int i, k, status = {prefix}_forward_dynamics(0.0, q, v, u, p, qdd);
    if (status != RODGEN_OK) return status;
    {prefix}_mass_matrix(q, p, M);
    status = rodgen_cholesky(M, n);
    if (status != RODGEN_OK) return status;
    {prefix}_inverse_dynamics_partials(0.0, q, v, qdd, u, p, pd);
    for (i = 0; i < n; ++i) e[i] = 0.0;
    for (k = 0; k < 2 * n; ++k) {{
        for (i = 0; i < {nq} + n; ++i) dx[i] = 0.0;
        if (k < n) {{
{seed_q}
        }} else {{
            dx[{nq} + k - n] = 1.0;
        }}
        {prefix}_inverse_dynamics_tangent(0.0, q, v, qdd, u, p, pd, dx, x);
        for (i = 0; i < n; ++i) x[i] = -x[i];
        rodgen_cholesky_solve(M, x, n);
        for (i = 0; i < n; ++i) J[(n + i) * 2 * n + k] = x[i];
    }}
    return RODGEN_OK;
}}
"""

#: the derivatives of a model with ``inverse_dynamics_derivatives`` (the derivative of the recursive
#: Newton-Euler algorithm, nv x 2 nv row-major)
GLUE_RNEA = """
/* d tau/d q and d tau/d v (row-major nv x nv) of tau = M a + bias at u = 0 */
void bench_id_derivatives(const double *q, const double *v, const double *a, const double *p, double *dq,
                          double *dv)
{{
    double dg[2 * {nv} * {nv}], u[{nu1}], M[{nv} * {nv}], sc[{nsc}];
    int i, k;
    (void)M;
    (void)sc;
    for (i = 0; i < {nu1}; ++i) u[i] = 0.0;
{trig}
    {prefix}_inverse_dynamics_derivatives(0.0, q, v, a, u, p, {sc_arg}dg{mass_arg});
    for (i = 0; i < {nv}; ++i)
        for (k = 0; k < {nv}; ++k) {{
            dq[i * {nv} + k] = dg[i * 2 * {nv} + k];
            dv[i * {nv} + k] = dg[i * 2 * {nv} + {nv} + k];
        }}
}}

/* the RHS Jacobian with one Cholesky solve per column (rodgen_cholesky_solve) instead of the block solve;
   the lower half of J only */
int bench_jacobian_per_column(const double *q, const double *v, const double *u, const double *p, double *J)
{{
    double M[{nv} * {nv}], Mg[{nv} * {nv}], qdd[{nv}], dg[2 * {nv} * {nv}], x[{nv}], sc[{nsc}];
    const int n = {nv};
    int i, k, status = {prefix}_forward_dynamics(0.0, q, v, u, p, qdd);
    if (status != RODGEN_OK) return status;
    {prefix}_mass_matrix(q, p, M);
    status = rodgen_cholesky(M, n);
    (void)Mg;
    (void)sc;
    if (status != RODGEN_OK) return status;
{trig}
    {prefix}_inverse_dynamics_derivatives(0.0, q, v, qdd, u, p, {sc_arg}dg{mass_arg2});
    for (k = 0; k < 2 * n; ++k) {{
        for (i = 0; i < n; ++i) x[i] = -dg[i * 2 * n + k];
        rodgen_cholesky_solve(M, x, n);
        for (i = 0; i < n; ++i) J[(n + i) * 2 * n + k] = x[i];
    }}
    return RODGEN_OK;
}}
"""


# ---------------------------------------------------------------------------------------------- robots
def robot_file(relative: str) -> str:
    dist = importlib.metadata.distribution("example-robot-data")
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("robots/" + relative):
            return str(dist.locate_file(f))
    raise SystemExit(f"{relative} is not among the files of example-robot-data (pip install example-robot-data)")


def chain(n: int) -> rodgen.SpatialModel:
    """n revolute links, axes alternating z and y, every body off its axis (as bench_spatial's chain12)."""
    m = rodgen.SpatialModel(f"chain{n}")
    parent = None
    for i in range(n):
        lk = m.link(f"c{i}", parent, axis=(0, 0, 1) if i % 2 == 0 else (0, 1, 0),
                    xyz=(0.25, 0, 0) if parent else (0, 0, 0))
        lk.body(1.0 + 0.05 * i, (0.12, 0.01, -0.02), (0.004, 1e-4, -2e-4, 0.011, 3e-4, 0.012))
        parent = lk.name
    return m


def from_urdf_pair(relative: str, *, keep: Callable[[str], bool] = lambda j: True,
                   floating: bool = False) -> tuple[rodgen.SpatialModel, Any]:
    """rodgen's and Pinocchio's model of a URDF, the joints for which ``keep`` is false locked at 0."""
    import pinocchio as pin
    path = robot_file(relative)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    names = [nm for nm in pm.names[1:] if nm != "root_joint"]
    locked = [nm for nm in names if not keep(nm)]
    if locked:
        pm = pin.buildReducedModel(pm, [pm.getJointId(nm) for nm in locked], pin.neutral(pm))
    model = rodgen.from_urdf(path, floating=floating, lock={nm: 0.0 for nm in locked} or None, mimic=False)
    return model, pm


def robots() -> dict[str, Callable[[], tuple[rodgen.SpatialModel, Any]]]:
    from bench_spatial import pinocchio_model

    def chain_pair(n: int) -> Callable[[], tuple[rodgen.SpatialModel, Any]]:
        return lambda: (chain(n), pinocchio_model(chain(n)))
    return {
        "ur5": lambda: from_urdf_pair("ur_description/urdf/ur5_robot.urdf"),
        "panda": lambda: from_urdf_pair("panda_description/urdf/panda.urdf", keep=lambda j: "finger" not in j),
        "talos_legs": lambda: from_urdf_pair("talos_data/robots/talos_reduced.urdf", keep=lambda j: "leg" in j),
        "solo12": lambda: from_urdf_pair("solo_description/robots/solo12.urdf", floating=True),
        **{f"chain{n}": chain_pair(n) for n in (6, 12, 24, 36)},
    }


# ---------------------------------------------------------------------------------------------- one robot
def coordinate_maps(robot_coords: list[str], nq: int, nv: int, pm: Any) -> tuple[list[int], list[int]]:
    """(qi, vi): rodgen's configuration entry i is Pinocchio's qi[i], its velocity i Pinocchio's vi[i]."""
    if nq != nv:   # floating base first: the free flyer's 7 / 6 entries, then one per joint
        joints = robot_coords[7:]
        return (list(range(7)) + [pm.idx_qs[pm.getJointId(c)] for c in joints],
                list(range(6)) + [pm.idx_vs[pm.getJointId(c)] for c in joints])
    ids = [pm.getJointId(c) for c in robot_coords]
    if any(i >= pm.njoints for i in ids):   # the models built from the expanded tree name joints by node
        ids = list(range(1, nq + 1))
    return [pm.idx_qs[i] for i in ids], [pm.idx_vs[i] for i in ids]


#: added to both sides' flags for ``--callgrind``: AVX2 and FMA, no AVX-512 (which valgrind stops at)
CALLGRIND_FLAGS = ["-march=x86-64-v3"]
#: (rodgen's function, Pinocchio's) whose instructions per call ``--callgrind`` counts
CALLGRIND_PAIRS = {"jacobian": ("bench_jacobian", "computeABADerivatives"),
                   "id_derivatives": ("bench_id_derivatives", "computeRNEADerivatives")}


def instructions(exe: Path, data: Path, states: int) -> dict[str, dict[str, float]]:
    """Instructions per call (callgrind, inclusive) of each pair of :data:`CALLGRIND_PAIRS`: the harness run with
    no timing round, so each function runs once per state in its agreement check."""
    out = data.parent / "callgrind.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), str(data), "0"],
                   capture_output=True, text=True, check=True)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                         capture_output=True, text=True, check=True).stdout

    def count(fn: str) -> float:
        best = 0
        for line in ann.splitlines():
            m = re.match(r"^\s*([\d,]+) \([ \d.]+%\)\s+\*?\s*\S*:(.*)$", line)
            if m and re.search(rf"\b{fn}\b", m.group(2).split("(")[0].split("[")[0]):
                best = max(best, int(m.group(1).replace(",", "")))
        return best / states
    rows = {}
    for key, (ours, theirs) in CALLGRIND_PAIRS.items():
        r, p_ = count(ours), count(theirs)
        rows[key] = {"rodgen": r, "pinocchio": p_, "ratio": r / p_ if p_ else float("nan")}
    return rows


def run_robot(name: str, model: rodgen.SpatialModel, pm: Any, obj: Path, libdir: Path, *, states: int,
              rounds: int, cc: str, cxx: str, callgrind: bool = False,
              codegen: CodegenOptions = CodegenOptions(jacobian=True)) -> dict[str, Any]:
    import pinocchio as pin
    work = Path(tempfile.mkdtemp(prefix="rodgen_derivbench_"))
    try:
        t0 = time.perf_counter()
        eqs = rodgen.derive(model)
        files = rodgen.generate(eqs, work, options=codegen)
        t_gen = time.perf_counter() - t0
        prefix = files.spec.prefix
        src = (work / f"{prefix}.c").read_text()
        nq, nv, nu = len(eqs.q), len(eqs.qd), len(eqs.u)
        body = src[src.index(f"{prefix}_rhs_jacobian(double t"):]
        found = re.search(r"double pd\[(\d+)\]", body)
        npd = int(found.group(1)) if found else 1
        if f"{prefix}_configuration_rate(" in src and nq != nv:
            seed_q = (f"            e[k] = 1.0;\n            {prefix}_configuration_rate(q, e, dx);\n"
                      f"            e[k] = 0.0;")
        else:
            seed_q = "            dx[k] = 1.0;"
        rnea = f"{prefix}_inverse_dynamics_derivatives(" in src
        glue = GLUE_HEAD + (GLUE_RNEA if rnea else GLUE_TANGENT)
        # where the derivative gives M too (as Pinocchio's computeRNEADerivatives does): its last argument
        mass = files.spec.mass_from_derivative()
        # where the derivative reads the sines and cosines of jacobian_terms: computed here, as part of its time
        trig = files.spec.shared_trig()
        (work / "glue.c").write_text(glue.format(
            prefix=prefix, npd=npd, nq=nq, nv=nv, nu1=max(nu, 1), mass_arg=", M" if mass else "",
            mass_arg2=", Mg" if mass else "", seed_q=seed_q, nsc=max(len(trig), 1), sc_arg="sc, " if trig else "",
            trig="\n".join(f"    sc[{k}] = {f}(q[{i}]);" for k, (f, i) in enumerate(trig))))
        runtime_c = [f for f in files.files if f.endswith(".c") and f != f"{prefix}.c"]

        def link(harness: Path, stem: str, flags: tuple[str, ...] = ()) -> Path:
            objs = []
            for f in ["glue.c", *runtime_c]:
                o = work / (Path(f).stem + stem + ".o")
                proc = subprocess.run([cc, *CFLAGS, *flags, *C_STD, "-c", f, "-o", str(o)], cwd=work,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{name}: {f} failed to compile:\n{proc.stderr[-3000:]}")
                objs.append(str(o))
            exe = work / f"harness{stem}"
            proc = subprocess.run([cxx, *CFLAGS, *flags, "-o", str(exe), str(harness), *objs, f"-L{libdir}",
                                   f"-Wl,-rpath,{libdir}", "-lboost_serialization", "-lm"], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{name}: the harness failed to link:\n{proc.stderr[-3000:]}")
            return exe
        exe = link(obj, "")

        # states: Pinocchio's random configurations, normal velocities, torques and accelerations
        qi, vi = coordinate_maps(list(model_coordinates(eqs)), nq, nv, pm)
        assert sorted(qi) == list(range(nq)) and sorted(vi) == list(range(nv)), (name, qi, vi)
        rng = np.random.default_rng(0)
        pin.seed(0)
        lines = [str(work / "model.bin"), f"{nq} {nv} {nu} {len(eqs.params)} {states}", " ".join(map(str, vi)),
                 " ".join(repr(float(eqs.param_values[s])) for s in eqs.params)]
        pm.saveToBinary(str(work / "model.bin"))
        lo = np.where(np.isfinite(pm.lowerPositionLimit), pm.lowerPositionLimit, -1.0)
        hi = np.where(np.isfinite(pm.upperPositionLimit), pm.upperPositionLimit, 1.0)
        lo, hi = np.maximum(lo, -3.0), np.minimum(hi, 3.0)
        for _ in range(states):
            pq = pin.randomConfiguration(pm, lo, hi)
            pv = rng.normal(size=nv)
            pa = rng.normal(size=nv)
            tau = np.zeros(nv)
            if nu:
                act = rng.normal(size=nu)
                (tau[vi[nv - nu:]]) = act     # the inputs drive the last nu velocities (all joints past a free base)
            u = tau[vi][nv - nu:] if nu else np.zeros(0)
            rq, rv, ra = pq[qi], pv[vi], pa[vi]
            for arr in (pq, pv, tau, pa, rq, rv, u, ra):
                lines.append(" ".join(repr(float(x)) for x in arr))
        (work / "data.txt").write_text("\n".join(lines) + "\n")
        proc = subprocess.run([str(exe), str(work / "data.txt"), str(rounds)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: the harness failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        diffs, times, status = {}, {}, None
        for line in proc.stdout.splitlines():
            w = line.split()
            if w[0] == "diff":
                diffs[w[1]] = float(w[2])
            elif w[0] == "time":
                times[w[1]] = {"rodgen_ns": float(w[2]), "pinocchio_ns": float(w[3]),
                               "ratio": float(w[2]) / float(w[3])}
            elif w[0] == "status":
                status = int(w[1])
        row = {"model": name, "nq": nq, "nv": nv, "nu": nu, "generate_s": t_gen, "c_bytes": len(src),
               "status": status, "max_abs_difference": diffs, "times": times}
        row["targets_met"] = {k: times[k]["ratio"] <= t for k, t in TARGETS.items()}
        if callgrind:       # valgrind stops at AVX-512: both sides built again with CALLGRIND_FLAGS added
            include, _ = prefix_dirs()
            cg = harness_object(include, eigen_dir(include), flags=("-DNDEBUG", *CALLGRIND_FLAGS))
            row["instructions"] = instructions(link(cg, "_cg", tuple(CALLGRIND_FLAGS)), work / "data.txt", states)
            row["instructions"]["flags"] = [*CFLAGS, *CALLGRIND_FLAGS]     # type: ignore[assignment]
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def python_row(name: str, model: rodgen.SpatialModel, pm: Any, *, repeat: int, opt: str = "O1") -> dict[str, Any]:
    """One state per call from Python: ``robot.rhs_jacobian`` (as ``rodgen.build`` compiles it, at its default
    -O1 unless ``opt`` says otherwise) against ``pinocchio.computeABADerivatives`` through Pinocchio's bindings;
    medians of interleaved runs."""
    import statistics

    import pinocchio as pin

    from rodgen.toolchain import BuildOptions

    from common import median_time
    robot = rodgen.build(model, codegen=CodegenOptions(jacobian=True), defer_jacobian=False,
                         options=BuildOptions(optimization=opt))
    nq, nv = robot.nq, robot.nv
    qi, vi = coordinate_maps(list(robot.coordinates), nq, nv, pm)
    data = pm.createData()
    pin.seed(1)
    rng = np.random.default_rng(1)
    pq = pin.randomConfiguration(pm, np.maximum(np.where(np.isfinite(pm.lowerPositionLimit),
                                                          pm.lowerPositionLimit, -1.0), -3.0),
                                 np.minimum(np.where(np.isfinite(pm.upperPositionLimit),
                                                     pm.upperPositionLimit, 1.0), 3.0))
    pv = rng.normal(size=nv)
    q, v = pq[qi], pv[vi]
    u = np.zeros(robot.nu) if robot.nu else None
    tau = np.zeros(nv)
    J = np.asarray(robot.rhs_jacobian(q, v, u))
    pin.computeABADerivatives(pm, data, pq, pv, tau)
    diff = max(float(np.abs(J[nv:, :nv] - data.ddq_dq[np.ix_(vi, vi)]).max()),
               float(np.abs(J[nv:, nv:] - data.ddq_dv[np.ix_(vi, vi)]).max()))
    t_rod, t_pin = [], []
    for _ in range(repeat):
        t_rod.append(median_time(lambda: robot.rhs_jacobian(q, v, u), number=2000, repeat=1))
        t_pin.append(median_time(lambda: pin.computeABADerivatives(pm, data, pq, pv, tau), number=2000, repeat=1))
    one_rod, one_pin = statistics.median(t_rod), statistics.median(t_pin)
    return {"model": name, "nv": nv, "optimization": opt, "python_rhs_jacobian_us": one_rod * 1e6,
            "pinocchio_computeABADerivatives_us": one_pin * 1e6, "ratio": one_rod / one_pin,
            "max_abs_difference": diff}


def model_coordinates(eqs: Any) -> list[str]:
    return [str(s) for s in eqs.q]


def slope(rows: list[dict[str, Any]], key: str, side: str) -> float:
    x = np.log([r["nv"] for r in rows])
    y = np.log([r["times"][key][side] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=None)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--states", type=int, default=32)
    ap.add_argument("--label", default="", help="a note stored with the results (e.g. before/after a change)")
    ap.add_argument("--out", default="derivatives")
    ap.add_argument("--python", action="store_true",
                    help="also time robot.rhs_jacobian from Python (rodgen.build's flags) against "
                         "pinocchio.computeABADerivatives, one state per call")
    ap.add_argument("--python-only", action="store_true", help="only the --python rows (no C++ harness)")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions per call of the Jacobian and the inverse-dynamics derivatives on "
                         "both sides (valgrind's callgrind, the harness run once more without timing)")
    ap.add_argument("--node-loop-min", type=int, default=None,
                    help="CodegenOptions.node_loop_min for the native rows (default: the option's default)")
    ap.add_argument("--python-opt", nargs="+", default=["O1"], choices=["O1", "O2", "O3"],
                    help="the optimisation levels to build the --python rows' models at (rodgen.build's default O1)")
    args = ap.parse_args()
    args.python = args.python or args.python_only
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        raise SystemExit("pinocchio is not importable: pip install pin") from None
    table = robots()
    rows: list[dict[str, Any]] = []
    cc = cxx = ""
    if not args.python_only:
        include, libdir = prefix_dirs()
        eigen = eigen_dir(include)
        cc, cxx = tool("gcc"), tool("g++")
        obj = harness_object(include, eigen, flags=("-DNDEBUG",))     # Eigen's and Pinocchio's asserts off
    for name in [] if args.python_only else args.robots or list(table):
        model, pm = table[name]()
        extra = {} if args.node_loop_min is None else {"node_loop_min": args.node_loop_min}
        row = run_robot(name, model, pm, obj, libdir, states=args.states, rounds=args.rounds, cc=cc, cxx=cxx,
                        callgrind=args.callgrind, codegen=CodegenOptions(jacobian=True, **extra))
        rows.append(row)
        t = row["times"]
        print(f"{name:11s} nv={row['nv']:2d} | " + " | ".join(
            f"{k} {t[k]['rodgen_ns'] / 1e3:.2f}/{t[k]['pinocchio_ns'] / 1e3:.2f} us = {t[k]['ratio']:.2f}x"
            for k in ("jacobian", "jacobian_per_column", "id_derivatives", "forward", "mass")) +
            " | max diff " + " ".join(f"{k} {v:.1e}" for k, v in row["max_abs_difference"].items()), flush=True)
        if args.callgrind:
            print(f"{'':11s} instructions per call: " + " | ".join(
                f"{k} {v['rodgen']:.0f}/{v['pinocchio']:.0f} = {v['ratio']:.2f}x"
                for k, v in row["instructions"].items() if k != "flags"), flush=True)
    python_rows = []
    if args.python:
        for name, opt in [(nm, o) for nm in args.robots or list(table) for o in args.python_opt]:
            model, pm = table[name]()
            prow = python_row(name, model, pm, repeat=7, opt=opt)
            python_rows.append(prow)
            print(f"{name:11s} from Python, one state, -{opt}: rhs_jacobian {prow['python_rhs_jacobian_us']:.2f} us, "
                  f"pinocchio.computeABADerivatives {prow['pinocchio_computeABADerivatives_us']:.2f} us, "
                  f"ratio {prow['ratio']:.2f} | max diff {prow['max_abs_difference']:.1e}", flush=True)
    chains = [r for r in rows if r["model"].startswith("chain")]
    slopes = {}
    if len(chains) >= 2:
        for k in ("jacobian", "jacobian_per_column", "id_derivatives", "forward", "mass"):
            slopes[k] = {"rodgen": slope(chains, k, "rodgen_ns"), "pinocchio": slope(chains, k, "pinocchio_ns")}
        print("log-log slope with n over the chains: " + ", ".join(
            f"{k} rodgen {v['rodgen']:.2f} pinocchio {v['pinocchio']:.2f}" for k, v in slopes.items()))
    write_json(args.out, {"machine": machine(), "cflags": CFLAGS,
                          "c_compiler": compiler_version(cc) if cc else "",
                          "cxx_compiler": compiler_version(cxx) if cxx else "",
                          "pinocchio": importlib.metadata.version("pin"),
                          "label": args.label, "states": args.states, "rounds": args.rounds,
                          "node_loop_min": args.node_loop_min, "rows": rows,
                          "chain_slopes": slopes, "targets": TARGETS, "python": python_rows})
    if rows and not math.isfinite(sum(r["times"]["jacobian"]["ratio"] for r in rows)):
        raise SystemExit("a timing is not finite")


if __name__ == "__main__":
    main()
