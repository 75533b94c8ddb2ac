

def vector_width() -> int:
    """The CPU's widest float64 vector in bits (512 with AVX-512F, 256 with
    AVX2, else 128): print it with every table, since ratios measured on one
    machine do not carry to another."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return 128
    return 512 if " avx512f" in flags else 256 if " avx2" in flags else 128
