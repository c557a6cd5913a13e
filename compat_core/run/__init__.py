"""A run in progress: the interface each engine implements (:mod:`.engine`), what runs in each
training worker (:mod:`.worker`), the socket records travel on (:mod:`.channel`) and the run
ledger that keeps them (:mod:`.ledger`)."""
