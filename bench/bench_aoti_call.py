"""Per-call overhead of an op library's op in an AOTInductor package, against the eager call.

``python bench/bench_aoti_call.py LIBRARY [--fake FAKE_MODULE_FILE]`` loads a built sample library
(``torch.ops.load_library``), packages a module calling ``vtsample::softsign`` once on a 16-element
tensor (torch.export, then ``aoti_compile_and_package``), loads the package and times, as the
median of 7 rounds of 2,000 calls: the eager op, the eager module, and the AOTInductor runner
(where the op runs through AOTInductor's proxy executor: no generated C shim).  With
``--shim-library`` (bench/aoti_shim_softsign.cpp, built), a second package lists the op in
``custom_ops_to_c_shims``: its wrapper calls ``aoti_torch_cpu_softsign`` directly.  Prints
microseconds per call.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

import torch


def _per_call(fn: Callable[[], object], calls: int = 2000, rounds: int = 7) -> float:
    for _ in range(200):
        fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times) * 1e6


SHIM = "AOTITorchError aoti_torch_cpu_softsign(AtenTensorHandle self, AtenTensorHandle* ret0)"


def _package(model: torch.nn.Module, x: torch.Tensor, shims: dict[object, list[str]]) -> Callable[..., object]:
    """``model`` through AOTInductor (``shims``: custom_ops_to_c_shims), loaded back."""
    import zipfile

    import torch._inductor.config as config

    path = str(Path(tempfile.mkdtemp()) / "softsign.pt2")
    with config.patch({"aot_inductor.custom_ops_to_c_shims": shims}):
        torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)), package_path=path)
    with zipfile.ZipFile(path) as package:
        (wrapper,) = [n for n in package.namelist() if n.endswith(".wrapper.cpp")]
        direct = "aoti_torch_cpu_softsign(" in package.read(wrapper).decode()
    assert direct == bool(shims), "the wrapper calls the shim exactly when one is listed"
    return torch._inductor.aoti_load_package(path)  # type: ignore[no-any-return]


class Softsign(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.vtsample.softsign(x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library")
    parser.add_argument("--fake", help="the sample's src/vtsample/_fake.py (its Python fake kernels)")
    parser.add_argument("--shim-library", help="a library defining aoti_torch_cpu_softsign (see the docstring)")
    args = parser.parse_args()
    torch.ops.load_library(args.library)
    if args.fake:
        sys.modules.setdefault("vtsample", types.ModuleType("vtsample"))
        spec = importlib.util.spec_from_file_location("vtsample._fake", args.fake)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["vtsample._fake"] = module
        spec.loader.exec_module(module)
    x = torch.randn(16)
    model = Softsign()
    runners = {"AOTInductor runner (proxy executor)": _package(model, x, {})}
    if args.shim_library:
        ctypes.CDLL(args.shim_library, mode=ctypes.RTLD_GLOBAL)  # the package's wrapper resolves the shim here
        shims = {torch.ops.vtsample.softsign.default: [SHIM]}
        runners["AOTInductor runner (C shim)"] = _package(model, x, shims)
    with torch.no_grad():
        op = torch.ops.vtsample.softsign.default
        rows = {
            "eager op (torch.ops.vtsample.softsign)": _per_call(lambda: op(x)),
            "eager module": _per_call(lambda: model(x)),
        }
        for name, runner in runners.items():
            torch.testing.assert_close(runner(x), model(x))
            rows[name] = _per_call(lambda runner=runner: runner(x))
    for name, us in rows.items():
        print(f"{name:45s} {us:8.2f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
