"""The generated header names every slot: a controller writes q[EXO5_Q_PHI_TORSO], never q[4].

A C main() that uses only the macros (no numeric index) sets a state, parameters and inputs of the
double pendulum and prints the mass matrix, an acceleration and two points; the numbers are checked
against the textbook closed form of two uniform rods.
"""
from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_build_warm import closed_form_mass_matrix

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import generate
from rodgen.errors import CodegenError

CC = shutil.which("gcc") or shutil.which("cc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

MAIN_C = r"""
#include <stdio.h>
#include "double_pendulum.h"

int main(void)
{
    double q[DOUBLE_PENDULUM_NQ] = {0}, qd[DOUBLE_PENDULUM_NQ] = {0}, u[DOUBLE_PENDULUM_NU] = {0};
    double p[DOUBLE_PENDULUM_NP] = DOUBLE_PENDULUM_DEFAULT_PARAMETERS;
    double M[DOUBLE_PENDULUM_NQ * DOUBLE_PENDULUM_NQ], qdd[DOUBLE_PENDULUM_NQ];
    double r[2 * DOUBLE_PENDULUM_NPOINTS];
    int i, status;
    q[DOUBLE_PENDULUM_Q_TH_UPPER] = 0.3;
    q[DOUBLE_PENDULUM_Q_TH_LOWER] = 0.7;
    p[DOUBLE_PENDULUM_P_M2] = 1.7;
    p[DOUBLE_PENDULUM_P_L1] = 1.3;
    p[DOUBLE_PENDULUM_P_G] = 0.0;
    u[DOUBLE_PENDULUM_U_TAU_LOWER] = 1.0;
    double_pendulum_mass_matrix(q, p, M);
    status = double_pendulum_forward_dynamics(0.0, q, qd, u, p, qdd);
    double_pendulum_points(q, p, r);
    for (i = 0; i < DOUBLE_PENDULUM_NQ * DOUBLE_PENDULUM_NQ; ++i) {
        printf("%.17g\n", M[i]);
    }
    printf("%.17g\n%.17g\n", qdd[DOUBLE_PENDULUM_Q_TH_UPPER], qdd[DOUBLE_PENDULUM_Q_TH_LOWER]);
    printf("%.17g\n%.17g\n", r[2 * DOUBLE_PENDULUM_POINT_UPPER_JOINT], r[2 * DOUBLE_PENDULUM_POINT_UPPER_JOINT + 1]);
    printf("%.17g\n%.17g\n", r[2 * DOUBLE_PENDULUM_POINT_LOWER_JOINT], r[2 * DOUBLE_PENDULUM_POINT_LOWER_JOINT + 1]);
    return status;
}
"""


def test_macros_address_the_right_slots(tmp_path: Path) -> None:
    files = generate(rodgen.load(EXAMPLES / "double_pendulum.yaml"), tmp_path)
    (tmp_path / "main.c").write_text(MAIN_C)
    sources = sorted(n for n in files.files if n.endswith(".c"))
    cmd = [CC, *STRICT, "-O1", "main.c", *sources, "-o", "main", "-lm"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    v = np.array([float(x) for x in run.stdout.split()])
    M = closed_form_mass_matrix(0.7, m2=1.7, L1=1.3)
    np.testing.assert_allclose(v[:4].reshape(2, 2), M, rtol=1e-13)
    # no gravity, at rest, a unit torque at the lower joint: qdd = M^-1 e_lower
    np.testing.assert_allclose(v[4:6], np.linalg.solve(M, [0.0, 1.0]), rtol=1e-12)
    # the lower joint sits at the end of the upper rod, L1 from the pivot
    assert math.hypot(v[8] - v[6], v[9] - v[7]) == pytest.approx(1.3, rel=1e-14)


def test_header_defines_a_macro_for_every_slot(tmp_path: Path) -> None:
    robot_files = generate(rodgen.load(EXAMPLES / "exo5.yaml"))
    header = robot_files.header
    defined = dict(re.findall(r"^#define (EXO5_(?:Q|U|P|POINT)_\w+) (\d+)$", header, flags=re.M))
    vm = rodgen.load(EXAMPLES / "exo5.yaml").validate()
    coords = [c.name for c in vm.independent_coordinates()]
    params = [p.name for p in vm.parameters]
    inputs = [i.name for i in vm.inputs()]
    for tag, names in (("Q", coords), ("P", params), ("U", inputs)):
        for i, name in enumerate(names):
            assert defined[f"EXO5_{tag}_{name.upper()}"] == str(i), name
    assert defined["EXO5_Q_PHI_TORSO"] == str(coords.index("phi_torso"))
    assert defined["EXO5_P_M_TORSO"] == str(params.index("m_torso"))


def test_names_that_differ_only_in_case_are_refused() -> None:
    m = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    m.parameters.append(rodgen.Parameter("M2", 0.5))
    with pytest.raises(CodegenError, match=r"parameters 'm2' and 'M2' give the same C macro DOUBLE_PENDULUM_P_M2"):
        generate(m)
