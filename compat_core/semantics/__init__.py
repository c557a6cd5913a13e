"""What a user observes of a run in either semantics, and what a run leaves on disk: the
records-and-rounds model (:mod:`.rounds`), each semantics' view of it (:mod:`.observed`), the
Result and its one builder (:mod:`.result`), V1's logs (:mod:`.v1_logs`), what is read back
from a run directory (:mod:`.stored`), job-level restore (:mod:`.restore`) and the V1-only reads
of a Result (:mod:`.reads`)."""
