"""``compat.huggingface``: see :mod:`compat.huggingface.transformers`."""
