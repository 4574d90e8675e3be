"""The stub ATen headers (``include/``) the compile check builds against, and their per-op declarations.

``gen_decls`` writes ``vtgen_decls/*.inc``: declarations of the ops in the yaml, which the
stub headers include (``generate --stub-decls``).

May import: ``base``, ``inputs``, ``model``, ``plan``.
"""
