"""How configuration fields are given on the command line: :class:`Option` metadata.

Each field of :class:`particles.config.SimulationConfig` that the CLI offers
carries an :class:`Option` (``field(metadata=option(...))``); the CLI builds
its options from them (:func:`particles_cli.options.config_options`).  Help
texts that list a registry's entries are built when asked, so declaring the
fields loads no registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from particles.sphere import INITIAL_CONDITIONS

__all__ = ["Option", "init_help", "observables_help", "omega_help", "option", "registry"]

@dataclass(frozen=True)
class Option:
    """How a configuration field is given on the command line (its field metadata).

    The CLI builds its options from these (:func:`particles_cli.options.config_options`):
    ``--save-every`` for ``save_every``, with this help text, type and choices.

    Attributes
    ----------
    help : str or callable
        The help text; a callable builds it when asked (texts listing a
        registry's entries).  ``{choices}`` is replaced by the entries of
        :attr:`choices`, each as :attr:`item` says.
    type : type, optional
        ``int``, ``float`` or ``str`` of a plain value.
    choices : callable, optional
        Returns the registry (name -> entry) the value is one of.
    item : str
        How one entry is listed: ``str.format`` of ``name`` and ``entry``.
    parse : str, optional
        A value the CLI parses itself: ``"init"`` (a name or PATH.npy),
        ``"matrix"`` (a named matrix or PATH.npy), ``"stop"`` (a number, or
        ``none``: no such stop, which a resume may give over a stored one).
    metavar : str, optional
    """

    help: str | Callable[[], str]
    type: type | None = None
    choices: Callable[[], Mapping[str, Any]] | None = None
    item: str = "{name} ({entry})"
    parse: str | None = None
    metavar: str | None = None

    def text(self) -> str:
        """The help text, with the registry's entries listed."""
        text = self.help() if callable(self.help) else self.help
        if "{choices}" in text:
            listed = "; ".join(self.item.format(name=k, entry=v)
                               for k, v in self.choices().items())
            text = text.replace("{choices}", listed)
        return text


def option(help: str | Callable[[], str], type: type | None = None, **kw: Any) -> dict:
    """Field metadata making a configuration field a command-line option (:class:`Option`)."""
    return {"option": Option(help, type, **kw)}


def registry(module: str, name: str) -> Callable[[], Mapping[str, Any]]:
    """The registry ``module.name``, imported when asked (validating a value loads
    the compiled code's modules; declaring the fields must not)."""
    import importlib

    return lambda: getattr(importlib.import_module(module), name)


def init_help() -> str:
    """``--init``: the initial conditions and their parameters."""
    def form(name: str) -> str:
        param = INITIAL_CONDITIONS[name].parameter
        return f"{name}:{param}" if param else name

    names = " | ".join(form(k) for k, c in INITIAL_CONDITIONS.items()
                       if c.sample is not None or c.text)
    return (f"Initial condition: {names} (angles drawn from a mean-field file's initial "
            "density) | PATH.npy of shape (n, d) or (batch, n, d).")


def omega_help() -> str:
    """``--omega``: the frequency distributions."""
    from particles.fields.frequencies import OMEGA_DISTRIBUTIONS

    return ("Kuramoto natural frequencies (--model kuramoto): "
            + " | ".join(f"{k}:WIDTH[:CENTER]" for k in OMEGA_DISTRIBUTIONS)
            + ", drawn with the seed.")


def observables_help() -> str:
    """``--observables``: the observers, their costs and the default."""
    from particles.observables import OBSERVERS, PAIRWISE_DEFAULT_MAX_N, SPECTRAL_PAIRWISE_MAX_N

    return ("Observers recorded at every frame: "
            + "; ".join(f"{k} ({o.cost}: {o.description})" for k, o in OBSERVERS.items())
            + f". Default: pairwise up to n = {PAIRWISE_DEFAULT_MAX_N} ({SPECTRAL_PAIRWISE_MAX_N} "
            "with the spectral summation; or on the circle at beta = 0), order beyond.")
