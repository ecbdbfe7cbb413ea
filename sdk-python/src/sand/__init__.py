"""SAND: the grain API, the client SDK, the `sand` command line and the emulator."""

__version__ = "0.1.0"
