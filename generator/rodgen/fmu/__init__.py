"""FMU export: a compiled model as an FMI 2.0 or 3.0 Functional Mock-up Unit (Model Exchange, Co-Simulation).

    rodgen.export_fmu("examples/exo5.yaml", "exo5.fmu")                      # Co-Simulation (RK4 in DoStep)
    rodgen.export_fmu(model, "exo5.fmu", kind="both", fmi_version="3.0")     # and Model Exchange, FMI 3.0

The FMU is a consumer of what the toolchain builds: the model's generated C and rodgen's C runtime
(the integrators of ``rodgen_simulate.c``, the hybrid simulator of ``rodgen_contact.c``) go into
``sources/`` with the model-independent core ``rodgen_fmu_core.c`` (value references, stepping, events,
FMU states, directional derivatives), the thin FMI layer of the version (``rodgen_fmi2.c`` or
``rodgen_fmi3.c``) and a ``rodgen_fmu.h`` naming the model's table; ``modelDescription.xml`` comes from
the model's table (sizes, names, default parameters, initial coordinates, constraint blocks) and its
parameters' units; the binary is compiled with the toolchain's compiler. The FMI headers are the
importer's (the sources compile against the headers of the tool that imports them); rodgen takes them
from the installed ``fmpy`` package to compile the binary.
"""
from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union
from xml.sax.saxutils import quoteattr

from ..errors import BuildError

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import CompiledModel

KINDS = ("cs", "me", "both")
VERSIONS = ("2.0", "3.0")
#: The FMI layers shipped beside this module (model independent), by version, over one core.
WRAPPERS = {"2.0": "rodgen_fmi2.c", "3.0": "rodgen_fmi3.c"}
CORE = ("rodgen_fmu_core.c", "rodgen_fmu_core.h")


@dataclass(frozen=True)
class Variable:
    """One scalar variable of the FMU: its value reference and attributes in modelDescription.xml."""

    name: str
    vr: int
    causality: str          # parameter, input, output, local, independent
    variability: str        # continuous, tunable, fixed
    start: Optional[float] = None
    initial: Optional[str] = None
    unit: str = ""
    description: str = ""
    derivative: Optional[int] = None   # 1-based index of the state this is the derivative of
    indicator: bool = False            # an event indicator of Model Exchange


def fmi_headers(version: str = "2.0") -> Path:
    """The folder of the FMI headers of ``version`` (``fmi2Functions.h`` or ``fmi3Functions.h``): the installed
    fmpy's ``c-code``, or ``$RODGEN_FMI_HEADERS``."""
    header = "fmi3Functions.h" if version == "3.0" else "fmi2Functions.h"
    env = os.environ.get("RODGEN_FMI_HEADERS")
    candidates = [Path(env)] if env else []
    try:
        import fmpy
        candidates.append(Path(fmpy.__file__).parent / "c-code")
    except ImportError:
        pass
    for c in candidates:
        if (c / header).is_file():
            return c
    raise BuildError(f"compiling an FMU needs the FMI {version} headers ({header}): install fmpy "
                     f"(pip install fmpy), or set RODGEN_FMI_HEADERS to a folder holding them")


@dataclass(frozen=True)
class Control:
    """A controller compiled into the FMU: its kind (0 none, 1 PD, 2 C), parameters and memory."""

    kind: int = 0
    names: tuple[str, ...] = ()
    start: tuple[float, ...] = ()
    state: tuple[float, ...] = ()
    source: Optional[Path] = None
    symbol: str = ""


def control_of(robot: "CompiledModel", controller: Any) -> Control:
    """The FMU's view of ``controller``: None, a :class:`rodgen.PD` toward one posture, or a
    :class:`rodgen.CController` compiled from a C source."""
    import numpy as np

    from ..runtime import PD, CController
    if controller is None:
        return Control()
    if isinstance(controller, PD):
        ref = controller.reference
        if len(ref.t) != 1:
            raise ValueError(f"the FMU's PD law holds one set point (tunable parameters pd.q_ref.*); its reference "
                             f"has {len(ref.t)} samples: give Reference.hold(q) or Reference([0], q, qd, qdd)")
        if ref.q.shape[1] != robot.nq:
            raise ValueError(f"the PD's reference has {ref.q.shape[1]} coordinates; the model {robot.name!r} "
                             f"has {robot.nq}")
        gains = []
        for name, g in (("kp", controller.kp), ("kd", controller.kd)):
            a = np.broadcast_to(np.asarray(g, dtype=float), (robot.nu,)) if np.ndim(g) == 0 else \
                np.asarray(g, dtype=float)
            if a.shape != (robot.nu,):
                raise ValueError(f"the PD's {name} has {a.size} gains; the model {robot.name!r} has {robot.nu} inputs")
            gains.append(a)
        velocities = velocity_names(robot)
        names = tuple(f"pd.{k}.{u}" for k in ("kp", "kd") for u in robot.inputs) + tuple(
            f"pd.q_ref.{c}" for c in robot.coordinates) + tuple(
            f"pd.{k}.{c}" for k in ("qd_ref", "qdd_ref") for c in velocities)
        start = np.concatenate(gains + [ref.rows(robot.nv)[0]])
        return Control(1, names, tuple(float(x) for x in start))
    if isinstance(controller, CController):
        if controller.source is None or not Path(controller.source).is_file():
            raise ValueError(f"an FMU compiles its controller from C source; the CController {controller.symbol!r} "
                             f"was loaded from the library {controller.library}")
        params = tuple(float(x) for x in controller.params)
        return Control(2, tuple(f"controller.params[{i}]" for i in range(len(params))), params,
                       tuple(float(x) for x in controller.state), Path(controller.source), controller.symbol)
    raise TypeError(f"controller must be None, a rodgen.PD or a rodgen.CController; got {type(controller).__name__}")


def velocity_names(robot: "CompiledModel") -> list[str]:
    """The names of the velocities in the FMU (``qd.<name>``): a coordinate's name for its rate, a free,
    spherical or planar joint's velocities ``<link>_vx ... <link>_wz`` (in the link's frame)."""
    if robot.nv == robot.nq and not robot.lie_joints:
        return list(robot.coordinates)
    return [v[:-1] if v.endswith("'") else v for v in robot.velocities]


def force_names(robot: "CompiledModel") -> list[tuple[str, str]]:
    """The names and units of the constraint forces (one per row of the model's constraint blocks, in row
    order): a contact's tangential and normal force (``force.<block>.t``, ``.n``; in space ``.t1``, ``.t2``,
    ``.n``; a flat foot's also its moments about the frame's origin ``.mt1``, ``.mt2``, ``.mn``), a loop's force
    (``.x``, ``.y``, ``.z``, then its moments ``.rx``, ``.ry``, ``.rz``), a limit's or dry friction's generalized
    force (``force.<block>``)."""
    out: list[tuple[str, str]] = []
    for b in robot.constraints:
        if b.nrows == 1:
            out.append((f"force.{b.name}", ""))
        elif b.kind == "contact":
            axes = ["t", "n"] if b.nrows == 2 else ["t1", "t2", "n", "mt1", "mt2", "mn"][:b.nrows]
            out += [(f"force.{b.name}.{a}", "N" if not a.startswith("m") else "N.m") for a in axes]
        else:
            axes = ["x", "y", "z", "rx", "ry", "rz"] if b.nrows in (3, 6) else ["x", "y"]
            out += [(f"force.{b.name}.{a}", "N" if not a.startswith("r") else "N.m") for a in axes[:b.nrows]]
    return out


def variables(robot: "CompiledModel", control: Control = Control()) -> list[Variable]:
    """The FMU's variables in value-reference order (as ``rodgen_fmu_core.h`` numbers them): the states
    [q (nq), qd (nv)], their derivatives (the configuration rate, the accelerations), inputs, parameters,
    outputs, event indicators, ``fmu.max_step`` and ``time``."""
    nq = robot.nq
    q0 = list(robot.initial_state()[:nq]) if nq else []
    velocities = velocity_names(robot)
    units = {p.name: p.unit for p in getattr(robot.model, "parameters", ())}
    docs = {p.name: p.doc for p in getattr(robot.model, "parameters", ())}
    p0 = list(robot.parameter_vector())
    out: list[Variable] = []

    def add(*args: Any, **kw: Any) -> None:
        out.append(Variable(args[0], len(out), *args[1:], **kw))

    for i, c in enumerate(robot.coordinates):
        add(f"q.{c}", "local", "continuous", float(q0[i]), "exact", description=f"coordinate {c}")
    for c in velocities:
        add(f"qd.{c}", "local", "continuous", 0.0, "exact", description=f"velocity of {c}" if c in robot.coordinates
            else f"velocity {c} (of a free, spherical or planar joint, in its link's frame)")
    for i, c in enumerate(robot.coordinates):
        add(f"der(q.{c})", "local", "continuous", initial="calculated", derivative=i + 1)
    for i, c in enumerate(velocities):
        add(f"der(qd.{c})", "local", "continuous", initial="calculated", derivative=nq + i + 1)
    for c in robot.inputs:
        add(f"u.{c}", "input", "continuous", 0.0, description=f"input {c}")
    for name, value in zip(robot.parameters, p0):
        add(name, "parameter", "tunable", float(value), "exact", unit=units.get(name, ""),
            description=docs.get(name, ""))
    for name, value in zip(control.names, control.start):
        add(name, "parameter", "tunable", value, "exact",
            description="a parameter of the controller compiled into the FMU")
    for pt in robot.point_names if not robot.spatial else ():
        for a in "xy":
            add(f"point.{pt}.{a}", "output", "continuous", initial="calculated", unit="m",
                description=f"position of the point {pt} ({a}, ground frame)")
    for fr in robot.frame_names if robot.spatial else ():
        for a in "xyz":
            add(f"frame.{fr}.{a}", "output", "continuous", initial="calculated", unit="m",
                description=f"position of the frame {fr} ({a}, ground frame)")
    for what in ("kinetic", "potential", "total"):
        add(f"energy.{what}", "output", "continuous", initial="calculated", unit="J", description=f"{what} energy")
    for name, unit in force_names(robot):
        add(name, "output", "continuous", initial="calculated", unit=unit,
            description="constraint force (lambda of the row; zero while its block is inactive)")
    for b in robot.constraints:
        add(f"indicator.{b.name}.normal", "local", "continuous", initial="calculated", indicator=True,
            description=f"event indicator of {b.name}: its gap while inactive (minus the arming gap until armed), "
                        f"its normal force while active")
        flat = b.kind == "contact" and b.nrows == 6
        add(f"indicator.{b.name}.friction", "local", "continuous", initial="calculated", indicator=True,
            description=f"event indicator of {b.name}: its friction margin while sticking"
                        + (" (or, if smaller, how far its centre of pressure is inside its sole)" if flat else
                           ", its speed while sliding"))
    add("fmu.max_step", "parameter", "fixed", 0.0, "exact", unit="s",
        description="Co-Simulation: largest RK4 step inside a communication step "
                    "(0: one RK4 step of the communication step)")
    add("time", "independent", "continuous", description="simulation time")
    return out


def _xml_number(x: float) -> str:
    return repr(float(x))


@dataclass(frozen=True)
class Capabilities:
    """What the FMU's interfaces can do besides the basics (the same for Model Exchange and Co-Simulation)."""

    states: bool = True          # canGetAndSetFMUstate, canSerializeFMUstate
    directional: bool = False    # providesDirectionalDerivative(s): the generated RHS Jacobian compiled in


def _common(vars_: list[Variable], robot: "CompiledModel", *, version: str, guid: str) -> list[str]:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    nz = sum(v.indicator for v in vars_)
    return ['<?xml version="1.0" encoding="UTF-8"?>',
            f'<fmiModelDescription fmiVersion="{version}"',
            f'  modelName={quoteattr(robot.name)}',
            (f'  guid={quoteattr(guid)}' if version == "2.0" else f'  instantiationToken={quoteattr(guid)}'),
            f'  description={quoteattr(f"{robot.name}: equations of motion generated by rodgen")}',
            f'  generationTool={quoteattr(f"rodgen {robot.version}")}',
            f'  generationDateAndTime="{when}"',
            '  variableNamingConvention="flat"'
            + (f'\n  numberOfEventIndicators="{nz}">' if version == "2.0" else ">")]


def _units(vars_: list[Variable]) -> list[str]:
    units = sorted({v.unit for v in vars_ if v.unit})
    if not units:
        return []
    return ["  <UnitDefinitions>"] + [f"    <Unit name={quoteattr(u)}/>" for u in units] + ["  </UnitDefinitions>"]


def _model_variables(vars_: list[Variable], version: str) -> list[str]:
    """The ModelVariables element: one writer, the version's spelling. FMI 2.0 wraps each variable in a
    ScalarVariable with a Real child for its type's attributes and names a state by its 1-based index; FMI 3.0
    writes a Float64 with all attributes and names a state by its value reference."""
    lines = ["  <ModelVariables>"]
    for k, v in enumerate(vars_):
        attrs = [f"name={quoteattr(v.name)}", f'valueReference="{v.vr}"']
        if v.description:
            attrs.append(f"description={quoteattr(v.description)}")
        attrs += [f'causality="{v.causality}"', f'variability="{v.variability}"']
        if v.initial:
            attrs.append(f'initial="{v.initial}"')
        typed = []
        if v.unit:
            typed.append(f"unit={quoteattr(v.unit)}")
        if v.start is not None:
            typed.append(f'start="{_xml_number(v.start)}"')
        if v.derivative is not None:
            state = v.derivative if version == "2.0" else vars_[v.derivative - 1].vr
            typed.append(f'derivative="{state}"')
        if version == "2.0":
            lines += [f"    <!-- index {k + 1} -->", f"    <ScalarVariable {' '.join(attrs)}>",
                      f"      <Real{''.join(' ' + r for r in typed)}/>", "    </ScalarVariable>"]
        else:
            lines.append(f"    <Float64 {' '.join(attrs + typed)}/>")
    lines.append("  </ModelVariables>")
    return lines


def _model_structure(vars_: list[Variable], version: str) -> list[str]:
    """The ModelStructure element: FMI 2.0 lists variables by their 1-based index, FMI 3.0 by value reference
    (with the event indicators)."""
    key = {v.vr: k + 1 for k, v in enumerate(vars_)} if version == "2.0" else {v.vr: v.vr for v in vars_}
    outputs = [key[v.vr] for v in vars_ if v.causality == "output"]
    ders = [key[v.vr] for v in vars_ if v.derivative is not None]
    lines = ["  <ModelStructure>"]
    if version == "2.0":
        def block(tag: str, refs: list[int]) -> list[str]:
            return [f"    <{tag}>"] + [f'      <Unknown index="{i}"/>' for i in refs] + [f"    </{tag}>"]
        lines += (block("Outputs", outputs) if outputs else []) + block("Derivatives", ders) + \
            block("InitialUnknowns", sorted(outputs + ders))
    else:
        lines += [f'    <Output valueReference="{r}"/>' for r in outputs]
        lines += [f'    <ContinuousStateDerivative valueReference="{r}"/>' for r in ders]
        lines += [f'    <InitialUnknown valueReference="{r}"/>' for r in sorted(outputs + ders)]
        lines += [f'    <EventIndicator valueReference="{v.vr}"/>' for v in vars_ if v.indicator]
    lines.append("  </ModelStructure>")
    return lines


def model_description(robot: "CompiledModel", vars_: list[Variable], *, guid: str, kind: str, identifier: str,
                      sources: list[str], version: str = "2.0", caps: Capabilities = Capabilities()) -> str:
    """The text of modelDescription.xml (FMI 2.0 or 3.0)."""
    lines = _common(vars_, robot, version=version, guid=guid)
    yes = {True: "true", False: "false"}
    if version == "2.0":
        files = "".join(f'\n      <File name={quoteattr(s)}/>' for s in sources)
        common = ('needsExecutionTool="false" canBeInstantiatedOnlyOncePerProcess="false" '
                  f'canNotUseMemoryManagementFunctions="false" canGetAndSetFMUstate="{yes[caps.states]}" '
                  f'canSerializeFMUstate="{yes[caps.states]}" '
                  f'providesDirectionalDerivative="{yes[caps.directional]}"')
        body = f">\n    <SourceFiles>{files}\n    </SourceFiles>\n  </{{}}>"
        me = f'modelIdentifier="{identifier}" completedIntegratorStepNotNeeded="true" {common}'
    else:
        common = (f'canGetAndSetFMUState="{yes[caps.states]}" canSerializeFMUState="{yes[caps.states]}" '
                  f'providesDirectionalDerivatives="{yes[caps.directional]}"')
        body = "/>"
        me = f'modelIdentifier="{identifier}" needsCompletedIntegratorStep="false" {common}'
    cs = f'modelIdentifier="{identifier}" canHandleVariableCommunicationStepSize="true" {common}'
    if kind in ("me", "both"):
        lines.append(f"  <ModelExchange {me}{body.format('ModelExchange')}")
    if kind in ("cs", "both"):
        lines.append(f"  <CoSimulation {cs}{body.format('CoSimulation')}")
    lines += _units(vars_)
    lines.append('  <DefaultExperiment startTime="0.0" stopTime="1.0" stepSize="0.001"/>')
    lines += _model_variables(vars_, version)
    lines += _model_structure(vars_, version)
    lines.append("</fmiModelDescription>")
    return "\n".join(lines) + "\n"


def build_description(identifier: str, sources: list[str]) -> str:
    """The text of sources/buildDescription.xml (FMI 3.0 style, understood by FMPy for 2.0 FMUs too)."""
    files = "\n".join(f'      <SourceFile name={quoteattr(s)}/>' for s in sources)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<fmiBuildDescription fmiVersion="3.0">\n'
            f'  <BuildConfiguration modelIdentifier="{identifier}">\n'
            f'    <SourceFileSet language="C99">\n{files}\n    </SourceFileSet>\n'
            '  </BuildConfiguration>\n</fmiBuildDescription>\n')


def _c_array(values: tuple[float, ...]) -> str:
    return "{ " + ", ".join(repr(v) for v in (values or (0.0,))) + " }"


@dataclass(frozen=True)
class Hybrid:
    """The hybrid simulation of a Co-Simulation FMU of a model with constraint blocks: its initial phase
    (``active``, ``disarmed``: one flag per block) and options (0: the C defaults)."""

    active: tuple[int, ...] = ()
    disarmed: tuple[int, ...] = ()
    arm_gap: float = 0.0
    event_tol: float = 0.0
    on_slip: int = 0
    max_events: int = 0


def _ints(values: tuple[int, ...]) -> str:
    return "{ " + ", ".join(str(int(v)) for v in (values or (0,))) + " }"


def _fmu_header(robot: "CompiledModel", guid: str, kind: str, control: Control = Control(),
                hybrid: Optional[Hybrid] = None, jacobian: bool = False) -> str:
    nframes = len(robot.frame_names) if robot.spatial else 0
    h = hybrid or Hybrid()
    return (f"/* rodgen_fmu.h: the model of this FMU for rodgen_fmu_core.c (written by rodgen.export_fmu). */\n"
            f"#ifndef RODGEN_FMU_H\n#define RODGEN_FMU_H\n"
            f'#include "rodgen_runtime.h"\n#include "{robot.prefix}.h"\n'
            f"#define RODGEN_FMU_TABLE {robot.prefix}_model\n"
            f'#define RODGEN_FMU_GUID "{guid}"\n'
            f"#define RODGEN_FMU_NFRAMES {nframes}\n"
            + (f"#define RODGEN_FMU_FRAMES {robot.prefix}_frames\n" if nframes else "") +
            f"#define RODGEN_FMU_CS {int(kind in ('cs', 'both'))}\n"
            f"#define RODGEN_FMU_ME {int(kind in ('me', 'both'))}\n"
            f"#define RODGEN_FMU_CONTROL {control.kind}\n"
            + (f"#define RODGEN_FMU_CONTROLLER {control.symbol}\n" if control.kind == 2 else "")
            + f"#define RODGEN_FMU_NCTRL {len(control.start)}\n"
            f"#define RODGEN_FMU_CTRL_START {_c_array(control.start)}\n"
            f"#define RODGEN_FMU_NSTATE {len(control.state)}\n"
            f"#define RODGEN_FMU_STATE_START {_c_array(control.state)}\n"
            f"#define RODGEN_FMU_HYBRID {int(hybrid is not None)}\n"
            f"#define RODGEN_FMU_NBLOCKS {max(1, len(h.active))}\n"
            f"#define RODGEN_FMU_ACTIVE0 {_ints(h.active)}\n"
            f"#define RODGEN_FMU_DISARMED0 {_ints(h.disarmed)}\n"
            f"#define RODGEN_FMU_ARM_GAP {float(h.arm_gap)!r}\n"
            f"#define RODGEN_FMU_EVENT_TOL {float(h.event_tol)!r}\n"
            f"#define RODGEN_FMU_ON_SLIP {int(h.on_slip)}\n"
            f"#define RODGEN_FMU_MAX_EVENTS {int(h.max_events)}L\n"
            f"#define RODGEN_FMU_JACOBIAN {int(jacobian)}\n"
            f"#endif\n")


def _on_slip(on_slip: str) -> int:
    codes = {"stop": 0, "continue": 1, "slide": 2}
    if on_slip not in codes:
        raise ValueError(f"on_slip={on_slip!r} is not one of {', '.join(map(repr, codes))}")
    return codes[on_slip]


def _platform_folder(version: str = "2.0") -> str:
    if version == "3.0":     # FMI 3.0's platform tuple <arch>-<os>
        arch = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64",
                "i386": "x86", "i686": "x86"}.get(platform.machine().lower(), platform.machine().lower())
        system = "linux" if sys.platform.startswith("linux") else "darwin" if sys.platform == "darwin" else "windows"
        return f"{arch}-{system}"
    if sys.platform.startswith("linux"):
        return "linux64" if sys.maxsize > 2**32 else "linux32"
    if sys.platform == "darwin":
        return "darwin64"
    return "win64" if sys.maxsize > 2**32 else "win32"


def _robot(model: Any, build_dir: Union[str, Path, None]) -> "CompiledModel":
    from ..runtime import CompiledModel
    if isinstance(model, CompiledModel):
        return model
    from .. import load
    from ..toolchain import build
    if isinstance(model, (str, Path)):
        model = load(model)
    return build(model, build_dir=build_dir, progress=False)


def _version(fmi_version: Any) -> str:
    v = {"2": "2.0", "2.0": "2.0", "3": "3.0", "3.0": "3.0"}.get(str(fmi_version))
    if v is None:
        raise ValueError(f"fmi_version={fmi_version!r}: rodgen exports FMI {', '.join(VERSIONS)}")
    return v


def export_fmu(model: Any, path: Union[str, Path], kind: str = "cs", fmi_version: Any = "2.0", *,
               controller: Any = None, contacts: Any = (), disarmed: Any = (), arm_gap: Optional[float] = None,
               event_tol: Optional[float] = None, on_slip: str = "stop", max_events: int = 0,
               directional_derivatives: Optional[bool] = None, build_dir: Union[str, Path, None] = None,
               binary: bool = True, fmi: Any = None) -> Path:
    """Write the FMU of ``model`` to ``path`` (a ``.fmu`` file); return its path.

    Parameters
    ----------
    model : a model file's path, a Model / ValidModel (built with ``rodgen.build``), or a CompiledModel; a
        floating base (free, spherical or planar joints) has the states [q (nq), qd (nv)], q with each joint's
        quaternion, qd its velocities (``qd.<link>_vx`` ... ``_wz``).
    path : the FMU file to write (its folder must exist).
    kind : ``"cs"`` (Co-Simulation: RK4 inside ``DoStep``), ``"me"`` (Model Exchange) or ``"both"``.
    fmi_version : the FMI version, ``"2.0"`` or ``"3.0"`` (``2`` and ``3`` too); ``fmi=`` is the same.
    controller : None (the plant alone: its inputs are the FMU's inputs), a :class:`rodgen.PD` toward one
        set point (gains and set point as tunable parameters ``pd.*``, the FMU's inputs its feedforward), or a
        :class:`rodgen.CController` built from a C file (compiled into the FMU; its parameters tunable as
        ``controller.params[i]``, the FMU's inputs added to its output).
    contacts, disarmed, arm_gap, event_tol : a model with constraint blocks (contacts, loops, limits, dry
        friction) runs the hybrid simulation of ``robot.simulate(contacts=...)``: inside ``DoStep``
        (Co-Simulation), or as event indicators and jumps at events (Model Exchange); these set its initial
        phase (the initial active set, the blocks allowed below the ground at the start), the arming gap and
        the event tolerance (None: the defaults); ``on_slip`` ("stop", "continue", "slide") and
        ``max_events`` (0: no limit) as for ``simulate``. Point contacts of 2 rows (planar) and 3 rows (spatial)
        touch down, stick, slide and lift off; a flat foot (6 rows) touches down, sticks and lifts off, and a
        tip (its centre of pressure leaving its sole), like a slip with ``on_slip="stop"``, ends the run
        (``terminateSimulation``; FMI 2.0's DoStep returns fmi2Discard with fmi2Terminated).
    directional_derivatives : compile the RHS Jacobian in and provide directional derivatives (True: build
        it if the model was built without it; None: if the compiled model has it loaded; False: no). Not
        with a controller, constraint blocks, or free, spherical or planar joints (their Jacobian is on the
        tangent space).
    build_dir : the build cache of ``rodgen.build``.
    binary : compile the binary for this platform (else a source-only FMU).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not an FMU kind; use one of {', '.join(map(repr, KINDS))}")
    version = _version(fmi if fmi is not None else fmi_version)
    path = Path(path)
    if path.is_dir():
        raise BuildError(f"cannot write the FMU to {path}: it is a folder (give a file name such as model.fmu)")
    if path.parent.exists() and not path.parent.is_dir():
        raise BuildError(f"cannot write the FMU to {path}: {path.parent} is not a folder")
    if not path.parent.is_dir():
        raise BuildError(f"cannot write the FMU to {path}: the folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise BuildError(f"cannot write the FMU to {path}: the folder {path.parent} is not writable")
    robot = _robot(model, build_dir)
    hybrid = None
    if robot.nrows:
        hybrid = Hybrid(tuple(int(a) for a in robot.active_mask(contacts)),
                        tuple(int(a != 0) for a in robot.active_mask(disarmed)),
                        float(arm_gap or 0.0), float(event_tol or 0.0), _on_slip(on_slip), int(max_events))
    elif contacts or disarmed:
        raise ValueError(f"contacts= and disarmed= apply to a model with constraint blocks; {robot.name!r} has none")
    control = control_of(robot, controller)
    jacobian = False
    if directional_derivatives or (directional_derivatives is None and robot.jacobian_built):
        why = ("a controller is compiled in" if control.kind else
               "the model has constraint blocks" if hybrid is not None else
               f"the model has free, spherical or planar joints (nq {robot.nq}, nv {robot.nv}): its RHS Jacobian "
               f"is on the tangent space, not in the FMU's states [q, qd]" if robot.lie_joints else
               "" if robot.has_jacobian else "the model was compiled without its RHS Jacobian")
        if why and directional_derivatives:
            raise ValueError(f"directional_derivatives=True: the FMU of {robot.name!r} cannot provide them ({why})")
        if not why:
            robot = robot.jacobian_model()
            jacobian = True
    identifier = robot.prefix
    what = f"rodgen:{robot.name}:{robot.content_hash}:{kind}:{version}:{control}:{hybrid}:{jacobian}"
    guid = "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, what)) + "}"
    folder = Path(robot.folder)
    model_sources = [Path(robot.source).name]
    runtime_c = ["rodgen_linalg.c", "rodgen_simulate.c", "rodgen_lie.c"]   # rodgen_lie.c: the tracking laws
    headers = [f"{robot.prefix}.h", "rodgen_model.h", "rodgen_runtime.h"]
    if control.kind == 2 or hybrid is not None:   # the hybrid simulator, and any routine a C controller may call
        runtime_c += ["rodgen_mixed.c", "rodgen_contact.c"]
        headers.append("rodgen_contact.h")
    vars_ = variables(robot, control)
    extra = [f"controller_{control.source.name}"] if control.source is not None else []
    wrapper = WRAPPERS[version]
    sources = [wrapper, CORE[0]] + model_sources + runtime_c + extra
    caps = Capabilities(states=True, directional=jacobian)
    with tempfile.TemporaryDirectory(prefix="rodgen-fmu-") as tmp_:
        tmp = Path(tmp_)
        src = tmp / "sources"
        src.mkdir()
        for name in model_sources + runtime_c + headers:
            shutil.copy2(folder / name, src / name)
        for name in (wrapper, *CORE):
            shutil.copy2(Path(__file__).parent / name, src / name)
        if control.source is not None:
            shutil.copy2(control.source, src / extra[0])
        (src / "rodgen_fmu.h").write_text(_fmu_header(robot, guid, kind, control, hybrid, jacobian))
        (src / "buildDescription.xml").write_text(build_description(identifier, sources))
        (tmp / "modelDescription.xml").write_text(model_description(
            robot, vars_, guid=guid, kind=kind, identifier=identifier, sources=sources, version=version, caps=caps))
        from .extras import documentation, model_image
        if version == "3.0":
            (tmp / "terminalsAndIcons").mkdir()
            model_image(robot, tmp / "terminalsAndIcons" / "icon.png")
            doc = tmp / "documentation" / "index.html"
        else:
            model_image(robot, tmp / "model.png")
            doc = tmp / "documentation" / "_main.html"
        doc.parent.mkdir()
        doc.write_text(documentation(robot, vars_, kind, version), encoding="utf-8")
        if binary:
            _compile(src, tmp / "binaries" / _platform_folder(version), identifier, sources, version)
        part = path.with_name(path.name + ".part")
        try:
            with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(tmp.rglob("*")):
                    if f.is_file():
                        z.write(f, f.relative_to(tmp).as_posix())
            os.replace(part, path)
        except OSError as exc:
            part.unlink(missing_ok=True)
            raise BuildError(f"cannot write the FMU to {path}: {exc.strerror or exc}") from None
    return path


def _compile(src: Path, out: Path, identifier: str, sources: list[str], version: str = "2.0") -> None:
    from ..toolchain.compiler import BuildOptions, compile_model, library_suffix
    headers = fmi_headers(version)
    with tempfile.TemporaryDirectory(prefix="rodgen-fmu-build-") as work_:
        work = Path(work_)
        for f in src.iterdir():
            shutil.copy2(f, work / f.name)
        lib = identifier + library_suffix()
        options = BuildOptions(optimization="O2", extra_cflags=(f"-I{headers}",), arch=None)  # shipped: portable
        try:
            compile_model(work, sources=sources, library=lib, options=options)
        except BuildError as exc:
            raise BuildError(f"compiling the FMU's binary failed: {str(exc).splitlines()[0]}", command=exc.command,
                             returncode=exc.returncode, log=exc.log) from None
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(work / lib, out / lib)


__all__ = ["export_fmu", "Control", "control_of", "model_description", "variables", "force_names", "velocity_names",
           "fmi_headers", "Variable", "Capabilities", "KINDS", "VERSIONS"]
