"""Values and times as the screen shows them (issue 28, item 7): one helper,
rounded for display, while files keep the exact values."""

from __future__ import annotations

import numpy as np

from particles.display import time_text, value_text


def test_grid_values_read_with_six_significant_digits():
    assert value_text(0.1 + 0.2) == "0.3"
    assert value_text(np.linspace(0.1, 0.6, 6)[2]) == "0.3"
    assert value_text(np.float32(0.3)) == "0.3"
    assert value_text(2.0) == "2" and value_text(1e-6) == "1e-06"
    assert value_text(123456789.0) == "1.23457e+08"
    # integers, names and flags as they are
    assert value_text(32) == "32" and value_text(np.int64(7)) == "7"
    assert value_text("sa") == "sa" and value_text(b"usa") == "usa"
    assert value_text(True) == "True" and value_text(None) == "None"


def test_times_read_with_four_significant_digits():
    assert time_text(10235.3) == "1.024e+04"
    assert time_text(0.5) == "0.5" and time_text(1000.0) == "1000" and time_text(0.0) == "0"
    assert time_text(np.float64(0.012345678)) == "0.01235"
    assert time_text(np.inf) == "inf" and time_text(float("nan")) == "nan"
