"""pyag: load the kernels (the stand-in for the library's .so), then the generated autograd."""
# isort: skip_file

from . import kernels  # noqa: F401  (first: the autograd registers on the ops it defines)
from . import _autograd  # noqa: F401
