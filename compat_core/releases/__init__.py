"""Ray's releases, in one package: what each release has (:mod:`.facts`), Ray's public names by
release with compat's stand-ins (:mod:`.standins`), and every private name of Ray compat reaches
(:mod:`.adapters`). A new Ray release means editing this package (and, for the range compat runs
on, :mod:`compat_core.installed`) and nothing else. The bottom of the core: it imports Ray and
nothing else of compat's."""
