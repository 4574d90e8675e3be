"""The formula translator: a derivatives.yaml formula (C++) as a Python expression over torch.

``cpp_expr`` parses a formula into a frozen tree with offsets; ``python_formula`` spells the
tree in Python; ``python_names`` holds the names a generated module reserves and how user text
enters its source; ``python_prelude`` the helper functions a generated module carries.

May import: ``base``, ``inputs``, ``model``, ``plan``.
"""
