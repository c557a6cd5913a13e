"""The shared core of ray-train-compat (private: users import ``compat``).

What the public package (``compat``) and both engines (``v1``, ``v2``) share: the interfaces an
engine implements (:mod:`~compat_core.run.engine`), the mode (:mod:`~compat_core.switch`), the records
and rounds model and each semantics' pure functions, the run ledger, storage through
``pyarrow.fs``, V1's log writing, usage records, messages, errors and the Ray-release facts.

It imports no engine and not the public package, and importing it patches nothing in Ray.
docs/architecture.md draws the layers.
"""
