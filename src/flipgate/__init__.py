"""flipgate: gate LLM prompt and model changes on groundedness flips."""

__version__ = "0.1.0"
