"""The package version, in the lowest layer so that every module (and the files
it writes) can record it without importing the package's public API."""

__version__ = "0.1.0"
