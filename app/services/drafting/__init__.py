"""Drafting answers with models: prompts, draft evaluation against gold, suggestions pushed from outside."""
