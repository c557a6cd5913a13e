"""Ray's releases, in one package: what each release has (:mod:`.facts`), the range compat
runs on (:mod:`.supported`), Ray's public names by release with compat's stand-ins
(:mod:`.standins`), and every private name of Ray compat reaches (:mod:`.adapters`). A new Ray
release means editing this package and nothing else."""
