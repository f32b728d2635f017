"""The contract table (rodgen.contract) agrees with the C that uses it.

* the fields of ``rodgen_model`` in csrc/rodgen_model.h are the table's routines, in order, with the
  table's argument lists;
* csrc/rodgen_runtime.h and csrc/rodgen_model.h are the renderings of the table (regenerate them with
  ``python -m rodgen.codegen.runtime`` after changing the contract);
* the status codes and named constants (kinds of block, joint and event, phases, slip modes) a C program
  sees are the contract's values (compiled and printed by gcc), and the runtime extension's names of them
  (compiled from the C's values) are the contract's labels;
* a compiled model's table points at exactly the routines its C defines.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen import contract
from rodgen.codegen import CodegenOptions, generate
from rodgen.codegen.runtime import MODEL_HEADER, RUNTIME_HEADER, csrc_root, model_header, runtime_header
from rodgen.contract import StatusCode
from rodgen.runtime import DynamicsError

CC = shutil.which("gcc") or shutil.which("cc")


def _norm(text: str) -> str:
    return " ".join(text.replace("*", " * ").split())


def test_model_table_fields_are_the_contract_routines() -> None:
    header = csrc_root().joinpath("rodgen_model.h").read_text()
    fields = re.findall(r"(void|int)\s+\(\*(\w+)\)\(([^)]*)\)", header)
    assert [name for _, name, _ in fields] == [r.name for r in contract.ROUTINES]
    for (ret, name, params), r in zip(fields, contract.ROUTINES):
        assert ret == r.c_return, name
        assert _norm(params) == _norm(r.c_params), f"{name}: header ({params}) vs contract ({r.c_params})"


def test_headers_are_rendered_from_the_contract() -> None:
    for name, text in ((RUNTIME_HEADER, runtime_header()), (MODEL_HEADER, model_header())):
        shipped = csrc_root().joinpath(name).read_text(encoding="utf-8")
        assert shipped == text, (f"csrc/{name} is out of date with rodgen/contract.py: "
                                 "run python -m rodgen.codegen.runtime")


def test_status_values_and_messages_are_complete() -> None:
    values = [s.value for s in contract.STATUSES]
    assert values == list(range(len(values))), "status codes are 0, 1, 2, ... without gaps"
    for name in ("ERR_SINGULAR_CONSTRAINTS", "ERR_EVENT_NOT_LOCATED", "ERR_FRICTION_CONE", "ERR_INITIAL_STATE",
                 "ERR_TOO_MANY_EVENTS"):
        assert StatusCode[name].message
    assert StatusCode.describe(999) == "status 999"


CONSTANTS = (contract.METHODS + contract.INPUT_KINDS + contract.BLOCK_KINDS + contract.JOINT_KINDS + contract.PHASES
             + contract.EVENT_KINDS + contract.SLIP_MODES)


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_c_sees_the_same_status_values_and_constants(tmp_path: Path) -> None:
    """The shipped headers (what rodgen_contact.c, the FMU and the C harness compile with) give the contract's
    values; rodgen_contact.h, which the hybrid simulator's users include, defines no code of its own."""
    for name in (RUNTIME_HEADER, MODEL_HEADER, "rodgen_contact.h"):
        (tmp_path / name).write_text(csrc_root().joinpath(name).read_text())
    names = [s.name for s in contract.STATUSES] + [k.name for k in CONSTANTS]
    body = "".join(f'    printf("%s %d\\n", "{n}", RODGEN_{n});\n' for n in names)
    (tmp_path / "codes.c").write_text(f'#include <stdio.h>\n#include "rodgen_contact.h"\n'
                                      f"int main(void)\n{{\n{body}    return 0;\n}}\n")
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "codes.c", "-o", "codes"],
                   cwd=tmp_path, check=True)
    out = subprocess.run(["./codes"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    seen = {k: int(v) for k, v in (line.split() for line in out.splitlines())}
    assert seen == {c.name: int(c) for c in StatusCode} | {k.name: k.value for k in CONSTANTS}
    defined = re.findall(r"#define\s+RODGEN_(\w+)\s", csrc_root().joinpath("rodgen_contact.h").read_text())
    assert not set(defined) & set(names), "rodgen_contact.h defines a code of the contract by hand"


def test_the_runtime_names_the_cs_codes_as_the_contract_does() -> None:
    """The runtime extension's tables of names are compiled from the C's macros: they are the contract's labels,
    which Python reads (events, on_slip, active masks, kinds of block)."""
    from rodgen.toolchain.runtime import load_runtime
    rt = load_runtime()
    assert rt.EVENT_KINDS == contract.labels(contract.EVENT_KINDS)
    assert rt.BLOCK_KINDS == contract.labels(contract.BLOCK_KINDS)
    assert rt.JOINT_KINDS == contract.labels(contract.JOINT_KINDS)
    assert rt.SLIP_MODES == {k.label: k.value for k in contract.SLIP_MODES}
    assert rt.ACTIVE_CODES == {k.label: k.value for k in contract.PHASES}
    assert len({k.label for k in contract.EVENT_KINDS}) == len(contract.EVENT_KINDS)


def test_table_points_at_the_generated_routines(build_dir: Path) -> None:
    model = rodgen.load(EXAMPLES / "pendulum_vl.yaml")
    with_jac = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(jacobian=True))
    without = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(jacobian=False))
    deferred = rodgen.build(model, build_dir=build_dir)     # the Jacobian is compiled on its first use
    for sysm, jac in ((with_jac, True), (without, False), (deferred, False)):
        routines = sysm._m.info()["routines"]
        assert set(routines) == {r.name for r in contract.ROUTINES}
        assert routines["rhs_jacobian"] is jac
        assert not any(routines[n] for n in routines if n.startswith("constraint_"))   # no constraints
        assert all(routines[r.name] for r in contract.ROUTINES if not r.optional)
    with pytest.raises(NotImplementedError, match="has no rhs_jacobian"):
        without._m.rhs_jacobian(1, np.zeros(1), np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(3), np.zeros(16),
                                np.zeros(1, dtype=np.intc))
    files = generate(model)
    assert "pendulum_vl_rhs_jacobian,   /* rhs_jacobian */" in files.source
    assert "0,   /* constraint_position */" in files.source


def test_failed_status_reaches_python_as_its_code(build_dir: Path) -> None:
    """A zero point mass on the end of a chain makes M singular: the C's status is the table's code."""
    sysm = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    p = sysm.parameter_vector(m1=0.0, m2=0.0)
    with pytest.raises(DynamicsError) as err:
        sysm.forward_dynamics([0.1, 0.2], [0.0, 0.0], [0.0, 0.0], p)
    assert err.value.status == StatusCode.ERR_NOT_POSITIVE_DEFINITE
    assert StatusCode.ERR_NOT_POSITIVE_DEFINITE.message in str(err.value)
    with pytest.raises(DynamicsError) as err:
        sysm.forward_dynamics([np.nan, 0.2], [0.0, 0.0], [0.0, 0.0])
    assert err.value.status == StatusCode.ERR_NONFINITE_INPUT


def test_table_of_a_model_with_constraints(tmp_path: Path) -> None:
    """The block table and the constraint routines reach the runtime through the model's table: the
    wrapper's batch kernel gives the rows SymPy gives."""
    import sympy as sp
    from test_constraint_routines import with_constraints

    from rodgen.codegen import lower, render
    from rodgen.toolchain import compile_files, load_module
    eqs = with_constraints(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="recursive"))
    sysm = load_module(compile_files(render(lower(eqs)), build_dir=tmp_path))
    info = sysm.table.info()
    assert info["constraints"] == [("foot", 0, 0, 2), ("tip", 1, 2, 2), ("elbow", 2, 4, 1)]
    assert (info["nconstraints"], info["nrows"]) == (3, 5)
    assert all(info["routines"][n] for n in info["routines"] if n.startswith("constraint_"))
    q = np.array([0.3, -0.4])
    p = sysm.parameter_vector()
    c = np.empty(5)
    sysm.table.constraint_position(1, q, p, c)
    subs = dict(zip(eqs.q, q)) | {s: v for s, v in zip(eqs.params, p)}
    want = np.array([float(sp.sympify(x).subs(subs)) for blk in eqs.constraints for x in blk.position])
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)
