"""Start a module of the gradcheck child package in a Python that may hold no vtgen_build.

    python launch.py MODULE [ARGS...]     (MODULE: child or schema_child; its ``main`` gets ARGS)

This directory is loaded as a package of its own name (``vtgen_gradcheck_child``), so its
modules import each other normally; the directory itself is taken off ``sys.path`` first, so
that none of its file names shadows a module torch imports.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

PACKAGE = "vtgen_gradcheck_child"


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(here, "__init__.py"), submodule_search_locations=[here]
    )
    if spec is None or spec.loader is None:
        print(f"cannot load the package in {here}", file=sys.stderr)
        return 2
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    module = importlib.import_module(f"{PACKAGE}.{argv[1]}")
    return int(module.main([argv[0], *argv[2:]]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
