"""What a perturbator is: a named, documented text transformation with three intensities.

A :class:`Perturbator` rewrites one prompt. It is deterministic for a given
:class:`random.Random` (the caller seeds one per test case and perturbator, see
:func:`nbeval.perturbation.api.perturb`), and a higher intensity changes more: the share of
words (or gaps, or letters) touched is :data:`INTENSITY_SHARE` of the candidates, at least one.

A perturbator whose output may not mean what the prompt meant (word-order jitter, injected
instructions) sets :attr:`Perturbator.changes_meaning`; the expected output and condition are
copied to the perturbed case all the same, so a flip on such a case is weaker evidence.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar

from nbeval.errors import PerturbationError

__all__ = [
    "INTENSITIES",
    "INTENSITY_SHARE",
    "WORD",
    "PerturbationWarning",
    "Perturbator",
    "check_intensity",
    "how_many",
    "id_from_name",
]

#: The intensities, mildest first.
INTENSITIES = ("low", "medium", "high")
#: The share of candidates (words, gaps...) a perturbator touches at each intensity.
INTENSITY_SHARE = {"low": 0.05, "medium": 0.15, "high": 0.30}
#: A word: letters (any script), digits and apostrophes inside.
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


class PerturbationWarning(UserWarning):
    """Something :func:`nbeval.perturb` left out, e.g. a prompt a perturbator could not change."""


def check_intensity(intensity: str) -> str:
    """``intensity`` when it is one of :data:`INTENSITIES`, else a :class:`PerturbationError`."""
    if intensity not in INTENSITY_SHARE:
        msg = f"unknown intensity {intensity!r}; choose from {', '.join(INTENSITIES)}"
        raise PerturbationError(msg)
    return intensity


def how_many(n: int, intensity: str) -> int:
    """Return how many of ``n`` candidates to touch at ``intensity``.

    The intensity's share, rounded, at least one (none when there is no candidate).
    """
    if n <= 0:
        return 0
    return min(n, max(1, round(INTENSITY_SHARE[check_intensity(intensity)] * n)))


def id_from_name(name: str) -> str:
    """The short id of a class name: ``WordOrderPerturbator`` -> ``word_order``."""
    stem = name.removesuffix("Perturbator") or name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower()


class Perturbator:
    """Rewrites a prompt; subclasses set the class attributes and implement :meth:`apply`.

    ``name`` defaults to the class name and ``id`` (the short name used on the command line) to
    its snake-case stem: ``TyposPerturbator`` is ``typos``.
    """

    name: ClassVar[str] = "Perturbator"
    """The name in the category ``perturbed_by:<name>:<intensity>``, e.g. ``TyposPerturbator``."""
    id: ClassVar[str] = ""
    """The short id: ``nbeval.perturb(suite, ["typos"])``, ``nbeval perturb -p typos``."""
    description: ClassVar[str] = ""
    """One line: what the perturbator does."""
    changes_meaning: ClassVar[bool] = False
    """True when the perturbed prompt may ask for something else than the original."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__
        if "id" not in cls.__dict__:
            cls.id = id_from_name(cls.name)

    def categories(self, intensity: str) -> list[str]:
        """Return the categories the perturbed case gets besides ``perturbed_by:<name>:<intensity>``.

        An encoder adds e.g. ``encoding:base64``, which the encoding guardrail reads.

        Args:
            intensity: The intensity the case is perturbed at: ``"low"``, ``"medium"`` or ``"high"``.

        Returns:
            The extra categories; none on the base class.
        """
        return []

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Perturb ``text`` at ``intensity``, drawing only from ``rng``.

        Args:
            text: The prompt to rewrite.
            intensity: ``"low"``, ``"medium"`` or ``"high"``; a higher intensity changes more.
            rng: The only source of randomness, seeded by the caller per test case and perturbator.

        Returns:
            The perturbed prompt.

        Raises:
            NotImplementedError: On the base class; every perturbator implements its own.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
