"""Drafting with vision-language models: drafter backends (an OpenAI-compatible server, or a local
model through transformers), their settings, and the job body that runs a prompt version over a
batch of items (`run.draft_batch`)."""
