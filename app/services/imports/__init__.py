"""Getting items in: imports (records, images, batches written with COPY) and reading items back."""
