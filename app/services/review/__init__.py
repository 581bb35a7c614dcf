"""Review of finished answers, equivalence judgements, and agreement between annotators."""
