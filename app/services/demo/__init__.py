"""The demo projects that `vlcurate demo` loads."""
