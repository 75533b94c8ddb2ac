"""What machine this is, for benchmark tables: ratios measured on one machine do
not carry to another (some have AVX-512, some AVX2 only)."""

from __future__ import annotations


def vector_width() -> int:
    """The CPU's widest float64 vector in bits: 512 with AVX-512F, 256 with AVX2,
    else 128 (also where ``/proc/cpuinfo`` cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return 128
    return 512 if " avx512f" in flags else 256 if " avx2" in flags else 128
