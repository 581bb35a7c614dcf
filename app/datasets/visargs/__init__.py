"""VisArgs: visual arguments — the visual premises of an image, its reasoning tree, and a box per premise."""
