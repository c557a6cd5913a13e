"""compat inside Ray's machinery: which Ray trainer class runs a compat trainer, a compat trainer
as a Ray Tune trainable, checkpoint validation's two forms carried to Ray's, and the temporary
changes (module attributes, environment variables) made around Ray's code."""
