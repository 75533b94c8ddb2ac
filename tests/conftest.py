"""Fixtures shared across test modules."""

from __future__ import annotations

import pytest

import particles.runs.compare as compare_module


@pytest.fixture
def no_comparison_run(monkeypatch):
    """Fail the test if a model of a comparison starts running (bad input must
    be refused before any work)."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(compare_module, "iter_frames", forbidden)
