"""What drafts do to people: control arms without suggestions, planted wrong drafts (probes), and the
report that tells agreement with a draft from anchoring on it. Pure: no database, no web."""
