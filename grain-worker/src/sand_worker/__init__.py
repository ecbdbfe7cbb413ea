"""The SAND grain worker: one process per grain that forks one instance per event."""
