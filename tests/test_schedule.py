"""The order of the generated statements (``CodegenOptions.schedule``): ``depth_first`` on random statement
graphs (a permutation that keeps every temporary before its uses and the stores in their order, each temporary
computed for the next store), ``"auto"`` choosing it for the routines compiled for size only, and a compiled
model giving the same numbers in both orders."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.codegen import CodegenOptions
from rodgen.codegen.routine import depth_first
from rodgen.errors import CodegenError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _random_statements(rng: np.random.Generator, n: int, outs: int) -> list[tuple[str, object, object]]:
    """A straight-line program: n temporaries, each a sum of up to three earlier ones and an input, then
    ``outs`` stores of sums of temporaries, a fill before the first and a copy at the end."""
    x = sp.Symbol("x")
    temps = [sp.Symbol(f"c{k}") for k in range(n)]
    stmts: list[tuple[str, object, object]] = []
    for k, s in enumerate(temps):
        picks = rng.choice(k, size=min(k, int(rng.integers(0, 4))), replace=False) if k else []
        stmts.append(("temp", s, x * (k + 1) + sum((temps[j] for j in picks), sp.Integer(0))))
    stmts.append(("fill", "y[k]", ("for (int k = 0; k < 9; ++k)", "0.0")))
    for j in range(outs):
        picks = rng.choice(n, size=3, replace=False)
        stmts.append(("out", f"y[{j}]", sum((temps[i] for i in picks), sp.Integer(0))))
    stmts.append(("copy", "z[0]", "y[0]"))
    return stmts


@pytest.mark.parametrize("seed", range(20))
def test_depth_first_is_a_valid_order_with_each_temporary_computed_for_the_next_store(seed: int) -> None:
    rng = np.random.default_rng(seed)
    stmts = _random_statements(rng, int(rng.integers(5, 60)), int(rng.integers(1, 8)))
    out = depth_first(stmts)
    assert sorted(map(id, out)) == sorted(map(id, stmts))                  # a permutation
    others = [st for st in stmts if st[0] != "temp"]
    assert [st for st in out if st[0] != "temp"] == others                 # the rest in their order
    where = {st[1]: k for k, st in enumerate(out) if st[0] == "temp"}
    reads = [{s for s in st[2].free_symbols if s in where} if isinstance(st[2], sp.Basic) else set() for st in out]
    for k, r in enumerate(reads):
        assert all(where[s] < k for s in r)                                # defined before it is read

    def closure(k: int) -> set:
        need, todo = set(), set(reads[k])
        while todo:
            t = todo.pop()
            need.add(t)
            todo |= reads[where[t]] - need
        return need

    # each temporary is computed for the next store: in its closure (the temporaries no store needs, last)
    stores = [k for k, st in enumerate(out) if st[0] != "temp"]
    for s, k in where.items():
        later = [j for j in stores if j > k]
        if later and s in closure(later[0]):
            continue
        assert all(out[j][0] == "temp" for j in range(k, len(out)))       # unneeded: after everything
        assert not any(s in closure(j) for j in stores)


def test_auto_prints_the_solves_compiled_for_size_depth_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``schedule="auto"``: the routines compiled for size (exo5_walk's constrained solves, made long enough by a
    lower threshold) as ``"depth-first"`` prints them, every other routine as ``"as-derived"`` does."""
    import rodgen.codegen.spec as spec
    monkeypatch.setattr(spec, "COMPACT_MIN_OPS", 1000)
    model = rodgen.load(EXAMPLES / "exo5_walk.yaml")
    specs = {order: rodgen.generate(model, tmp_path / order, options=CodegenOptions(schedule=order)).spec
             for order in ("auto", "depth-first", "as-derived")}
    auto = specs["auto"]
    compact = [r.name for r in auto.routines if auto.compact_routine(r.name)]
    assert {"constrained_solve", "constrained_solve_mode0"} <= set(compact)
    for r in auto.routines:
        other = specs["depth-first" if r.name in compact else "as-derived"].routine(r.name)
        assert (r.sections, r.parts) == (other.sections, other.parts), r.name
    # the two orders differ where auto chooses
    assert any(specs["depth-first"].routine(n).sections != specs["as-derived"].routine(n).sections for n in compact)


def test_a_compiled_model_gives_the_same_numbers_in_both_orders(tmp_path: Path) -> None:
    model = rodgen.load(EXAMPLES / "exo5_walk.yaml")
    a = rodgen.build(model, build_dir=tmp_path / "a", codegen=CodegenOptions(schedule="depth-first"))
    b = rodgen.build(model, build_dir=tmp_path / "b", codegen=CodegenOptions(schedule="as-derived"))
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, qd, u = rng.uniform(0.2, 1.0, a.nq), rng.normal(size=a.nq), rng.normal(size=a.nu)
        for f, g in ((a.forward_dynamics(q, qd, u), b.forward_dynamics(q, qd, u)),
                     (a.constrained_dynamics(q, qd, u, ["foot_a", "foot_b"])[0],
                      b.constrained_dynamics(q, qd, u, ["foot_a", "foot_b"])[0])):
            assert np.allclose(f, g, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    with pytest.raises(CodegenError, match="schedule must be one of auto, depth-first, as-derived, got 'random'"):
        CodegenOptions(schedule="random")
