"""The pure decisions: buckets, verdicts, blocking, counts, evidence and what changed."""
