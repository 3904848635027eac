r"""Regular expressions over strings of ASCII digits, run as deterministic automata.

:mod:`nbeval.detectors.phone_plans` asks, for every candidate of a run and every region, whether
the candidate's digits fullmatch a long pattern built from the region's numbering plan (17,000
characters for the NANP). The re module backtracks through it, up to 30 µs a call, 16 times a
candidate; automata read the digits once, a table lookup a digit, for all the regions at once.

:meth:`Patterns.compile` turns a pattern into a node of Brzozowski derivatives: ``re``'s own
parse of the pattern, a lookahead as an intersection (``(?=X)Y`` holds where ``X`` followed by
anything and ``Y`` both do; ``(?!X)``, a complement) and ``$`` as "nothing left". Nodes are
interned and simplified (unions and intersections as sets), so a node's derivatives are finitely
many: :meth:`Patterns.minimal` reads them all, from each the derivative for each digit (once for
the digits no branch tells apart), and merges the states no string tells apart (Moore), a few
hundred a region. The language over the digits is exactly the pattern's: the re module's search
tries every branch, and what a lookahead matched changes nothing after it; a construct this does
not read (back references, look-behinds, ``\b``, possessive repeats) makes ``compile`` return
None, and the caller keeps the re module. :class:`DigitAutomaton` reads several automata
together, building their product as strings are read (some thousands of states on 1 MB of
phone-shaped text). ``tests/privacy/test_phone_scan_exact.py`` compares the automata with the
patterns.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

__all__ = ["DigitAutomaton", "Patterns", "Table", "TooLarge"]

_DIGITS = "0123456789"
_ALL = (1 << 10) - 1  # a set of digits as a 10-bit mask
_MEMBERS = [tuple(d for d in range(10) if mask >> d & 1) for mask in range(_ALL + 1)]

# Node kinds. A node is an int; its kind and arguments are kept in ``_Nodes``.
_EMPTY, _EPS, _SET, _CAT, _OR, _AND, _NOT, _STAR = range(8)


class _Unsupported(Exception):
    """A construct whose language this module does not compute."""


class _Nodes:
    """Interned nodes with their nullability and (memoized) derivatives."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.args: list[Any] = []
        self.nullable: list[bool] = []
        self.ids: dict[tuple[int, Any], int] = {}
        self.steps: list[list[int] | None] = []
        self.parts: dict[int, tuple[int, ...]] = {}
        self.empty = self._intern(_EMPTY, None, False)
        self.eps = self._intern(_EPS, None, True)
        self.anything = self.not_(self.empty)  # every string of digits

    def _intern(self, kind: int, args: Any, nullable: bool) -> int:
        key = (kind, args)
        node = self.ids.get(key)
        if node is None:
            node = self.ids[key] = len(self.kind)
            self.kind.append(kind)
            self.args.append(args)
            self.nullable.append(nullable)
            self.steps.append(None)
        return node

    def set_(self, mask: int) -> int:
        return self.empty if mask == 0 else self._intern(_SET, mask, False)

    def cat(self, a: int, b: int) -> int:
        if a == self.empty or b == self.empty:
            return self.empty
        if a == self.eps:
            return b
        if b == self.eps:
            return a
        if self.kind[a] == _CAT:  # kept right-nested, so that equal languages meet as equal nodes more often
            first, rest = self.args[a]
            return self.cat(first, self.cat(rest, b))
        return self._intern(_CAT, (a, b), self.nullable[a] and self.nullable[b])

    def or_(self, nodes: Iterable[int]) -> int:
        flat: set[int] = set()
        kind, args = self.kind, self.args
        for n in nodes:
            if kind[n] == _OR:
                flat.update(args[n])
            else:
                flat.add(n)
        flat.discard(self.empty)
        if len(flat) < 2:
            return flat.pop() if flat else self.empty
        if self.anything in flat:
            return self.anything
        members = frozenset(flat)
        node = self.ids.get((_OR, members))
        if node is not None:
            return node
        return self._intern(_OR, members, any(map(self.nullable.__getitem__, members)))

    def and_(self, nodes: Iterable[int]) -> int:
        flat: set[int] = set()
        kind, args = self.kind, self.args
        for n in nodes:
            if kind[n] == _AND:
                flat.update(args[n])
            else:
                flat.add(n)
        flat.discard(self.anything)
        if len(flat) < 2:
            return flat.pop() if flat else self.anything
        if self.empty in flat:
            return self.empty
        if self.eps in flat:  # only the empty string is left, if every other member holds it
            return self.eps if all(map(self.nullable.__getitem__, flat)) else self.empty
        members = frozenset(flat)
        node = self.ids.get((_AND, members))
        if node is not None:
            return node
        return self._intern(_AND, members, all(map(self.nullable.__getitem__, members)))

    def not_(self, a: int) -> int:
        if self.kind[a] == _NOT:
            return int(self.args[a])
        return self._intern(_NOT, a, not self.nullable[a])

    def star(self, a: int) -> int:
        if a in (self.empty, self.eps):
            return self.eps
        return self._intern(_STAR, a, True)

    def step(self, node: int, digit: int) -> int:
        """The derivative of ``node`` by ``digit`` (0-9): the strings ``s`` with ``digit + s`` in it."""
        row = self.steps[node]
        if row is None:
            row = self._row(node)
        return row[digit]

    def _row(self, node: int) -> list[int]:
        """The ten derivatives of ``node``, each computed once for all the digits of its class."""
        row = [0] * 10
        for cls in self.classes(node):
            found = self._derive(node, (cls & -cls).bit_length() - 1)
            for d in _MEMBERS[cls]:
                row[d] = found
        self.steps[node] = row
        return row

    def classes(self, node: int) -> tuple[int, ...]:
        """Return the masks of digits that ``node`` cannot tell apart.

        Each digit's derivative is the same within a mask: the sets the node may read first, refined
        against each other.
        """
        known = self.parts.get(node)
        if known is not None:
            return known
        kind, args = self.kind[node], self.args[node]
        if kind == _SET:
            found: tuple[int, ...] = tuple(m for m in (args, _ALL & ~args) if m)
        elif kind == _CAT:
            found = self.classes(args[0])
            if self.nullable[args[0]]:
                found = _refine(found, self.classes(args[1]))
        elif kind in (_OR, _AND):
            found = (_ALL,)
            for n in args:
                found = _refine(found, self.classes(n))
                if len(found) == 10:
                    break
        elif kind in (_NOT, _STAR):
            found = self.classes(args)
        else:
            found = (_ALL,)
        self.parts[node] = found
        return found

    def _derive(self, node: int, digit: int) -> int:
        kind, args = self.kind[node], self.args[node]
        if kind == _SET:
            return self.eps if args >> digit & 1 else self.empty
        if kind == _CAT:
            first, rest = args
            head = self.cat(self.step(first, digit), rest)
            return self.or_((head, self.step(rest, digit))) if self.nullable[first] else head
        if kind == _OR or kind == _AND:
            steps, row = self.steps, self._row
            found = [(steps[n] or row(n))[digit] for n in args]
            return self.or_(found) if kind == _OR else self.and_(found)
        if kind == _NOT:
            return self.not_(self.step(args, digit))
        if kind == _STAR:
            return self.cat(self.step(args, digit), node)
        return self.empty  # the empty language and the empty string


def _refine(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if len(b) == 1:
        return a
    return tuple(x & y for x in a for y in b if x & y)


def _constants() -> Any:
    return re._constants  # type: ignore[attr-defined]


def _charset(items: Any) -> int:
    """The digits a character class (``re``'s parse of ``[...]``) holds, as a mask."""
    c = _constants()
    mask, negate = 0, False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            mask |= 1 << _DIGITS.index(chr(av)) if chr(av) in _DIGITS else 0
        elif op is c.RANGE:
            mask |= sum(1 << i for i, d in enumerate(_DIGITS) if av[0] <= ord(d) <= av[1])
        elif op is c.CATEGORY and av in (c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_NOT_SPACE):
            mask = _ALL
        elif op is not c.CATEGORY or av not in (c.CATEGORY_NOT_DIGIT, c.CATEGORY_NOT_WORD, c.CATEGORY_SPACE):
            raise _Unsupported(op)
    return _ALL & ~mask if negate else mask


class _Converter:
    """Convert ``re``'s parse tree to nodes.

    ``seq(items, then)`` is the language of ``items`` followed by ``then`` (the rest of the input
    must be in ``then``; a lookahead and ``$`` read it).
    """

    def __init__(self, nodes: _Nodes) -> None:
        self.nodes = nodes
        self.c = _constants()

    def plain(self, items: Any) -> bool:
        """True when ``items`` hold no lookahead and no anchor (they match the same whatever follows)."""
        c = self.c
        for op, av in items:
            if op in (c.ASSERT, c.ASSERT_NOT, c.AT):
                return False
            if op is c.BRANCH and not all(self.plain(alt) for alt in av[1]):
                return False
            if op is c.SUBPATTERN and not self.plain(av[3]):
                return False
            if op in (c.MAX_REPEAT, c.MIN_REPEAT) and not self.plain(av[2]):
                return False
        return True

    def seq(self, items: Any, then: int) -> int:
        for op, av in reversed(list(items)):
            then = self.item(op, av, then)
        return then

    def item(self, op: Any, av: Any, then: int) -> int:
        c, n = self.c, self.nodes
        if op is c.LITERAL:
            return n.cat(n.set_(1 << _DIGITS.index(chr(av)) if chr(av) in _DIGITS else 0), then)
        if op is c.NOT_LITERAL:
            return n.cat(n.set_(_ALL & ~(1 << _DIGITS.index(chr(av))) if chr(av) in _DIGITS else _ALL), then)
        if op is c.ANY:
            return n.cat(n.set_(_ALL), then)
        if op is c.IN:
            return n.cat(n.set_(_charset(av)), then)
        if op is c.BRANCH:
            return n.or_([self.seq(alt, then) for alt in av[1]])
        if op is c.SUBPATTERN:
            return self.seq(av[3], then)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):  # lazy or greedy: the same strings match
            return self.repeat(av[0], av[1], av[2], then)
        if op is c.ASSERT and av[0] == 1:  # (?=X): X then anything, and what follows
            return n.and_((self.seq(av[1], n.anything), then))
        if op is c.ASSERT_NOT and av[0] == 1:
            return n.and_((n.not_(self.seq(av[1], n.anything)), then))
        if op is c.AT and av in (c.AT_END, c.AT_END_STRING):  # nothing may follow
            return n.and_((n.eps, then))
        raise _Unsupported(op)  # look-behinds, ^ inside, \b, back references, atomic groups

    def repeat(self, low: int, high: int, body: Any, then: int) -> int:
        n = self.nodes
        unbounded = high == self.c.MAXREPEAT
        if self.plain(body):
            one = self.seq(body, n.eps)
            tail = n.star(one) if unbounded else n.eps
            for _ in range(0 if unbounded else high - low):
                tail = n.or_((n.eps, n.cat(one, tail)))
            for _ in range(low):
                tail = n.cat(one, tail)
            return n.cat(tail, then)
        if unbounded:
            raise _Unsupported("a repeated lookahead")
        node = then
        for _ in range(high - low):  # each copy sees what follows it
            node = n.or_((then, self.seq(body, node)))
        for _ in range(low):
            node = self.seq(body, node)
        return node


class TooLarge(Exception):
    """An automaton past the number of states a caller allows."""


class Patterns(_Nodes):
    """A store of patterns over the digits (:meth:`compile`) and their automata (:meth:`minimal`).

    A store is dropped once its automata are built: the nodes are only needed to build them.
    """

    def compile(self, pattern: str, then: int | None = None) -> int | None:
        """Compile ``pattern`` to a node for the digit strings it fullmatches.

        The node is for the strings of ASCII digits that ``re.fullmatch(pattern, s)`` matches, or,
        with ``then`` (a node), the strings that start with a match of ``pattern`` and go on with
        one of ``then`` (its lookaheads and ``$`` read on into it). ``^`` is allowed at the very
        start. None when the pattern has a construct this module does not read.
        """
        c = _constants()
        try:
            items = list(re._parser.parse(pattern))  # type: ignore[attr-defined]
            while items and items[0][0] is c.AT and items[0][1] in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
                items = items[1:]  # at the start, where a fullmatch starts
            return _Converter(self).seq(items, self.eps if then is None else then)
        except (_Unsupported, ValueError, re.error, RecursionError):
            return None

    def union(self, nodes: Sequence[int]) -> int:
        """A node for the strings of any of ``nodes``."""
        return self.or_(nodes)

    def reverse(self, node: int) -> int:
        """A node for the reversed strings of ``node``'s language (to read them from the end)."""
        memo: dict[int, int] = {}

        def rev(a: int) -> int:
            if a not in memo:
                kind, args = self.kind[a], self.args[a]
                if kind == _CAT:
                    memo[a] = self.cat(rev(args[1]), rev(args[0]))
                elif kind in (_OR, _AND):
                    members = [rev(x) for x in args]
                    memo[a] = self.or_(members) if kind == _OR else self.and_(members)
                elif kind == _NOT:
                    memo[a] = self.not_(rev(args))
                elif kind == _STAR:
                    memo[a] = self.star(rev(args))
                else:
                    memo[a] = a
            return memo[a]

        return rev(node)

    def minimal(self, node: int, limit: int = 20_000) -> Table:
        """Build the smallest automaton for ``node``'s language.

        Every derivative reachable from it is read, and merged where no string tells them apart.
        :class:`TooLarge` past ``limit`` derivatives.
        """
        index, order, rows = {node: 0}, [node], []
        for x in order:  # grows as new derivatives are met
            row = []
            for y in self.steps[x] or self._row(x):
                if y not in index:
                    index[y] = len(order)
                    order.append(y)
                row.append(index[y])
            rows.append(row)
            if len(order) > limit:
                raise TooLarge(limit)
        return _minimize(rows, [self.nullable[x] for x in order])


#: An automaton as (transitions, accepting states, start): ``table[state * 10 + digit]``.
Table = tuple[list[int], list[bool], int]


def _minimize(rows: list[list[int]], accepts: list[bool]) -> Table:
    """The states of ``rows`` (start 0) merged where no string tells them apart (Moore)."""
    block = [int(a) for a in accepts]
    count = len(set(block))
    targets = [itemgetter(*row) for row in rows]  # a state's ten successors' blocks, in one call
    while True:
        signature: dict[tuple[int, tuple[int, ...]], int] = {}
        block = [signature.setdefault((b, t(block)), len(signature)) for b, t in zip(block, targets, strict=True)]
        if len(signature) == count:
            break
        count = len(signature)
    table, accepting = [0] * (10 * count), [False] * count
    for s, b in enumerate(block):
        table[10 * b : 10 * b + 10] = [block[t] for t in rows[s]]
        accepting[b] = accepts[s]
    return table, accepting, block[0]


class DigitAutomaton:
    """Automata (from :meth:`Patterns.minimal`) read together.

    :meth:`matching` is the union of the ``bits`` of those that accept a string of ASCII digits.
    Their product is built as strings are read, one state per tuple of states met (up to ``limit``,
    then dropped and built again), so that a string is read once whatever the number of automata.
    """

    def __init__(self, tables: Sequence[Table], bits: Sequence[int], limit: int = 100_000) -> None:
        self.bits = tuple(bits)
        self.tables = [table for table, _, _ in tables]
        self.accepting = [accepting for _, accepting, _ in tables]
        self.start = tuple(start for _, _, start in tables)
        # Per digit, each automaton's successors (its table's column): a product state's successor
        # is then one C-level map over them.
        self.columns = [[table[d::10] for table in self.tables] for d in range(10)]
        self.limit = limit
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        live = _Product({}, [], [], [])
        live.initial = self._state(live, self.start)
        self._live = live  # replaced at once: a reader takes the lists of one product

    def _state(self, live: _Product, members: tuple[int, ...]) -> int:
        state = live.states.get(members)
        if state is None:
            found = 0
            for m, accepting, bit in zip(members, self.accepting, self.bits, strict=True):
                if accepting[m]:
                    found |= bit
            state = live.states[members] = len(live.members)
            live.members.append(members)
            live.accepts.append(found)
            live.rows.append({})
        return state

    def matching(self, digits: str) -> int:
        """Run the automaton over ``digits`` and return what its final state accepts.

        States met for the first time are built then, under a lock.
        """
        live = self._live
        rows, state = live.rows, live.initial
        try:
            for ch in digits:
                state = rows[state][ch]
        except KeyError:  # a transition not built yet
            with self._lock:  # another thread may be building (or dropping) states too
                return self._build(digits)
        return live.accepts[state]

    def _build(self, digits: str) -> int:
        if len(self._live.members) > self.limit:
            self._clear()
        live = self._live
        state = live.initial
        for ch in digits:
            row = live.rows[state]
            if ch not in row:
                successors = map(list.__getitem__, self.columns[ord(ch) - 48], live.members[state])
                row[ch] = self._state(live, tuple(successors))
            state = row[ch]
        return live.accepts[state]


class _Product:
    """The states of a :class:`DigitAutomaton` built so far.

    Each one's automata states, accepted bits and successors (by digit character), and the start.
    """

    def __init__(
        self,
        states: dict[tuple[int, ...], int],
        members: list[tuple[int, ...]],
        accepts: list[int],
        rows: list[dict[str, int]],
    ) -> None:
        self.states, self.members, self.accepts, self.rows = states, members, accepts, rows
        self.initial = 0
