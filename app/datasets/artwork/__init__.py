"""ExpArt: artwork articles split into section texts; keep or drop sections, judge model explanations."""
