"""Finding and reading the inputs: yaml files in, located records out.

``paths`` finds a PyTorch checkout's or torchgen package's yaml and manual header,
``files`` holds ``Inputs`` (the chosen yaml files) and their content digests, ``load``
reads yaml into ``Entry`` records that keep their ``file:line``.

May import: ``base``.
"""
