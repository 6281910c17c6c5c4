"""The model client and what paces, caps, caches and pools its requests."""
