"""The fixture's formula helpers in Python (their C++ twins: include/setuptools_ops/helpers.h),
for the generated Python autograd (`python-autograd` in pyproject.toml)."""


def cube_backward(grad, self):
    return grad * 3 * self * self


def scaled(grad, factor):
    return grad * factor
