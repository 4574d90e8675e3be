"""Plans to C++ text: pure functions and templates, never a decision of their own.

Kernels, backward Nodes, ADInplaceOrView kernels, registrations, schemas and the typed
Python API's text (``files`` assembles them per shard); the Python autograd of an op library
(``translate`` translates a formula, ``python_autograd`` writes the module's text);
``describe`` spells a plan for people (``inspect --op``); ``output_index`` reads generated
text back (which kernel or Node sits at which lines), for the compile check and
``--changed-since``.

May import: ``base``, ``inputs``, ``model``, ``plan``, ``translate`` (and ``vtgen_build.__version__``).
"""
