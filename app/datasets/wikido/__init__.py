"""WikiDO: Wikipedia image-text pairs whose model-rewritten captions people check for made-up content."""
