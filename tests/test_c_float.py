"""Code in float for microcontrollers: every number, literal and math function is single precision
(gcc's -Wdouble-promotion finds no double), and the results agree with double precision within
float tolerance (the double pendulum's closed form; exo5 against the double-precision build)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_build_warm import closed_form_mass_matrix

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import CodegenOptions, generate
from rodgen.errors import BuildError, CodegenError

CC = shutil.which("gcc") or shutil.which("cc")
#: -Wdouble-promotion: a float promoted to double anywhere (a double literal, a double math function) fails
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wdouble-promotion"]
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

MAIN_C = r"""
#include <stdio.h>
#include "{prefix}.h"

int main(void)
{{
    float q[{M}_NQ] = {M}_INITIAL_Q;
    float p[{M}_NP] = {M}_DEFAULT_PARAMETERS;
    float qd[{M}_NQ], u[{M}_NU], qdd[{M}_NQ], M[{M}_NQ * {M}_NQ];
    int i, status;
    for (i = 0; i < {M}_NQ; ++i) {{
        qd[i] = 0.1f * (float)(i + 1);
    }}
    for (i = 0; i < {M}_NU; ++i) {{
        u[i] = 0.5f - 0.25f * (float)i;
    }}
    status = {prefix}_forward_dynamics(0.0, q, qd, u, p, qdd);
    {prefix}_mass_matrix(q, p, M);
    printf("%d\n", status);
    for (i = 0; i < {M}_NQ; ++i) {{
        printf("%.9g\n", (double)qdd[i]);
    }}
    for (i = 0; i < {M}_NQ * {M}_NQ; ++i) {{
        printf("%.9g\n", (double)M[i]);
    }}
    return status;
}}
"""


def run_float(tmp_path: Path, model: rodgen.Model, **options: object) -> tuple[str, np.ndarray, np.ndarray]:
    files = generate(model, tmp_path, options=CodegenOptions(real="float", **options))  # type: ignore[arg-type]
    prefix, macro = files.spec.prefix, files.spec.macro
    assert f"{prefix}_model(void)" not in files.header
    assert not re.search(r"\bdouble\b", files.source.split("*/", 1)[1])
    (tmp_path / "main.c").write_text(MAIN_C.format(prefix=prefix, M=macro))
    cmd = [CC, *STRICT, "-O2", "main.c", f"{prefix}.c", "-o", "main", "-lm"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    v = np.array([float(x) for x in run.stdout.split()[1:]])
    n = files.spec.nq
    return files.source, v[:n], v[n:].reshape(n, n)


def test_float_double_pendulum_cholesky_matches_closed_form(tmp_path: Path) -> None:
    source, qdd, M = run_float(tmp_path, rodgen.load(EXAMPLES / "double_pendulum.yaml"), forward="cholesky")
    assert "sinf(" in source and "double_pendulum_cholesky(M" in source
    q, qd, u = np.array([-1.0, 0.5]), np.array([0.1, 0.2]), np.array([0.5, 0.25])
    M_exact = closed_form_mass_matrix(q[1])
    np.testing.assert_allclose(M, M_exact, rtol=2e-6)
    # the rest of the dynamics from the double-precision build (itself checked against closed forms elsewhere)
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=tmp_path / "b")
    exact = robot.forward_dynamics(q, qd, u)
    np.testing.assert_allclose(qdd, exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max())


def test_float_exo5_articulated_body_agrees_with_double(tmp_path: Path, build_dir: Path) -> None:
    source, qdd, M = run_float(tmp_path, rodgen.load(EXAMPLES / "exo5.yaml"))
    assert "exo5_articulated(" in source
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir)
    q = robot.initial_state()[: robot.nq]
    qd = 0.1 * np.arange(1, robot.nq + 1)
    u = 0.5 - 0.25 * np.arange(robot.nu)
    exact = robot.forward_dynamics(q, qd, u)
    assert not np.allclose(qdd, exact, rtol=1e-12, atol=0)       # it really is single precision
    np.testing.assert_allclose(qdd, exact, rtol=1e-4, atol=1e-5 * np.abs(exact).max())
    M_exact = robot.mass_matrix(q)
    np.testing.assert_allclose(M, M_exact, rtol=1e-5, atol=1e-6 * np.abs(M_exact).max())


def test_float_is_for_firmware_only(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="code in float is for firmware"):
        rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=tmp_path,
                     codegen=CodegenOptions(real="float"))
    with pytest.raises(CodegenError, match="real must be one of double, float, got 'half'"):
        CodegenOptions(real="half")
    with pytest.raises(CodegenError, match="the RHS Jacobian is generated in double only"):
        CodegenOptions(real="float", jacobian=True)


def test_generate_command_writes_float(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rodgen.cli import main
    assert main(["generate", str(EXAMPLES / "double_pendulum.yaml"), "-o", str(tmp_path), "--real", "float"]) == 0
    header = (tmp_path / "double_pendulum.h").read_text()
    assert "void double_pendulum_mass_matrix(const float *q, const float *p, float *M);" in header
