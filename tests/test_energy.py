"""T + V is conserved along integrations of the derived equations when no input or damper acts."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
from _num import numeric

#: DOP853 at rtol=atol=1e-11 over 2 s: energy error observed ~1e-10; 1e-7 leaves margin
RTOL_ENERGY = 1e-7


@pytest.mark.parametrize("path", ["examples/exo5.yaml", "examples/two_link_masses.yaml",
                                  "examples/pendulum_vl.yaml", "examples/double_pendulum.yaml"])
def test_energy_conserved(path: str) -> None:
    model = rodgen.load(path)
    num = numeric(rodgen.derive(model, method="matrix"))
    n = len(num.eqs.q)
    q0 = np.array([model.value(c.initial) for c in model.coordinates()])
    qd0 = np.linspace(0.3, -0.4, n)
    u = np.zeros(len(num.eqs.u))

    def f(t, y):
        return np.concatenate([y[n:], num.qdd(y[:n], y[n:], u)])

    sol = solve_ivp(f, (0, 2.0), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-11, atol=1e-11,
                    dense_output=False, t_eval=np.linspace(0, 2.0, 21))
    assert sol.success
    E = np.array([sum(num.energy(y[:n], y[n:])) for y in sol.y.T])
    scale = max(abs(E[0]), num.energy(q0, qd0)[0], 1.0)
    assert np.abs(E - E[0]).max() < RTOL_ENERGY * scale, f"energy drift {np.abs(E - E[0]).max():.3e}"
    # the motion is not trivial: the coordinates travel
    assert np.abs(sol.y[:n, -1] - q0).max() > 0.05
