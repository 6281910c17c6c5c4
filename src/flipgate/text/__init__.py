"""Text in and out: decoding and located YAML on the way in, Markdown escaping on the way out."""
