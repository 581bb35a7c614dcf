"""Getting data out: exports to files and targets, split versions, and the finals stream."""
