"""Plan layer: every decision, one frozen ``KernelPlan`` per op; no C++ text.

``kernel`` (``build_plan``) decides each op's differentiable inputs and outputs, its
Node, what is saved and which guard; ``infos``/``match``/``formulas``/``values`` read the
derivatives, ``mutating``/``views``/``inplace_or_view`` the in-place, out= and view ops,
``registrations``/``schemas``/``structured`` an op library's backends (``library``: all an op
library registers besides Autograd, one record), ``stable`` the same on the
LibTorch stable ABI (target release, stable kernel types); ``policy`` holds the
per-release operator lists and ``target`` resolves the release the code is built for.

May import: ``base``, ``inputs``, ``model``.
"""
