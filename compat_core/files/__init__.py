"""What compat reads and writes: a run directory on its own filesystem, compat's private state
directory on this node, and what an earlier compat pickled, read back."""
