"""The compile check (``vtgen-build check``): generate, then compile the generated units.

``run`` generates incrementally, then compiles every translation unit (or one small unit
of the chosen ops) with ``-fsyntax-only`` through ``compile``, mapping each compiler error
back to its op and yaml line through ``emit.output_index``.

May import: ``base``, ``inputs``, ``model``, ``plan``, ``emit``, ``stubs``, ``engine``,
``revisions``, ``compile``.
"""
