"""HTTP layer: page routes, the /api/v1 routes, authentication and template helpers."""
