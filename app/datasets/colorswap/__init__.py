"""ColorSwap: Winoground-style caption pairs whose colour words are swapped, with an image for each caption."""
