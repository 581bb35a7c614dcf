"""The worker: background jobs on the procrastinate queue, and the model backends behind suggestions."""
