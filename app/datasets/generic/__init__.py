"""generic: one image, one question, a fixed set of answers. Proves the core end to end."""
