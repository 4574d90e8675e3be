"""One build request: what a front end asks the generator for, its rules written once.

The command line, the setuptools hook (``[tool.vtgen_build]``) and CMake's ``vtgen_generate()``
(at configure time, through ``engine.generate.configure_answers``) each turn their own spelling of
the options into one ``BuildRequest``, by ``make_request``: the stable-ABI target parsed (the one
place ``X.Y`` is read), the backend keys parsed, and ``request_problems`` -- the rules of which
options go together -- checked.  A front end differs only in how it names an option in a message
(``Spelling``): ``--stable-abi``, ``'stable-abi'``, ``STABLE_ABI``.  What a request builds besides
the Autograd kernels (the op-library rule, ``is_op_library``) is decided here too.

Light on purpose: the no-op path of ``generate`` imports it (no yaml, no model).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import VtgenError
from .target import DEFAULT_TARGET, Target

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = [
    "CLI",
    "CMAKE",
    "OLDEST_TARGET",
    "SETUPTOOLS",
    "BuildRequest",
    "Spelling",
    "StableTarget",
    "decode_target_version",
    "formulas_problem",
    "is_op_library",
    "make_request",
    "parse_stable_target",
    "request_problems",
]

OLDEST_TARGET = (2, 10)  # torch/csrc/stable/version.h names no older TORCH_VERSION_<X>_<Y>_0


@dataclass(frozen=True)
class Spelling:
    """How a front end names the options of a request in its messages."""

    register_backends: str
    stable_abi: str
    manual_headers: str
    using_namespaces: str
    stub_decls: str
    python_autograd: str
    python_formulas: str


CLI = Spelling("--register-backends", "--stable-abi", "--manual-header", "--using-namespace", "--stub-decls",
               "--python-autograd", "--python-formulas")  # fmt: skip
SETUPTOOLS = Spelling("'register-backends'", "'stable-abi'", "'manual-headers'", "'using-namespaces'",
                      "'stub-decls'", "'python-autograd'", "'python-formulas'")  # fmt: skip
CMAKE = Spelling("REGISTER_BACKENDS", "STABLE_ABI", "MANUAL_HEADERS", "USING_NAMESPACES", "STUB_DECLS",
                 "PYTHON_AUTOGRAD", "PYTHON_FORMULAS")  # fmt: skip


@dataclass(frozen=True, order=True)
class StableTarget:
    """The oldest release a stable-ABI library supports."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def packed(self) -> int:
        """``TORCH_TARGET_VERSION``: ``(major << 56) | (minor << 48)`` (patch and tweak zero)."""
        return (self.major << 56) | (self.minor << 48)

    @property
    def macro(self) -> str:
        """The value as the compiler gets it: ``0x020a000000000000ULL`` for 2.10."""
        return f"0x{self.packed:016x}ULL"

    def at_least(self, version: tuple[int, int]) -> bool:
        return (self.major, self.minor) >= version


def decode_target_version(value: int) -> tuple[int, int]:
    """(major, minor) of a packed ``TORCH_TARGET_VERSION``; its lower 48 bits must be zero."""
    if value < 0 or value >= 1 << 64 or value & ((1 << 48) - 1):
        raise ValueError(f"0x{value:x} is not a packed (major << 56) | (minor << 48) version")
    return value >> 56, (value >> 48) & 0xFF


_TARGET = re.compile(r"^(\d+)\.(\d+)$")
_VERSION = re.compile(r"^(\d+)\.(\d+)")


def parse_stable_target(text: str, source: str, built_against: str | None) -> StableTarget:
    """``X.Y`` as given to ``source``; not older than 2.10, not newer than ``built_against``."""
    m = _TARGET.match(text.strip())
    if m is None:
        raise VtgenError(f"{source}: '{text}' is not a release X.Y (e.g. 2.10)")
    target = StableTarget(int(m.group(1)), int(m.group(2)))
    if not target.at_least(OLDEST_TARGET):
        oldest = StableTarget(*OLDEST_TARGET)
        raise VtgenError(
            f"{source}: {target} is older than the first release with the LibTorch stable ABI ({oldest}); "
            f"target {oldest} or newer, or build without the stable ABI for one release"
        )
    found = _VERSION.match(built_against or "")
    if found is not None and (target.major, target.minor) > (int(found.group(1)), int(found.group(2))):
        raise VtgenError(
            f"{source}: {target} is newer than the torch this build compiles against ({built_against}): its "
            f"headers cannot target a release they predate (PyTorch would only fail when the library loads); "
            f"target {found.group(1)}.{found.group(2)} or older, or build against torch {target}"
        )
    return target


def is_op_library(namespace: str, register_backends: Sequence[str]) -> bool:
    """An op library's backend registrations: keys asked for, in a namespace of its own (``aten``'s
    would have no Functionalize kernels nor AOTInductor shims of their own to register)."""
    return bool(register_backends) and namespace != "aten"


@dataclass(frozen=True)
class BuildRequest:
    """What a front end asks the generator for: the library's shape, the release, the outputs besides
    the C++ directory.  Made by ``make_request`` (a front end's options, checked); tests build it directly."""

    namespace: str = "aten"  # of the yaml's unqualified entries
    register_backends: tuple[str, ...] = ()  # the dispatch keys whose kernels the library registers
    stable: StableTarget | None = None  # a LibTorch stable-ABI library for every release from this one
    manual_headers: tuple[str, ...] = ()
    using_namespaces: tuple[str, ...] = ()
    stub_decls: bool = False
    python_autograd: str | None = None  # the generated Python autograd module's path
    python_formulas: str | None = None  # the author's formulas module, beside it
    target: Target = DEFAULT_TARGET  # the PyTorch release the code is built for, and where it was found
    fake_module: str | None = None  # the Python module registering the ops' fake kernels (RegisterSchema.cpp)
    python_api: str | None = None  # the typed Python API's directory

    @property
    def op_library(self) -> bool:
        return is_op_library(self.namespace, self.register_backends)

    @property
    def dialect(self) -> Dialect:
        """What the library's registrations are written in: ATen's C++ API, or the stable ABI's."""
        from .dialect import CLASSIC, STABLE  # not on the no-op path

        return CLASSIC if self.stable is None else STABLE

    @property
    def classic_op_library(self) -> bool:
        """An op library built against ATen: it also gets RegisterFunctionalize.cpp and the AOTInductor
        C shims (``library_files``)."""
        return self.op_library and self.stable is None

    @property
    def library_files(self) -> tuple[str, ...]:
        """The files of the output directory only a classic op library has (CMake adds them to its target)."""
        return ("RegisterFunctionalize.cpp", "AOTIShims.cpp", "AOTIShims.h") if self.classic_op_library else ()


def formulas_problem(autograd: str | None, formulas: str | None, spell: Spelling) -> str | None:
    """The Python formulas module goes with the Python autograd module, in its directory (the generated
    module imports it relatively)."""
    if formulas is None:
        return None
    if autograd is None:
        return f"{spell.python_formulas} applies to {spell.python_autograd} only"
    if Path(formulas).resolve().parent != Path(autograd).resolve().parent:
        return f"{spell.python_formulas} {formulas!r} must sit beside {spell.python_autograd} {autograd!r}"
    return None


def request_problems(request: BuildRequest, spell: Spelling) -> list[str]:
    """Which options of ``request`` do not go together, each said in the front end's spelling."""
    found = []
    if request.stable is not None:
        if not request.register_backends:
            found.append(f"{spell.stable_abi} needs {spell.register_backends} (the dispatch keys of the library's "
                         "kernels, e.g. CPU Meta)")  # fmt: skip
        # No C++ formula is written in this mode: what only shapes formulas or the stubs is refused, not
        # ignored (--line-directives is a documented no-op: build systems pass it for either mode).
        for given, option in ((request.stub_decls, spell.stub_decls), (request.manual_headers, spell.manual_headers),
                              (request.using_namespaces, spell.using_namespaces)):  # fmt: skip
            if given:
                found.append(f"{option} does not apply with {spell.stable_abi} (no C++ autograd is generated); "
                             "drop it")  # fmt: skip
    problem = formulas_problem(request.python_autograd, request.python_formulas, spell)
    return [*found, *([problem] if problem is not None else [])]


def make_request(
    spell: Spelling,
    *,
    namespace: str = "aten",
    register_backends: str | Sequence[str] = (),
    stable_abi: str | None = None,
    target: Target = DEFAULT_TARGET,
    built_against: str | None = None,
    manual_headers: Sequence[str] = (),
    using_namespaces: Sequence[str] = (),
    stub_decls: bool = False,
    python_autograd: str | None = None,
    python_formulas: str | None = None,
    fake_module: str | None = None,
    python_api: str | None = None,
    describe_only: bool = False,
) -> BuildRequest:
    """The request a front end's options make (``register_backends``: ``CPU,Meta`` or the keys;
    ``target``: the release resolved; ``built_against``: the version of the torch the build compiles
    against where it is not the target's, e.g. the installed one of a build environment), or the first
    of its problems as a ``VtgenError`` (``describe_only``: a request that builds nothing, as ``inspect``
    describes one: its values are parsed and checked, not whether they make a build together)."""
    text = register_backends if isinstance(register_backends, str) else ",".join(register_backends)
    keys: tuple[str, ...] = ()
    if text:
        from .registrations import parse_keys  # not on the no-op path

        try:
            keys = parse_keys(text)
        except VtgenError as exc:
            raise VtgenError(exc.message.replace("--register-backends", spell.register_backends)) from None
    against = built_against if built_against is not None else target.found
    stable = None if stable_abi is None else parse_stable_target(stable_abi, spell.stable_abi, against)
    request = BuildRequest(namespace, keys, stable, tuple(manual_headers), tuple(using_namespaces), stub_decls,
                           python_autograd, python_formulas, target, fake_module, python_api)  # fmt: skip
    problems = [] if describe_only else request_problems(request, spell)
    if problems:
        raise VtgenError(problems[0])
    return request
