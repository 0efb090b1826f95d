"""Where an ordered test is done: the test stations the map declares (``game.hospital_map``:
each station point's ``tests`` keywords, ``priority`` and ``default``, and the map's
``bedside_*`` rule). Nothing here names a room.

The rule: the words of the test name are read (lower case, hyphens and underscores as
spaces, plus ``agents.findings.tokens``: ``EKG`` also reads ``ecg``, ``X-ray`` also
``xray``); a station matches when one of its keywords is among them (a keyword of
several words when all of them are). Of the matching stations the one with the highest
priority wins; priorities are distinct, so the result never depends on the order of
objects in the map. No match: the default station.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.findings import tokens
from game.hospital_map import HospitalMap, Station

__all__ = ["OrderRoute", "OrderRouter", "order_words"]


@dataclass(frozen=True)
class OrderRoute:
    station: str  # point name of where it is done, or "bedside"
    bedside: bool
    rule: str


def order_words(test_name: str) -> frozenset[str]:
    """The words a test name is matched by."""
    return frozenset(tokens(test_name)) | frozenset(test_name.lower().replace("-", " ").replace("_", " ").split())


def _hits(station: Station, words: frozenset[str]) -> list[str]:
    return sorted(k for k in station.keywords if all(w in words for w in k.split()))


@dataclass(frozen=True)
class OrderRouter:
    """Routes test names to stations. Built from a map's declarations
    (:meth:`from_map`), or from explicit :class:`~game.hospital_map.Station` objects
    (tests, other hospitals).

    Raises:
        ValueError: no station, not exactly one default, or two stations with keywords
            that share a priority.
    """

    stations: tuple[Station, ...]
    _ranked: tuple[Station, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        stations = tuple(self.stations)
        object.__setattr__(self, "stations", stations)
        defaults = [s.name for s in stations if s.default]
        if len(defaults) != 1:
            raise ValueError(f"an order router needs exactly one default station, got {defaults or 'none'}")
        ranked = sorted((s for s in stations if s.keywords), key=lambda s: -s.priority)
        for a, b in zip(ranked, ranked[1:]):
            if a.priority == b.priority:
                raise ValueError(f"stations '{a.name}' and '{b.name}' share the priority {a.priority}")
        object.__setattr__(self, "_ranked", tuple(ranked))

    @classmethod
    def from_map(cls, hmap: HospitalMap) -> "OrderRouter":
        """The router of the test stations ``hmap`` declares."""
        return cls(hmap.test_stations)

    @property
    def default(self) -> Station:
        return next(s for s in self.stations if s.default)

    def station(self, name: str) -> Station:
        """The station of that name.

        Raises:
            KeyError: no such station.
        """
        for s in self.stations:
            if s.name == name:
                return s
        raise KeyError(f"no test station named '{name}' (stations: {', '.join(s.name for s in self.stations)})")

    def route(self, test_name: str) -> OrderRoute:
        """Where ``test_name`` is done; ``rule`` says why (the keyword, or the default)."""
        words = order_words(test_name)
        for st in self._ranked:
            hit = _hits(st, words)
            if hit:
                return OrderRoute(st.name, st.bedside, f"keyword '{hit[0]}'")
        d = self.default
        return OrderRoute(d.name, d.bedside, f"default (unknown test name -> {d.room or d.name})")
