"""Per-call overhead of an op library's op in an AOTInductor package: eager, the proxy executor, the generated C shim.

``python bench/bench_aoti_call.py LIBRARY --api API_INIT [--fake FAKE_MODULE_FILE]`` loads a built
sample library (``torch.ops.load_library``; LIBRARY is ``_vtsample_ops.so`` of a build with backend
registrations, API_INIT its typed Python API, ``<build>/vtgen/vtsample_ops/python_api/__init__.py``)
and packages modules calling ``vtsample::softsign`` once on a 16-element tensor (torch.export, then
``aoti_compile_and_package``) twice: with ``custom_ops_to_c_shims`` empty (the wrapper calls the op
through AOTInductor's proxy executor) and with the library's generated shims installed
(``install_aoti_c_shims``: the wrapper calls ``aoti_torch_cpu_softsign`` directly).  A third package
runs ``torch.abs`` (Inductor's own generated kernel, no extern call): the runner's cost with no op
of ours in it.  The source of each
package is checked for the call it must make.  Prints microseconds per call (median over rounds of
2,000 calls; the variants take turns within each round, so a change of the machine's load hits them
all alike) and the ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


def _load_module(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _rounds(fns: dict[str, Callable[[], object]], calls: int, rounds: int) -> dict[str, float]:
    """Median microseconds per call of each function, the functions taking turns in every round."""
    for fn in fns.values():
        for _ in range(200):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def _package(model: torch.nn.Module, x: torch.Tensor, shims: dict[Any, list[str]], must_call: str | None) -> Any:
    """``model`` through AOTInductor with ``shims`` as custom_ops_to_c_shims, loaded back; its wrapper
    must call ``must_call`` (None: no op outside the package's own kernels)."""
    import torch._inductor.config as config

    path = str(Path(tempfile.mkdtemp(prefix="bench-aoti-")) / "model.pt2")
    with config.patch({"aot_inductor.custom_ops_to_c_shims": shims}):
        torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)), package_path=path)
    with zipfile.ZipFile(path) as package:
        (wrapper,) = [n for n in package.namelist() if n.endswith(".wrapper.cpp")]
        source = package.read(wrapper).decode()
    if must_call is None:
        assert "aoti_torch_proxy_executor_call_function(" not in source and "aoti_torch_cpu_" not in source
    else:
        assert f"AOTI_TORCH_ERROR_CODE_CHECK({must_call}(" in source, f"the wrapper does not call {must_call}"
    return torch._inductor.aoti_load_package(path)


class Softsign(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.vtsample.softsign(x)


class Abs(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.abs(x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library")
    parser.add_argument("--api", required=True, help="the build's typed Python API (python_api/__init__.py)")
    parser.add_argument("--fake", help="the sample's src/vtsample/_fake.py (its Python fake kernels)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench-inductor-"))
    torch.ops.load_library(args.library)
    sys.modules.setdefault("vtsample", types.ModuleType("vtsample"))
    if args.fake:
        _load_module("vtsample._fake", args.fake)
    api = _load_module("vtsample.ops", args.api)
    api.install_aoti_c_shims(args.library)
    import torch._inductor.config as config

    shims = dict(config.aot_inductor.custom_ops_to_c_shims)
    x = torch.randn(16)
    model = Softsign()
    proxy = _package(model, x, {}, "aoti_torch_proxy_executor_call_function")
    shim = _package(model, x, shims, "aoti_torch_cpu_softsign")
    floor = _package(Abs(), x, {}, None)
    op = torch.ops.vtsample.softsign.default
    with torch.no_grad():
        for runner in (proxy, shim):
            torch.testing.assert_close(runner(x), model(x))
        rows = _rounds(
            {
                "eager op (torch.ops.vtsample.softsign)": lambda: op(x),
                "eager module": lambda: model(x),
                "AOTInductor runner, torch.abs (its own kernel)": lambda: floor(x),
                "AOTInductor runner, proxy executor": lambda: proxy(x),
                "AOTInductor runner, generated C shim": lambda: shim(x),
            },
            args.calls,
            args.rounds,
        )
    for name, us in rows.items():
        print(f"{name:45s} {us:8.2f} us/call")
    values = list(rows.values())
    eager, abs_floor, via_proxy, via_shim = values[0], values[2], values[3], values[4]
    print(f"proxy / eager op: {via_proxy / eager:.2f}x; shim / eager op: {via_shim / eager:.2f}x")
    print(f"shim / proxy: {via_shim / via_proxy:.2f}x")
    print(f"above the runner's own cost (torch.abs package): proxy {via_proxy - abs_floor:+.2f} us, "
          f"shim {via_shim - abs_floor:+.2f} us")  # fmt: skip
    print(f"load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
