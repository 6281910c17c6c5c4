"""The judge measured against people's labels."""
