"""Webhooks: per-workspace endpoints (`hooks`), the events queued for them (`events`), Standard Webhooks signing (`signing`) and sending one attempt (`delivery`)."""
