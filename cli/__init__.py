"""The ``particles`` command line, installed as ``particles_cli`` (see ``main.py``)."""
