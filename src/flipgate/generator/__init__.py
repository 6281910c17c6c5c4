"""The PR's generator held to the base's endpoint, and the replay through it."""
