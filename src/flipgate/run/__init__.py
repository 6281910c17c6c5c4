"""A run's steps: refs, the pipeline, scoring, shards and the dry-run sample."""
