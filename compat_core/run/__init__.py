"""A run in progress: the interface each engine implements (:mod:`.engine`), what runs in each
training worker (:mod:`.worker`), the socket records travel on (:mod:`.channel`), the run
ledger that keeps them (:mod:`.ledger`) and a run as a Ray Tune trial (:mod:`.tune`). The top of
the core: it may import every other part."""
