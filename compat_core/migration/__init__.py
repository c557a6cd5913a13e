"""What a program relies on of V1: the catalogue of V1-only behaviours, their use counted and
warned at the user's line, and that line itself (every warning compat gives goes there)."""
