"""Options of the code stage, and the C prefix of a model's name."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Optional, Union

from .. import contract
from ..errors import CodegenError, ModelError
from ..model.core import check_name


class ForwardAlgorithm(str, Enum):
    """How ``<prefix>_forward_dynamics`` computes the accelerations.

    AUTO : the articulated-body algorithm where it applies, else the mass matrix and Cholesky.
    ABA : the articulated-body algorithm (O(n) straight-line code); a model it does not apply to
        (masses at intermediate fractions of variable segments, coupled coordinates) is an error.
    CHOLESKY : the mass matrix M(q) and B u - bias, then a dense Cholesky solve (O(n^3)).
    """

    AUTO = "auto"
    ABA = "aba"
    CHOLESKY = "cholesky"


#: Derivation method of every code-generating entry point when none is given (``rodgen.generate``,
#: ``rodgen.build``, ``rodgen build``/``generate``/``simulate``): the recursive method emits small
#: assignments, so generated code grows like n or n^2 (``rodgen.derive`` keeps "matrix" as its default,
#: for readable equations; ``rodgen equations`` prints those).
DEFAULT_METHOD = "recursive"

#: The derivation methods the command line offers: the values of :class:`rodgen.symbolic.Method`, written here so
#: that the command line starts without importing SymPy (tests/test_cli_commands.py checks they agree).
METHODS = ("lagrange", "matrix", "recursive", "planar")

#: The orders a routine's statements may be printed in (:attr:`CodegenOptions.schedule`).
SCHEDULES = ("auto", "depth-first", "as-derived")

#: The C types generated code may compute in (:attr:`CodegenOptions.real`).
REAL_TYPES = ("double", "float")

#: Largest number of coordinates for which a model with constraints gets ``<prefix>_constrained_terms``
#: by default (its factorisation of M is straight-line code of up to nq^3/6 operations).
CONSTRAINED_TERMS_AUTO_MAX_NQ = 30


#: Default of :attr:`CodegenOptions.pair_loop_min`: the pairs of joints on one branch from which their dot products
#: are a loop in the RHS Jacobian's derivative routine.
PAIR_LOOP_MIN = 300

#: Default of :attr:`CodegenOptions.node_loop_min`: the joints from which the per-joint terms of the RHS Jacobian's
#: derivative routine are a loop over the joints.
NODE_LOOP_MIN = 20

#: Default of :attr:`CodegenOptions.trig_batch_min`: the distinct arguments of sin and cos from which a routine
#: computes them in one vectorised call. Measured alone (native, AVX-512): 4 arguments (padded to 8) in 35 ns
#: against 51 ns for the C library's, 12 in 39 against 114, 36 in 60 against 287; but in a small routine the C
#: library's calls overlap with the arithmetic where the batch comes first: UR5's mass matrix (5 arguments) took
#: 1.08-1.16x the time with it (benchmarks/bench_trig_batch.py), the routines of 12 arguments and more 0.75-1.03x.
TRIG_BATCH_MIN = 8


#: The routines of a model's table that :attr:`CodegenOptions.routines` may leave out (``contract.ELECTIVE_ROUTINES``).
ELECTIVE_ROUTINES = contract.ELECTIVE_ROUTINES


#: The default of ``CodegenOptions.max_statements`` (and of ``rodgen generate --max-statements``).
MAX_STATEMENTS = 1000


@dataclass(frozen=True)
class CodegenOptions:
    """Options of the code stage (keyword-only where used).

    Parameters
    ----------
    cse : find common subexpressions (``False`` prints every output as it is).
    max_statements : the most statements one C function holds before the
        routine is split into static parts (keeps compile times short: GCC's register allocation grows
        faster than the function; at 1000 rather than 2000 the 3D biped's model compiled in 0.69x the CPU
        time, gait2d's RHS Jacobian in 0.8x and a 36-link chain's model with its Jacobian in 0.83x of the
        build's time, the same numbers in as many instructions: 0.1-0.6 % fewer for the chain's mass
        matrix, forward dynamics and RHS Jacobian under callgrind).
    jacobian : generate ``<prefix>_rhs_jacobian``, the exact Jacobian of the
        right-hand side (``True``/``False``); ``None`` (the default) generates
        it whatever the size (``rodgen.build`` then compiles the model without
        it and builds it on its first use). Its code is the derivative of the
        recursive Newton-Euler algorithm (it grows like the pairs of joints on
        one branch) for spatial and planar models, and the tangent of the
        inverse dynamics, run once per column, for coupled coordinates and
        ``method="planar"`` (it grows like the inverse dynamics;
        docs/ARCHITECTURE.md).
    forward : algorithm of the forward dynamics, a :class:`ForwardAlgorithm` or its value
        (``"auto"``, ``"aba"``, ``"cholesky"``); ``"auto"`` uses the articulated-body
        algorithm wherever it applies.
    real : the C type of every number, ``"double"`` (the default) or ``"float"`` for
        microcontrollers with a single-precision FPU: arrays, temporaries, literals (``0.5f``)
        and math functions (``sinf``) are all float, and the Cholesky solve is compiled into the
        model's source. Float code is for firmware (``rodgen generate --real float``): it has no
        table for rodgen's double-precision runtime, no RHS Jacobian, and ``rodgen.build`` refuses it.
    constrained_terms : generate ``<prefix>_constrained_terms`` for a model with constraint
        blocks (``True``/``False``): M factorised as sparse straight-line code, the free
        accelerations and, for every constraint row, J, c, J qd, J qdd0 + Jdot qd, M^-1 J^T
        and J M^-1 J^T in one routine, which the runtime's constrained dynamics uses;
        ``None`` (the default) generates it for models of at most
        :data:`CONSTRAINED_TERMS_AUTO_MAX_NQ` coordinates. Without it the runtime factorises
        M by a dense Cholesky (about 2.5x slower). Never for ``real="float"`` (no table).
    regressor : generate ``<prefix>_regressor(t, q, qd, qdd, p, Y)``, the identification regressor
        ``M qdd + h + G = Y theta`` (``Equations.regressor``, see :mod:`rodgen.symbolic.regressor`),
        exported beside the table with ``<prefix>_ntheta()`` and ``<prefix>_theta_list()``; off by
        default, so existing builds do not grow.
    pair_loop_min : the fewest pairs of joints on one branch (different nodes; a chain of n joints has
        n (n - 1) / 2) from which the derivative of the recursive Newton-Euler algorithm computes their dot
        products in a loop over per-joint vectors instead of straight-line code (:data:`PAIR_LOOP_MIN`
        by default): the code then grows like n instead of n · depth, and a long chain's derivative
        stays in the processor's caches. Models whose tree's columns are not the velocities one to one
        keep the straight-line code.
    node_loop_min : the fewest joints (nodes of the expanded tree) from which the per-joint terms of that
        derivative are one step per kind of joint in a loop over the joints (:data:`NODE_LOOP_MIN` by default),
        the pairs' dot products then a loop too: the code no longer grows with the joints. Models with free,
        spherical or planar joints, or whose tree's columns are not the velocities one to one, keep the
        straight-line code.
    parameter_derivatives : generate ``<prefix>_parameter_partials(t, q, qd, qdd, u, p, dg)``, the
        derivative of ``M qdd + bias - B u`` by the parameters (:mod:`rodgen.symbolic.parameter_derivative`),
        which ``state_transition(..., parameters=True)`` needs for ∂y(T)/∂p; off by default.
    trig_batch_min : the fewest distinct arguments of sines and cosines (each an expression of the routine's
        inputs: ``q[7]``, ``q[1] - q[2]``, a parameter) from which a routine computes all of them in one call at
        its top, ``<prefix>_sincos`` (a loop the compiler vectorises, in the model's source), instead of the C
        library's ``sin`` and ``cos`` one by one (:data:`TRIG_BATCH_MIN` by default; 0: never). Its values are
        within one unit in the last place of the correctly rounded ones for arguments up to 1e5 in magnitude
        (larger ones, infinities and NaN go to the C library). Not for ``real="float"``.
    schedule : the order of a routine's statements. ``"depth-first"``: the stores in their order, each preceded
        by the temporaries it needs that are not computed yet, depth first (a temporary is computed for the store
        that first needs it). ``"as-derived"``: the order of the derivation's intermediates (a recursion's pass
        over every body, then the next pass), each with the common subexpressions it needs just before it, which
        leaves independent work side by side for the processor. ``"auto"`` (the default): depth first for the
        routines compiled for size (``<MACRO>_COMPACT``: the long constrained solves, whose machine code streams
        from the level-2 cache on every call), as derived elsewhere. Depth first, GCC emits shorter code for the
        3D biped's solves (the library's text 0.92x, 0.95x the instructions and 0.90x the loads over its walk, about
        0.89x the time); small routines that stay in the level-1 cache run slower that way (solo12's forward
        dynamics 1.65x, UR5's RHS Jacobian 1.57x: benchmarks/bench_schedule.py). The numbers are the same but for
        the rounding of the products the compiler fuses into multiply-adds.
    routines : the routines of the model's table (``rodgen.contract.ROUTINES``) the caller will use, or ``None``
        (the default) for all of them. Of :data:`ELECTIVE_ROUTINES` (bias, gravity, inverse_dynamics, energy,
        points, element_forces, constrained_response) only those named are derived and generated; the others
        (mass matrix, input map, forward dynamics, right-hand side, what other options ask for) are always built.
        A module built without a routine raises NotImplementedError naming it when it is called. The collocation of
        :mod:`rodgen.optimize` calls ``rodgen.optimize.ROUTINES`` only: ``CodegenOptions(jacobian=True,
        routines=rodgen.optimize.ROUTINES)`` builds gait2d's library with about 30 % fewer operations.
    """

    cse: bool = True
    max_statements: int = MAX_STATEMENTS
    jacobian: Optional[bool] = None
    forward: Union[ForwardAlgorithm, str] = ForwardAlgorithm.AUTO
    constrained_terms: Optional[bool] = None
    real: str = "double"
    regressor: bool = False
    parameter_derivatives: bool = False
    pair_loop_min: int = PAIR_LOOP_MIN
    node_loop_min: int = NODE_LOOP_MIN
    trig_batch_min: int = TRIG_BATCH_MIN
    schedule: str = "auto"
    routines: Optional[Iterable[str]] = None

    def __post_init__(self) -> None:
        if self.routines is not None:
            if isinstance(self.routines, str):
                raise CodegenError(f"routines must be a collection of routine names, got the string "
                                   f"{self.routines!r}")
            names = {r.name for r in contract.ROUTINES}
            unknown = sorted(str(r) for r in self.routines if r not in names)
            if unknown:
                raise CodegenError(f"routines: unknown routine(s) {', '.join(map(repr, unknown))}; a model's routines "
                                   f"are {', '.join(r.name for r in contract.ROUTINES)}")
            # a sorted tuple: equal selections are equal options (and one cache key)
            object.__setattr__(self, "routines", tuple(sorted(set(self.routines))))
        try:
            object.__setattr__(self, "forward", ForwardAlgorithm(getattr(self.forward, "value", self.forward)))
        except ValueError:
            raise CodegenError(f"forward must be one of {[f.value for f in ForwardAlgorithm]}, "
                               f"got {self.forward!r}") from None
        if not isinstance(self.max_statements, int) or self.max_statements < 10:
            raise CodegenError(f"max_statements must be an integer of at least 10, got {self.max_statements!r}")
        if self.jacobian not in (None, True, False):
            raise CodegenError(f"jacobian must be True, False or None (automatic), got {self.jacobian!r}")
        if self.constrained_terms not in (None, True, False):
            raise CodegenError(f"constrained_terms must be True, False or None (automatic), "
                               f"got {self.constrained_terms!r}")
        if self.regressor not in (True, False):
            raise CodegenError(f"regressor must be True or False, got {self.regressor!r}")
        if self.parameter_derivatives not in (True, False):
            raise CodegenError(f"parameter_derivatives must be True or False, got {self.parameter_derivatives!r}")
        if not isinstance(self.pair_loop_min, int) or isinstance(self.pair_loop_min, bool) \
                or self.pair_loop_min < 0:
            raise CodegenError(f"pair_loop_min must be a non-negative integer, got {self.pair_loop_min!r}")
        if not isinstance(self.node_loop_min, int) or isinstance(self.node_loop_min, bool) \
                or self.node_loop_min < 0:
            raise CodegenError(f"node_loop_min must be a non-negative integer, got {self.node_loop_min!r}")
        if not isinstance(self.trig_batch_min, int) or isinstance(self.trig_batch_min, bool) \
                or self.trig_batch_min < 0:
            raise CodegenError(f"trig_batch_min must be a non-negative integer, got {self.trig_batch_min!r}")
        if self.schedule not in SCHEDULES:
            raise CodegenError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.real not in REAL_TYPES:
            raise CodegenError(f"real must be one of {', '.join(REAL_TYPES)}, got {self.real!r}")
        if self.real == "float" and self.parameter_derivatives:
            raise CodegenError("parameter_derivatives is for rodgen's double-precision runtime; use it with "
                               "real='double'")
        if self.real == "float" and self.jacobian:
            raise CodegenError("the RHS Jacobian is generated in double only; use jacobian=None or False with "
                               "real='float'")

    def wants_jacobian(self, nq: int) -> bool:
        """Whether the Jacobian of the right-hand side is generated for a model of ``nq`` coordinates."""
        if self.real != "double":
            return False
        return True if self.jacobian is None else bool(self.jacobian)

    def wants_routine(self, name: str, *, constrained: bool = False) -> bool:
        """Whether the table routine ``name`` is generated: every routine unless :attr:`routines` leaves out one of
        :data:`ELECTIVE_ROUTINES` (never ``bias`` of a model with constraint blocks, ``constrained``)."""
        if self.routines is None or name not in ELECTIVE_ROUTINES or (constrained and name == "bias"):
            return True
        return name in self.routines

    def wants_constrained_terms(self, nq: int) -> bool:
        """Whether a model of ``nq`` coordinates with constraint blocks gets ``<prefix>_constrained_terms``."""
        if self.real != "double":
            return False
        if self.constrained_terms is None:
            return nq <= CONSTRAINED_TERMS_AUTO_MAX_NQ
        return bool(self.constrained_terms)


def prefix_of(name: str) -> str:
    """The lower-case C prefix of a model name; refuses names that are not safe identifiers.

    The name and its lower-case form must both pass the model stage's
    :func:`rodgen.model.core.check_name` (``Int`` would give the C keyword ``int``).
    """
    try:
        check_name(name, "model name")
    except ModelError as exc:
        raise CodegenError(f"{exc.detail}; it cannot be used as a C prefix") from None
    prefix = name.lower()
    try:
        check_name(prefix, "C prefix")
    except ModelError as exc:
        raise CodegenError(f"model name {name!r} gives the C prefix {prefix!r}: {exc.detail}; "
                           f"rename the model") from None
    return prefix
