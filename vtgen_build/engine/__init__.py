"""The generation engine: one ``generate`` run, from inputs to a written output directory.

``generate`` (options, shards, the run under the output's lock), ``incremental`` (which
ops changed since the last run, and redoing only those), ``cache`` (the per-op fragment
cache), ``manifest`` (what was written, with content hashes), ``planned`` (a run's model and plan of
every op, which both Python writers render from), ``python_api`` (writing an op library's typed
Python API), ``python_autograd`` (writing its Python autograd module)
and ``noop`` (the no-op record ``.vtgen-quick``, which lets the console entry point answer
an unchanged rerun before importing anything heavy).

May import: ``base``, ``inputs``, ``model``, ``plan``, ``emit``, ``stubs``.  Never the
command line, the compile check or gradcheck: they drive the engine, not the reverse.
"""
