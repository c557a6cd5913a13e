"""compat inside Ray's machinery: which Ray trainer class runs a compat trainer (:mod:`.frameworks`),
checkpoint validation's two forms carried to Ray's (:mod:`.validation`), and the temporary changes
(module attributes, environment variables) made around Ray's code (:mod:`.patch`). A compat trainer
as a Tune trainable is a run's: :mod:`compat_core.run.tune`."""
