"""Annotating: claim an item, submit an answer, finalize it through the stages, sampling, model suggestions."""
