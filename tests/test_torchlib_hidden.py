"""Binding hidden functions of a loaded library from its symbol table (torchlib/hidden.py).

A stand-in for libtorch: a shared library whose function ``secret`` is hidden (in
``.symtab``, not in the dynamic table).  A caller library declares it as usual; the
binding unit defines it as a jump into the loaded stand-in.  Plain g++, no torch.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.torchlib.hidden import HiddenFunction, HiddenLookup, binding_unit, find_hidden

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="binding is implemented for x86-64"),
]

SECRET = "_ZN4demo6secretEi"  # demo::secret(int)
DATA = "_ZN4demo5tableE"  # demo::table, data


def _stand_in(tmp: Path) -> Path:
    source = tmp / "stand_in.cpp"
    source.write_text(
        "namespace demo {\n"
        '__attribute__((visibility("hidden"))) int secret(int x) { return 7 * x + 1; }\n'
        '__attribute__((visibility("hidden"))) int table[4] = {1, 2, 3, 4};\n'
        "}\n"
        'extern "C" int stand_in_shown(int x) { return demo::secret(x) + demo::table[0]; }\n'
    )
    lib = tmp / "libstand_in.so"
    subprocess.run(
        ["g++", "-O2", "-fPIC", "-shared", "-Wl,-soname,libstand_in.so", str(source), "-o", str(lib)], check=True
    )
    return lib


def _caller(tmp: Path, stand_in: Path, binding: str) -> Path:
    (tmp / "binding.cpp").write_text(binding)
    (tmp / "caller.cpp").write_text(
        'namespace demo { int secret(int); }\nextern "C" __attribute__((visibility("default"))) '
        "int call_secret(int x) { return demo::secret(x); }\n"
    )
    lib = tmp / "libcaller.so"
    flags = ["-O0", "-fPIC", "-shared", "-fvisibility=hidden", "-Wl,--no-undefined", "-Wl,-Bsymbolic"]
    command = [
        "g++",
        *flags,
        str(tmp / "caller.cpp"),
        str(tmp / "binding.cpp"),
        f"-L{tmp}",
        "-Wl,--no-as-needed",
        "-lstand_in",
    ]
    subprocess.run([*command, f"-Wl,-rpath,{tmp}", "-o", str(lib)], check=True)
    return lib


def _load_and_call(lib: Path, x: int) -> tuple[str, int | None]:
    """In a child process: the binding's status, and call_secret(x) when it is ok."""
    probe = (
        "import ctypes, sys\n"
        f"lib = ctypes.CDLL({str(lib)!r})\n"
        "lib.vtgen_gradcheck_hidden_status.restype = ctypes.c_char_p\n"
        "status = lib.vtgen_gradcheck_hidden_status().decode()\n"
        f"print(status, lib.call_secret({x}) if status == 'ok' else '-')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    status, _, value = done.stdout.strip().rpartition(" ")
    return status, None if value == "-" else int(value)


def test_a_hidden_function_is_found_and_data_or_absent_names_are_refused(tmp_path: Path) -> None:
    lib = _stand_in(tmp_path)
    dynamic = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert SECRET not in dynamic  # hidden indeed
    found = find_hidden([lib], [SECRET, DATA, "_ZN4demo7missingEv"])
    assert [f.mangled for f in found.bound] == [SECRET]
    assert found.bound[0].library == "libstand_in.so" and len(found.bound[0].head) > 4
    assert "data" in (found.why(DATA) or "")
    assert "not in libtorch's symbol table" in (found.why("_ZN4demo7missingEv") or "")
    assert HiddenLookup.from_json(found.to_json()) == found
    assert HiddenLookup.from_json([["x", "y", "not an address", "00"]]) is None


def test_a_bound_call_reaches_the_hidden_function(tmp_path: Path) -> None:
    stand_in = _stand_in(tmp_path)
    found = find_hidden([stand_in], [SECRET])
    caller = _caller(tmp_path, stand_in, binding_unit(found.bound))
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(caller)], capture_output=True, text=True).stdout
    assert SECRET not in undefined  # the caller defines it itself, as a jump
    assert _load_and_call(caller, 5) == ("ok", 36)


def test_a_changed_library_is_never_jumped_into(tmp_path: Path) -> None:
    """Code at the address that is not the code seen at build time: nothing is bound."""
    stand_in = _stand_in(tmp_path)
    real = find_hidden([stand_in], [SECRET]).bound[0]
    wrong = HiddenFunction(real.mangled, real.library, real.address, bytes(b ^ 0xFF for b in real.head))
    caller = _caller(tmp_path, stand_in, binding_unit([wrong]))
    status, value = _load_and_call(caller, 5)
    assert "differs from the one the library was built against" in status and value is None


def test_a_binding_needs_functions() -> None:
    with pytest.raises(ValueError):
        binding_unit([])
