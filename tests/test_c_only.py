"""The generated C stands alone: a main.c includes the header, links the .c files, no Python.

It builds with ``gcc -std=c99 -Wall -Wextra -Werror -pedantic`` and prints the
forward dynamics of a state, which must equal the compiled Python module's; a
second main.c runs the runtime's RK4 on the model's table, checked against
scipy's DOP853 on the same right-hand side.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES
from rodgen.codegen import CodegenOptions, generate
from rodgen.model.core import Joint, Model, PointMass

CC = shutil.which("gcc") or shutil.which("cc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
#: Both sides run the same C compiled with the same optimisation and no fast math; only
#: the last bit may differ if the compilers schedule differently.
RTOL_SAME_C = 1e-14

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

MAIN_C = r"""
#include <stdio.h>
#include "{prefix}.h"

int main(void)
{{
    double q[{M}_NQ] = {M}_INITIAL_Q;
    double p[{M}_NP] = {M}_DEFAULT_PARAMETERS;
    double qd[{M}_NQ], u[{M}_NU], qdd[{M}_NQ];
    int i, status;
    for (i = 0; i < {M}_NQ; ++i) {{
        qd[i] = 0.1 * (i + 1);
    }}
    for (i = 0; i < {M}_NU; ++i) {{
        u[i] = 0.5 - 0.25 * i;
    }}
    status = {prefix}_forward_dynamics(0.0, q, qd, u, p, qdd);
    printf("%d\n", status);
    for (i = 0; i < {M}_NQ; ++i) {{
        printf("%.17g\n", qdd[i]);
    }}
    return status;
}}
"""


def test_main_c_builds_strict_and_matches_module(tmp_path: Path, build_dir: Path) -> None:
    model = rodgen.load(EXAMPLES / "exo5.yaml")
    eqs = rodgen.derive(model, method="recursive")
    files = generate(eqs, tmp_path)
    prefix, macro = files.spec.prefix, files.spec.macro
    (tmp_path / "main.c").write_text(MAIN_C.format(prefix=prefix, M=macro))
    cmd = [CC, *STRICT, "-O2", "main.c", *sorted(n for n in files.files if n.endswith(".c")), "-o", "main", "-lm"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.split()
    assert lines[0] == "0"
    from_c = np.array([float(x) for x in lines[1:]])

    sys_ = rodgen.build(eqs, build_dir=build_dir)
    q = sys_.initial_state()[: sys_.nq]
    qd = 0.1 * np.arange(1, sys_.nq + 1)
    u = 0.5 - 0.25 * np.arange(sys_.nu)
    np.testing.assert_allclose(from_c, sys_.forward_dynamics(q, qd, u), rtol=RTOL_SAME_C, atol=0)


SIM_C = r"""
#include <stdio.h>
#include "{prefix}.h"

int main(void)
{{
    const rodgen_model *m = {prefix}_model();
    double q0[{M}_NQ] = {M}_INITIAL_Q;
    double y0[2 * {M}_NQ], storage[RODGEN_SIM_STORAGE({M}_NQ)];
    double t_out[4], y_out[4 * 2 * {M}_NQ], u_out[4 * {M}_NU + 1];
    rodgen_sim_options o = {{0}};
    rodgen_input in = {{0}};
    rodgen_sim_state s;
    long n = 0, i;
    int status;
    for (i = 0; i < {M}_NQ; ++i) {{
        y0[i] = q0[i] + 0.1;
        y0[{M}_NQ + i] = 0.0;
    }}
    o.method = RODGEN_RK4;
    o.t_end = 0.5;
    o.dt = 1e-3;
    o.store_every = 1000000;
    in.kind = RODGEN_INPUT_CONSTANT;
    rodgen_sim_start(&s, m, 0.0, y0, storage);
    status = rodgen_simulate(m, &o, &in, m->default_p, &s, 4, t_out, y_out, u_out, &n);
    printf("%d %ld %.17g\n", status, s.steps, s.t);
    for (i = 0; i < 2 * {M}_NQ; ++i) {{
        printf("%.17g\n", s.y[i]);
    }}
    return status;
}}
"""


def test_runtime_simulates_from_c_alone(tmp_path: Path, build_dir: Path) -> None:
    """RK4 of the C runtime on the model's table, from a main.c, agrees with scipy's DOP853."""
    from scipy.integrate import solve_ivp
    model = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    files = generate(model, tmp_path)
    prefix, macro = files.spec.prefix, files.spec.macro
    (tmp_path / "sim.c").write_text(SIM_C.format(prefix=prefix, M=macro))
    cmd = [CC, *STRICT, "-O2", "sim.c", *sorted(n for n in files.files if n.endswith(".c")), "-o", "sim", "-lm"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    run = subprocess.run([str(tmp_path / "sim")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    head, *rest = run.stdout.strip().split("\n")
    status, steps, t_end = head.split()
    assert (status, steps, float(t_end)) == ("0", "500", 0.5)
    y_c = np.array([float(x) for x in rest])
    sys_ = rodgen.build(model, build_dir=build_dir)
    y0 = sys_.initial_state()
    y0[: sys_.nq] += 0.1
    ref = solve_ivp(sys_.ode(), (0.0, 0.5), y0, method="DOP853", rtol=1e-12, atol=1e-12)
    # RK4 at dt = 1 ms: global error O(dt^4), about 1e-10 here
    np.testing.assert_allclose(y_c, ref.y[:, -1], rtol=0, atol=1e-8)


def passive_model() -> Model:
    """No inputs and no parameters: NU = NP = 0 must still give valid, warning-free C."""
    m = Model("passive")
    lk = m.link("arm", joint=Joint(actuated=False))
    lk.rigid("rod", 1.0, masses=[PointMass(2.0, fraction=1.0)])
    return m


@pytest.mark.parametrize("max_statements", [2000, 10])
def test_edge_models_compile_strict(tmp_path: Path, max_statements: int) -> None:
    """Models without inputs or parameters, and routines split into parts, compile without warnings."""
    for model in (passive_model(), rodgen.load(EXAMPLES / "exo5.yaml")):
        out = tmp_path / model.name
        files = generate(model, out, method="recursive", options=CodegenOptions(max_statements=max_statements))
        cmd = [CC, *STRICT, "-c", files.spec.source, "-o", "model.o"]
        res = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        assert res.returncode == 0, f"{model.name}: {' '.join(cmd)}\n{res.stderr}"
        if max_statements == 10 and model.name == "exo5":
            assert any(r.parts for r in files.spec.routines)


def test_header_is_cplusplus_clean(tmp_path: Path) -> None:
    """The header carries include guards and extern "C" (checked by compiling it as C++ if g++ exists)."""
    files = generate(rodgen.load(EXAMPLES / "double_pendulum.yaml"), tmp_path)
    header = files.header
    assert f"#ifndef RODGEN_GENERATED_{files.spec.macro}_H" in header and 'extern "C" {' in header
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "use.cpp").write_text(f'#include "{files.spec.header}"\n'
                                      f'int main() {{ return {files.spec.macro}_NQ - 2; }}\n')
    res = subprocess.run([cxx, "-Wall", "-Wextra", "-Werror", "-pedantic", "use.cpp", "-o", "use"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
