"""Shared vocabulary and file primitives every room uses.

``errors`` (``VtgenError``, ``Location``, did-you-mean), ``names`` (the identifier,
namespace and include rules options are checked against), ``write`` (the only code that
touches an output directory: atomic write-if-changed, the run's lock) and ``store``
(data-only, hash-checked state files: every cache and record).

May import: the standard library only, and each other; nothing else of vtgen_build.
"""
