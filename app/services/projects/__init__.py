"""Projects and their stages: create, read, progress; and the jobs page's view of the worker's queue."""
