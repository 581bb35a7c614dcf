"""Use cases. Each takes a session, flushes at most, and never commits: the caller owns the transaction."""
