"""Controllers written in C, run inside rodgen's compiled simulation with no Python in the loop.

    ctrl = rodgen.CController("pd.c", "pd", params=[kp, kd])     # compiled once, cached by content hash
    res = sys.simulate(y0, 10.0, 1e-3, controller=ctrl)           # or u=ctrl; also with contacts=[...]

The function has the signature of an input law's callback (``rodgen_input_fn``
in ``rodgen_runtime.h``)::

    int pd(void *context, double t, const double *y, double *u);

and receives as ``context`` a ``rodgen_controller *`` (``rodgen_runtime.h``):
the model's table, the parameters of the run, the controller's parameters
``params`` and its memory ``state`` (copied from ``state=`` at the start of
every run, kept between calls; its final values are in the result's
``extra["controller_state"]``). It fills ``u`` [nu] and returns 0; anything
else stops the run with status ``FAILED``. See docs/controller.md.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .. import contract
from ..errors import BuildError, RodgenError
from ..toolchain import cache

#: Suffixes taken as a compiled shared library (anything else is compiled as C source).
LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")

_CTYPES = {"int": ctypes.c_int, "long": ctypes.c_long, "double": ctypes.c_double}


def _ctype(decl: str) -> Any:
    return ctypes.c_void_p if decl.endswith("*") else _CTYPES[decl]


def _struct(name: str) -> type:
    """The ctypes mirror of a struct of the contract (rendered into rodgen_runtime.h from the same table)."""
    st = next(s for s in contract.STRUCTS if s.name == name)
    return type(name, (ctypes.Structure,), {"_fields_": [(f.name, _ctype(f.ctype)) for f in st.fields]})


#: ``rodgen_controller`` as a ctypes structure.
ControllerContext = _struct("rodgen_controller")

#: ``rodgen_input_fn``: int f(void *context, double t, const double *y, double *u)
_INPUT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_double, ctypes.POINTER(ctypes.c_double),
                             ctypes.POINTER(ctypes.c_double))



def _vector(x: Any, what: str) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(x, dtype=float).reshape(-1))
    if not np.all(np.isfinite(a)):
        raise ValueError(f"the controller's {what} hold inf or NaN: {a.tolist()}")
    return a


class ControllerBinding:
    """One run's context of a :class:`CController` (keeps the arrays the C reads alive)."""

    def __init__(self, controller: "CController", model_address: int, p: np.ndarray) -> None:
        self.controller = controller
        self.p = p
        self.params = controller.params.copy()
        self.state = controller.state.copy()
        self.context = ControllerContext(model_address, p.ctypes.data, self._address(self.params),
                                         self.params.size, self._address(self.state), self.state.size)

    @staticmethod
    def _address(a: np.ndarray) -> Optional[int]:
        return a.ctypes.data if a.size else None

    def input_function(self) -> tuple[int, int, "ControllerBinding"]:
        """(function address, context address, owner): what the compiled integrators take."""
        return self.controller.address, ctypes.addressof(self.context), self


class CController:
    """A controller written in C: a ``rodgen_input_fn`` from a C file (compiled with rodgen's runtime and
    cached) or from a shared library, with its parameters and memory.

    Parameters
    ----------
    path : a C source file, compiled with rodgen's C runtime into ``<build_dir>/controller-<name>-<hash>/``
        (reused while the file, the headers beside it and the flags are unchanged), or a shared library
        (``.so``, ``.dylib``, ``.dll``) built before.
    symbol : the function's name, ``int symbol(void *context, double t, const double *y, double *u)``.
    params : the controller's parameters (``rodgen_controller.params``), read-only for the C.
    state : the initial values of its memory (``rodgen_controller.state``), copied at the start of every run.
    include_dirs, cflags, build_dir, compiler : for compiling a source (``-I``, extra flags such as
        ``-DNAME=1``, the cache folder (default: the user cache, as for models), the C compiler).

    Raises BuildError naming the file when it is missing or does not compile or load, and naming the file
    and the symbol when the library has no such function.
    """

    def __init__(self, path: Union[str, Path], symbol: str, params: Sequence[float] = (),
                 state: Sequence[float] = (), *, include_dirs: Sequence[Union[str, Path]] = (),
                 cflags: Sequence[str] = (), build_dir: Union[str, Path, None] = None,
                 compiler: Optional[str] = None) -> None:
        path = Path(path)
        if not isinstance(symbol, str) or not symbol.isidentifier():
            raise ValueError(f"the controller's symbol must be a C identifier; got {symbol!r}")
        if path.suffix in LIBRARY_SUFFIXES:
            if not path.is_file():
                raise BuildError(f"the controller library {path} does not exist")
            self.source: Optional[Path] = None
            self.library = path.resolve()
        else:
            from ..toolchain.controller import compile_controller
            self.source = path.resolve() if path.is_file() else path
            self.library = compile_controller(path, include_dirs=include_dirs, cflags=cflags, build_dir=build_dir,
                                              compiler=compiler)
        self.symbol = symbol
        self.params = _vector(params, "params")
        self.state = _vector(state, "state")
        where = self.source or self.library
        cache.verify_library(self.library)
        try:
            lib = cache.open_library(self.library)
        except OSError as exc:
            raise BuildError(f"loading the controller library {self.library} ({where}) failed: {exc}") from None
        self._lib = lib
        try:
            fn = getattr(lib, symbol)
        except AttributeError:
            raise BuildError(f"{where}: no function {symbol!r} in the controller's library {self.library.name} "
                             f"(define int {symbol}(void *context, double t, const double *y, double *u), "
                             f"not static)") from None
        self.address = int(ctypes.cast(fn, ctypes.c_void_p).value or 0)

    @property
    def where(self) -> str:
        """The file the controller came from (its source, else its library)."""
        return str(self.source or self.library)

    def bind(self, model_address: int, p: np.ndarray) -> ControllerBinding:
        """The context of one run on the model whose table is at ``model_address`` with parameters ``p``."""
        return ControllerBinding(self, model_address, p)

    def function(self, robot: Any, p: Any = None, state: Optional[Sequence[float]] = None
                 ) -> Callable[[float, np.ndarray], np.ndarray]:
        """This controller as a Python function u(t, y) (y = [q, qd]) on the compiled model ``robot`` with the
        parameters ``p``: every call starts from the memory ``state`` (default: its initial ``state``; what a
        call leaves in it is dropped), so the function depends on (t, y) alone. Raises RodgenError naming the
        file when the C returns a status other than 0."""
        ny = robot.nq + robot.nv
        pv, rows = robot._params(p)
        if rows > 1:
            raise ValueError(f"CController.function takes one parameter vector; got {rows} rows")
        pv = np.ascontiguousarray(pv.reshape(-1), dtype=float).copy()
        binding = self.bind(robot._m.address(), pv)
        mem = binding.state.copy()
        if state is not None:
            mem = _vector(state, "state")
            if mem.size != binding.state.size:
                raise ValueError(f"CController.function: the controller's state has {binding.state.size} entries, "
                                 f"got {mem.size}")
        fn = _INPUT_FN(self.address)
        context = ctypes.addressof(binding.context)
        dptr = ctypes.POINTER(ctypes.c_double)
        nu, name, where = robot.nu, robot.name, self.where

        def law(t: float, y: Any) -> np.ndarray:
            yv = np.ascontiguousarray(np.asarray(y, dtype=float).reshape(-1))
            if yv.size != ny:
                raise ValueError(f"the controller's y on the model {name!r} has {ny} entries, got {yv.size}")
            binding.state[:] = mem
            out = np.zeros(nu)
            status = fn(context, float(t), yv.ctypes.data_as(dptr), out.ctypes.data_as(dptr))
            if status != 0:
                raise RodgenError(f"the controller {self.symbol!r} ({where}) returned status {status} at t = {t:g}")
            return out

        return law

    def evaluate(self, robot: Any, t: float, y: Any, p: Any = None, state: Optional[Sequence[float]] = None
                 ) -> np.ndarray:
        """The inputs u (nu,) at time ``t`` and state ``y`` = [q, qd]: one call of :meth:`function`."""
        return self.function(robot, p, state)(t, y)

    def __repr__(self) -> str:
        return (f"CController({self.where!r}, {self.symbol!r}, params={self.params.tolist()}, "
                f"state={self.state.tolist()})")


__all__ = ["CController", "ControllerBinding", "ControllerContext"]
