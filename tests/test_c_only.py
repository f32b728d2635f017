"""The generated C stands alone: a main.c includes the header, links the .c, no Python.

It builds with ``gcc -std=c99 -Wall -Wextra -Werror -pedantic`` and prints the
forward dynamics of a state, which must equal the compiled Python module's.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rodgen
import rodgen.build
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
    status = {prefix}_forward_dynamics(q, qd, u, p, qdd);
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
    cmd = [CC, *STRICT, "-O2", "main.c", f"{prefix}.c", "-o", "main", "-lm"]
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
    assert f"#ifndef RODGEN_{files.spec.macro}_H" in header and 'extern "C" {' in header
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "use.cpp").write_text(f'#include "{files.spec.header}"\n'
                                      f'int main() {{ return {files.spec.macro}_NQ - 2; }}\n')
    res = subprocess.run([cxx, "-Wall", "-Wextra", "-Werror", "-pedantic", "use.cpp", "-o", "use"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
