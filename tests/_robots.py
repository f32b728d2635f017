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
