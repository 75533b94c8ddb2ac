"""Former home of :mod:`particles.analysis.circle` (phases, order parameter,
frequency locking), kept as a re-export for existing imports."""

from particles.analysis.circle import (
    FrequencyLocking,
    OrderParameter,
    order_parameter,
    order_parameter_from_positions,
    phases,
    unwrap_phases,
)

__all__ = [
    "FrequencyLocking",
    "OrderParameter",
    "order_parameter",
    "order_parameter_from_positions",
    "phases",
    "unwrap_phases",
]
