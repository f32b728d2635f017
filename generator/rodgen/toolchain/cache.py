"""The content-addressed build cache: ``<build_dir>/<model>-<hash12>/``.

A build folder appears only complete: the files are written and compiled in
a temporary sibling (``.tmp-<model>-<hash12>-*``) that is renamed into place
at the end. A lock file per model and hash (``.locks/<model>-<hash12>.lock``,
held with ``filelock`` on every platform) makes concurrent builds of the same
model from several processes compile once; the others wait and reuse the result.

The manifest of a build (``rodgen-build.json``) records the SHA-256 of the
library it made (``"sha256": {"<file>": "<hex>"}``); a folder counts as a
finished build only while its library still has that checksum
(:func:`complete`), so a truncated, emptied or changed library is built again
instead of loaded, and :func:`verify_library` refuses to load one.

A build that cannot write (a read-only folder, a full disk) raises BuildError
naming the folder and the cause, and leaves no temporary folder behind; a build
whose compiler failed keeps its sources and log in ``.failed-<key>`` (without
objects and libraries) until the next attempt of the same build.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Optional, Union

from filelock import FileLock

from ..errors import BuildError

MANIFEST = "rodgen-build.json"


def build_hash(parts: dict[str, str]) -> str:
    """SHA-256 (hex) over named text parts, in name order."""
    h = hashlib.sha256()
    for key in sorted(parts):
        h.update(key.encode() + b"\0" + parts[key].encode() + b"\0")
    return h.hexdigest()


#: Environment variable naming rodgen's user cache folder.
CACHE_ENV = "RODGEN_CACHE_DIR"


def user_cache_dir() -> Path:
    """rodgen's user cache: ``$RODGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/rodgen``, else ``~/.cache/rodgen``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "rodgen"
    return Path.home() / ".cache" / "rodgen"


def default_build_dir() -> Path:
    """Where models and C controllers are built unless ``build_dir=`` says otherwise: ``<user cache>/models``.

    Not a folder of the working directory: a build there would land in the user's repository next to
    pip's own ``build/``, and every project would build the same model again.
    """
    return user_cache_dir() / "models"


_libraries: dict[str, ctypes.CDLL] = {}
_libraries_guard = threading.Lock()


def open_library(path: Union[str, Path]) -> ctypes.CDLL:
    """The shared library at ``path``, loaded once per process (a library stays loaded while the process
    lives, so its functions and tables stay valid); raises OSError as ``ctypes.CDLL`` does."""
    import ctypes

    key = str(Path(path).resolve())
    with _libraries_guard:
        lib = _libraries.get(key)
        if lib is None:
            lib = _libraries[key] = ctypes.CDLL(key)
        return lib


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def locked(build_dir: Path, key: str) -> Iterator[None]:
    """Hold the lock of one build (between processes with a lock file, between threads with a Lock)."""
    with _thread_locks_guard:
        tlock = _thread_locks.setdefault(f"{build_dir.resolve()}/{key}", threading.Lock())
    with tlock:
        locks = build_dir / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        # thread_local=False: the thread lock above already orders threads; the file lock orders processes
        with FileLock(str(locks / f"{key}.lock"), thread_local=False):
            yield


def checksum(path: Union[str, Path]) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def recorded_checksum(folder: Path, file: str) -> Optional[str]:
    """The SHA-256 the manifest of ``folder`` records for ``file``; None without a manifest or a record."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sums = manifest.get("sha256") if isinstance(manifest, dict) else None
    value = sums.get(file) if isinstance(sums, dict) else None
    return value if isinstance(value, str) else None


def complete(folder: Path, module_file: str) -> bool:
    """Whether ``folder`` holds a finished build: its manifest, and its module with the checksum the manifest
    records (a library truncated, emptied or changed after the build is not a finished build)."""
    expected = recorded_checksum(folder, module_file)
    if expected is None:
        return False
    try:
        return checksum(folder / module_file) == expected
    except OSError:
        return False


def verify_library(path: Union[str, Path]) -> None:
    """Raise BuildError when the manifest beside the library ``path`` records another SHA-256 than the file
    has (a library with no manifest beside it, copied out of the cache, is not checked)."""
    path = Path(path)
    if not (path.parent / MANIFEST).is_file():
        return
    expected = recorded_checksum(path.parent, path.name)
    try:
        actual = checksum(path)
    except OSError as exc:
        raise BuildError(f"cannot read the compiled library {path}: {exc.strerror or exc}",
                         folder=str(path.parent)) from None
    if actual != expected:
        what = "records no checksum for it" if expected is None else \
            f"records SHA-256 {expected[:16]}..., the file has {actual[:16]}..."
        raise BuildError(f"the compiled library {path} is not the one that was built (its manifest {MANIFEST} "
                         f"{what}): the file was changed or damaged; remove its folder and build again",
                         folder=str(path.parent))


def new_temp_folder(build_dir: Path, key: str) -> Path:
    """A fresh temporary folder next to the final one (same file system: rename is atomic)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=build_dir))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)
    return tmp


def clear_stale(build_dir: Path, key: str) -> None:
    """Remove what earlier attempts of ``key`` left (temporary folders of interrupted builds, the folder of a
    failed one) before a new attempt (call with the lock held): on a full disk the retry needs their space."""
    for d in build_dir.glob(f".tmp-{key}-*"):
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(build_dir / f".failed-{key}", ignore_errors=True)


def publish(tmp: Path, final: Path, manifest: dict[str, object], module_file: str) -> None:
    """Record the SHA-256 of ``module_file`` in the manifest, write it into ``tmp`` and rename ``tmp`` to
    ``final`` (call with the lock held)."""
    manifest = dict(manifest, sha256={module_file: checksum(tmp / module_file)})
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if final.exists():  # an incomplete or damaged folder: move it out of the way
        stale = final.with_name(f".stale-{final.name}")
        shutil.rmtree(stale, ignore_errors=True)
        os.rename(final, stale)
        shutil.rmtree(stale, ignore_errors=True)
    os.rename(tmp, final)


#: Files of a failed build that are removed from ``.failed-<key>``: objects and libraries (the bulk of it).
_BULKY = ("*.o", "*.obj", "*.so", "*.dylib", "*.dll", "*.pyd")


def keep_failed(tmp: Path, build_dir: Path, key: str) -> Path:
    """Move the folder of a failed build to ``.failed-<key>`` for inspection (its sources and log, without
    objects and libraries); return its path."""
    for pattern in _BULKY:
        for f in tmp.glob(pattern):
            with contextlib.suppress(OSError):
                f.unlink()
    failed = build_dir / f".failed-{key}"
    shutil.rmtree(failed, ignore_errors=True)
    try:
        os.rename(tmp, failed)
    except OSError:
        return tmp
    return failed


def storage_error(exc: OSError, folder: Path, advice: str = "") -> BuildError:
    """The BuildError of a build that could not write: the folder, the cause (a full disk, no permission)."""
    cause = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        cause += " (the disk or quota is full: free space, or build elsewhere)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        cause += " (the folder is not writable)"
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
    return BuildError(f"cannot write the build folder {folder}: {cause}{where}" + (f"; {advice}" if advice else ""),
                      folder=str(folder))


def build_folder(root: Path, key: str, module_file: str, make: Callable[[Path], dict[str, Any]],
                 failure: Callable[[BuildError, Path], BuildError], advice: str = "") -> Path:
    """The finished build ``<root>/<key>/`` (its ``module_file``): found, or made once under the lock.

    ``make(tmp)`` writes and compiles into the temporary folder ``tmp`` and returns the manifest. A
    BuildError of ``make`` (the compiler failed) keeps the folder as ``.failed-<key>`` and raises
    ``failure(exc, that folder)``; an OSError anywhere (a read-only folder, a full disk) raises the
    BuildError of :func:`storage_error`; on any failure the temporary folder is gone.
    """
    final = root / key
    if complete(final, module_file):
        return final / module_file
    try:
        root.mkdir(parents=True, exist_ok=True)
        with locked(root, key):
            if complete(final, module_file):  # another process built it while we waited
                return final / module_file
            clear_stale(root, key)
            tmp = new_temp_folder(root, key)
            try:
                manifest = make(tmp)
                publish(tmp, final, manifest, module_file)
            except BuildError as exc:
                raise failure(exc, keep_failed(tmp, root, key)) from None
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    except OSError as exc:
        raise storage_error(exc, root, advice) from None
    return final / module_file


#: Folder (under a cache root) of the keys known before a build's sources exist (see :mod:`.key`).
INDEX = ".index"


def read_index(root: Path, key: str) -> Union[Path, None]:
    """The build folder recorded for ``key`` under ``root``, or None (no record, or a record of a
    folder that is gone)."""
    try:
        name = (root / INDEX / key).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    folder = root / name
    return folder if folder.is_dir() else None


def write_index(root: Path, key: str, folder: Path) -> None:
    """Record that ``key`` is built in ``folder`` (a child of ``root``); written atomically, and
    silently skipped when the cache is read-only (the next run derives again)."""
    index = root / INDEX
    try:
        index.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}-", dir=index)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(folder.name + "\n")
        os.replace(tmp, index / key)
    except OSError:
        pass


_loaded: dict[str, ModuleType] = {}
_loaded_guard = threading.Lock()


def import_module_file(path: Union[str, Path], name: str) -> ModuleType:
    """Import an extension module from its file, without touching ``sys.path`` or ``sys.modules``.

    The same file is imported once per process; later calls return the same module.
    """
    path = Path(path).resolve()
    key = str(path)
    with _loaded_guard:
        if key in _loaded:
            return _loaded[key]
        loader = importlib.machinery.ExtensionFileLoader(name, key)
        spec = importlib.util.spec_from_file_location(name, key, loader=loader)
        if spec is None:
            raise BuildError(f"cannot import {path}: no module spec", folder=str(path.parent))
        try:
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
        except ImportError as exc:
            raise BuildError(f"importing the compiled module {path.name} failed: {exc} "
                             f"(Python {sys.version.split()[0]})", folder=str(path.parent)) from exc
        _loaded[key] = module
        return module
