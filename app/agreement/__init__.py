"""Agreement metrics: pure functions over plain data (numpy/scipy), no database or web imports."""
