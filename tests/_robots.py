"""The URDF files of the example-robot-data package (a test dependency), found through its installed file list."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

DIST = "example-robot-data"


def robot_file(relative: str) -> Path:
    """The installed file ``<robots>/<relative>`` (e.g. ``panda_description/urdf/panda.urdf``); the test is
    skipped when the package is not installed."""
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{DIST} is not installed (pip install '.[test]')")
    for f in dist.files or ():
        name = str(f).replace("\\", "/")
        if name.endswith("example-robot-data/robots/" + relative):
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError(f"{relative} is not among the files of {DIST} {dist.version}")


def pin_configuration(coordinates: "list[str]", pm: object, q: "object") -> "object":
    """Pinocchio's configuration vector for rodgen's coordinates (by joint name; a continuous joint is
    (cos, sin) in Pinocchio)."""
    import numpy as np
    import pinocchio as pin
    out = pin.neutral(pm)
    for name, value in zip(coordinates, np.asarray(q, dtype=float)):
        jid = pm.getJointId(name)                       # type: ignore[attr-defined]
        k = pm.idx_qs[jid]                              # type: ignore[attr-defined]
        if pm.nqs[jid] == 2:                            # type: ignore[attr-defined]
            out[k:k + 2] = np.cos(value), np.sin(value)
        else:
            out[k] = value
    return out
