r"""The condition language: boolean expressions over substring and regular-expression tests.

::

    ("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"

- ``"text"`` is true when the text occurs in the checked string (case-sensitive).
- ``regexp("pattern")`` is true when a regular-expression search finds the pattern. The unquoted
  form ``regexp(^A.*)`` is accepted too: the pattern is the raw text up to the matching ``)``
  (nested parentheses, ``\)`` and ``[...]`` are respected; spaces are kept as written).
- Inside double quotes ``\"`` is a quote and ``\\`` a backslash; a backslash before any other
  character stays as written, so ``regexp("\d+")`` and ``regexp("\\d+")`` both mean ``\d+``.
- ``NOT`` binds tighter than ``AND``, which binds tighter than ``OR``; parentheses group.
  Keywords are case-insensitive (``and`` = ``AND``); :func:`str` writes them upper-case.

Conditions are parsed by hand into an immutable tree, never run through ``eval``. Each regular
expression search is bounded by ``timeout`` seconds (:class:`~nbeval.errors.RegexTimeout`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from nbeval.data import patterns
from nbeval.errors import BadArgumentType, BadParameter, ConditionError

__all__ = ["And", "Condition", "Not", "Or", "Regexp", "Text", "is_valid_condition", "parse_condition"]

_MAX_DEPTH = 100  # nesting bound, so a hostile condition cannot exhaust the Python stack
_SHOWN_MATCH_CHARS = 40
_Memo = dict["Condition", bool] | None


def _quote(value: str) -> str:
    r"""Write ``value`` as a double-quoted literal that reads back as ``value``.

    A backslash is doubled only where it would otherwise read as an escape (before a quote,
    another backslash or the closing quote), which keeps patterns such as ``\d`` readable.
    """
    out = []
    for i, ch in enumerate(value):
        if ch == '"':
            out.append('\\"')
        elif ch == "\\" and (i + 1 == len(value) or value[i + 1] in '"\\'):
            out.append("\\\\")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Condition:
    """A parsed condition; the nodes are :class:`Text`, :class:`Regexp`, :class:`Not`, :class:`And` and :class:`Or`.

    Trees compare equal when structure and operands are equal; ``source`` (the text parsed) takes no part. ``str()``
    gives a normalized form that parses back to an equal tree: upper-case keywords, quoted patterns, and parentheses
    around every AND/OR group nested in another (``"a" OR ("b" AND "c")``) for the reader's sake.
    """

    source: str = field(default="", compare=False, kw_only=True)
    """The text the condition was parsed from; one built in code gets its canonical text (``str()``)."""

    def __post_init__(self) -> None:
        """Keep the text the condition was parsed from; one built in code gets its canonical text."""
        if not self.source:
            object.__setattr__(self, "source", str(self))

    def evaluate(self, text: str, *, timeout: float | None = patterns.DEFAULT_TIMEOUT) -> bool:
        """Whether ``text`` satisfies the condition; operands are tested left to right, only as far as needed.

        Args:
            text: The text to check (an answer).
            timeout: The seconds each regexp search may take; ``None``: unbounded.

        Returns:
            ``True`` when the condition holds for ``text``.

        Raises:
            BadArgumentType: When ``text`` is not a string.
            RegexTimeout: When a regexp search takes longer than ``timeout``.
        """
        _require_str(text)
        return self._eval(text, timeout, None)

    def check(self, text: str, *, timeout: float | None = patterns.DEFAULT_TIMEOUT) -> tuple[bool, str]:
        """Check ``text`` and say why, in one pass; every operand is tested, each once.

        Args:
            text: The text to check (an answer).
            timeout: The seconds each regexp search may take; ``None``: unbounded.

        Returns:
            ``(result, rationale)``: whether the condition holds, and a note per distinct operand,
            joined by ``"; "``, saying whether it was found (and, for a regexp, what matched).

        Raises:
            BadArgumentType: When ``text`` is not a string.
            RegexTimeout: When a regexp search takes longer than ``timeout``.
        """
        _require_str(text)
        memo: dict[Condition, bool] = {}
        notes = []
        for leaf in self.leaves():
            if leaf not in memo:
                hit = leaf._hit(text, timeout)
                memo[leaf] = hit is not None
                notes.append(f"{leaf} not found" if hit is None else leaf._found(hit))
        return self._eval(text, timeout, memo), "; ".join(notes)

    def explain(self, text: str, timeout: float | None = patterns.DEFAULT_TIMEOUT) -> str:
        """A short rationale naming the operands found and not found in ``text``.

        Args:
            text: The text to check (an answer).
            timeout: The seconds each regexp search may take; ``None``: unbounded.

        Returns:
            The rationale, as :meth:`check` gives it.
        """
        return self.check(text, timeout=timeout)[1]

    def leaves(self) -> Iterator[_Operand]:
        """The operands (strings and regexps), left to right, repeats included.

        Returns:
            An iterator over the leaves of the tree.

        Raises:
            NotImplementedError: On the base class; every node kind defines its own.
        """
        raise NotImplementedError

    def _eval(self, text: str, timeout: float | None, memo: _Memo) -> bool:
        """Whether ``text`` satisfies the condition (each operand's result read from ``memo`` when one is given)."""
        raise NotImplementedError


def _require_str(text: object) -> None:
    """Raise :class:`~nbeval.errors.BadArgumentType` unless ``text`` is a string."""
    if not isinstance(text, str):
        msg = f"a condition is checked against text (str), not {type(text).__name__}"
        raise BadArgumentType(msg)


@dataclass(frozen=True)
class _Operand(Condition):
    """A leaf of the condition tree: something looked for in the text."""

    def leaves(self) -> Iterator[_Operand]:
        """The operand itself: a leaf."""
        yield self

    def _eval(self, text: str, timeout: float | None, memo: _Memo) -> bool:
        """Whether the operand is found in ``text`` (from ``memo`` when given)."""
        return memo[self] if memo is not None else self._hit(text, timeout) is not None

    def _hit(self, text: str, timeout: float | None) -> str | None:
        """The text found, or None."""
        raise NotImplementedError

    def _found(self, hit: str) -> str:
        """How an explanation says the operand was found, given what matched."""
        return f"{self} found"


@dataclass(frozen=True)
class Text(_Operand):
    """True when ``value`` occurs in the text (case-sensitive)."""

    value: str

    def __str__(self) -> str:
        """The text quoted as the condition language writes it."""
        return _quote(self.value)

    def _hit(self, text: str, timeout: float | None) -> str | None:
        """The text when ``text`` contains it, else ``None``."""
        return self.value if self.value in text else None


@dataclass(frozen=True)
class Regexp(_Operand):
    """True when a regular-expression search finds ``pattern`` in the text."""

    pattern: str

    def __post_init__(self) -> None:
        """Compile the pattern now, so that a bad one fails when the condition is built, never mid-run."""
        patterns.compile_user_pattern(self.pattern)  # fail when built, never mid-run
        super().__post_init__()

    def __str__(self) -> str:
        """The operand as the condition language writes it: ``regexp("...")``."""
        return f"regexp({_quote(self.pattern)})"

    def _hit(self, text: str, timeout: float | None) -> str | None:
        """The first match of the pattern in ``text`` (searched with the ``timeout``), else ``None``."""
        match = patterns.search(self.pattern, text, timeout)
        return None if match is None else match.group(0)

    def _found(self, hit: str) -> str:
        """What the explanation says was found: the match, cut when long."""
        if len(hit) > _SHOWN_MATCH_CHARS:
            hit = hit[: _SHOWN_MATCH_CHARS - 3] + "..."
        return f"{self} found {_quote(hit)}"


@dataclass(frozen=True)
class Not(Condition):
    """True when ``operand`` is false."""

    operand: Condition

    def __str__(self) -> str:
        """``NOT`` and its operand, bracketed when that is an AND or an OR."""
        inner = str(self.operand)
        return f"NOT ({inner})" if isinstance(self.operand, _Junction) else f"NOT {inner}"

    def leaves(self) -> Iterator[_Operand]:
        """The leaves of its operand."""
        yield from self.operand.leaves()

    def _eval(self, text: str, timeout: float | None, memo: _Memo) -> bool:
        """The opposite of its operand."""
        return not self.operand._eval(text, timeout, memo)


@dataclass(frozen=True)
class _Junction(Condition):
    """AND or OR of two or more conditions (the subclass says which word)."""

    operands: tuple[Condition, ...]
    _word = ""

    def __post_init__(self) -> None:
        """Flatten nested junctions of the same kind into one, and refuse fewer than two operands."""
        flat: list[Condition] = []
        for op in self.operands:  # (a AND b) AND c is a AND b AND c: one canonical tree
            flat.extend(op.operands if type(op) is type(self) else (op,))
        if len(flat) < 2:
            msg = f"{type(self).__name__} needs at least two operands, got {len(flat)}"
            raise BadParameter(msg)
        object.__setattr__(self, "operands", tuple(flat))
        super().__post_init__()

    def __str__(self) -> str:
        """The operands joined by the junction's word, nested junctions bracketed."""
        parts = (f"({op})" if isinstance(op, _Junction) else str(op) for op in self.operands)
        return f" {self._word} ".join(parts)

    def leaves(self) -> Iterator[_Operand]:
        """The leaves of every operand, in order."""
        for op in self.operands:
            yield from op.leaves()

    def _eval(self, text: str, timeout: float | None, memo: _Memo) -> bool:
        """All operands hold (AND) or any does (OR), stopping at the first that decides."""
        results = (op._eval(text, timeout, memo) for op in self.operands)
        return all(results) if self._word == "AND" else any(results)  # both stop early


@dataclass(frozen=True)
class And(_Junction):
    """True when every operand is true (left to right, stopping at the first false)."""

    _word = "AND"


@dataclass(frozen=True)
class Or(_Junction):
    """True when any operand is true (left to right, stopping at the first true)."""

    _word = "OR"


# ------------------------------------------------------------------------ parsing


class _Token(NamedTuple):
    """A token of the condition language: its kind, value and span in the text."""

    kind: str  # STR, RE, AND, OR, NOT, "(", ")", END
    value: str
    start: int
    end: int


_OPERAND = "expected a quoted string, regexp(...), NOT or '('"
_SEEN = {
    "END": "the end of the condition",
    "STR": "a string",
    "RE": "a regexp",
    "(": "'('",
    ")": "')'",
    "AND": "AND",
    "OR": "OR",
    "NOT": "NOT",
}
_HINTS = {
    "'": "; strings take double quotes",
    "\u201c": '; use straight double quotes (")',
    "\u201d": '; use straight double quotes (")',
}


class _Parser:
    """Recursive descent; tokens are read one at a time so the leftmost problem is reported.

    Grammar: or := and (OR and)* ; and := not (AND not)* ; not := NOT not | primary ;
    primary := STRING | REGEXP | "(" or ")".
    """

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.depth = text, 0, 0
        self.prev_end = 0  # end of the last consumed token: nodes keep their source slice
        self.tok = self._next()

    def fail(self, message: str, position: int) -> ConditionError:
        """A :class:`~nbeval.errors.ConditionError` with ``message`` pointing at ``position`` of the text."""
        return ConditionError(message, text=self.text, position=position)

    def _skip_space(self, i: int) -> int:
        """The first position from ``i`` that is not whitespace."""
        while i < len(self.text) and self.text[i].isspace():
            i += 1
        return i

    def _next(self) -> _Token:
        """Read the next token from the current position."""
        text = self.text
        i = self._skip_space(self.pos)
        if i == len(text):
            return _Token("END", "", i, i)
        ch = text[i]
        if ch in "()":
            self.pos = i + 1
            return _Token(ch, ch, i, i + 1)
        if ch == '"':
            value, self.pos = self._string(i)
            return _Token("STR", value, i, self.pos)
        if ch.isalnum() or ch == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word.upper() in ("AND", "OR", "NOT"):
                self.pos = j
                return _Token(word.upper(), word, i, j)
            if word.lower() == "regexp":
                return self._regexp(i, j)
            msg = f"unknown word '{word}': operands are quoted strings or regexp(...), operators AND, OR and NOT"
            raise self.fail(msg, i)
        raise self.fail(f"unexpected character {ch!r}{_HINTS.get(ch, '')}", i)

    def _string(self, start: int) -> tuple[str, int]:
        """Read the double-quoted literal opening at ``start``: (value, end)."""
        text, i = self.text, start + 1
        out: list[str] = []
        while i < len(text):
            if text[i] == '"':
                return "".join(out), i + 1
            if text[i] == "\\" and text[i + 1 : i + 2] in ('"', "\\"):
                i += 1  # \" and \\ stand for the second character; other backslashes stay
            out.append(text[i])
            i += 1
        raise self.fail("unterminated string: no closing '\"'", start)

    def _regexp(self, start: int, i: int) -> _Token:
        """Read ``regexp(...)`` whose keyword starts at ``start`` and ends at ``i``: its pattern, quoted or not."""
        text = self.text
        opening = self._skip_space(i)
        if text[opening : opening + 1] != "(":
            raise self.fail("expected '(' after regexp", opening)
        i = self._skip_space(opening + 1)
        if text[i : i + 1] == '"':
            pattern, i = self._string(i)
            i = self._skip_space(i)
            if text[i : i + 1] != ")":
                raise self.fail("expected ')' after the regexp pattern", i)
        else:
            pattern, i = self._raw_pattern(opening)
        self.pos = i + 1
        return _Token("RE", pattern, start, i + 1)

    def _raw_pattern(self, opening: int) -> tuple[str, int]:
        """The unquoted pattern after the '(' at ``opening``: (pattern, index of its ')')."""
        text, n = self.text, len(self.text)
        i, depth = opening + 1, 0
        while i < n:
            ch = text[i]
            if ch == "\\":
                i += 1
            elif ch == "[":  # a ')' inside a character class closes nothing
                i += 2 if text.startswith("^", i + 1) else 1
                i += 1 if text.startswith("]", i) else 0  # leading ']' is a member
                while i < n and text[i] != "]":
                    i += 2 if text[i] == "\\" else 1
            elif ch == "(":
                depth += 1
            elif ch == ")" and depth:
                depth -= 1
            elif ch == ")":
                if not text[opening + 1 : i].strip():
                    raise self.fail("empty regexp(): put a pattern between the parentheses", i)
                return text[opening + 1 : i], i
            i += 1
        raise self.fail("regexp( has no matching ')'", opening)

    def advance(self) -> _Token:
        """Move to the next token and return the one passed."""
        tok, self.prev_end = self.tok, self.tok.end
        self.tok = self._next()
        return tok

    def parse(self) -> Condition:
        """The condition the whole text states; a :class:`~nbeval.errors.ConditionError` says where it goes wrong."""
        if not self.text.strip():
            raise self.fail(f"the condition is empty; {_OPERAND}", 0)
        node = self.disjunction()
        if self.tok.kind == ")":
            raise self.fail("unexpected ')' with no matching '('", self.tok.start)
        if self.tok.kind != "END":
            raise self.fail(
                f"expected AND, OR or the end of the condition, found {_SEEN[self.tok.kind]}", self.tok.start
            )
        return node

    def disjunction(self) -> Condition:
        """Parse operands joined by OR (the loosest binding)."""
        return self._chain(Or, self.conjunction)

    def conjunction(self) -> Condition:
        """Parse operands joined by AND."""
        return self._chain(And, self.negation)

    def _chain(self, cls: type[_Junction], sub: Callable[[], Condition]) -> Condition:
        """Parse ``sub`` operands joined by ``cls``'s word into one junction (a single operand stays as it is)."""
        start, operands = self.tok.start, [sub()]
        while self.tok.kind == cls._word:
            self.advance()
            operands.append(sub())
        if len(operands) == 1:
            return operands[0]
        return cls(tuple(operands), source=self.text[start : self.prev_end])

    def negation(self) -> Condition:
        """Parse a NOT, or several, before a primary."""
        if self.tok.kind != "NOT":
            return self.primary()
        start = self.advance().start
        self._enter(start)
        operand = self.negation()
        self.depth -= 1
        return Not(operand, source=self.text[start : self.prev_end])

    def primary(self) -> Condition:
        """Parse a bracketed condition or an operand (a quoted text or a regexp)."""
        tok = self.tok
        node: Condition
        if tok.kind == "(":
            self._enter(tok.start)
            self.advance()
            node = self.disjunction()
            if self.tok.kind != ")":
                raise self.fail(
                    f"expected ')' to close the '(' at position {tok.start}, found {_SEEN[self.tok.kind]}",
                    self.tok.start,
                )
            self.depth -= 1
            self.advance()
            return node
        if tok.kind == "STR":
            self.advance()
            return Text(tok.value, source=self.text[tok.start : tok.end])
        if tok.kind == "RE":
            try:
                node = Regexp(tok.value, source=self.text[tok.start : tok.end])
            except ConditionError as exc:
                msg = f"{exc.reason} (at character {exc.position} of the pattern)"
                raise self.fail(msg, tok.start) from None
            self.advance()
            return node
        raise self.fail(f"{_OPERAND}, found {_SEEN[tok.kind]}", tok.start)

    def _enter(self, position: int) -> None:
        """One level deeper in brackets or NOTs; too deep fails (a bound on the recursion)."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.fail(f"the condition nests deeper than {_MAX_DEPTH} levels", position)


def parse_condition(text: str) -> Condition:
    """Parse ``text`` in the condition language (see the module docstring).

    Args:
        text: The condition, e.g. ``"Brazil" AND NOT "Real"``.

    Returns:
        The condition's tree, its ``source`` the whole of ``text``.

    Raises:
        BadArgumentType: When ``text`` is not a string.
        ConditionError: When ``text`` is not a well-formed condition; the error names the position.
    """
    if not isinstance(text, str):
        msg = f"a condition must be a string, not {type(text).__name__}"
        raise BadArgumentType(msg)
    node = _Parser(text).parse()
    object.__setattr__(node, "source", text)  # the whole text, surrounding spaces included
    return node


def is_valid_condition(text: str) -> bool:
    """Whether ``text`` parses as a condition."""
    try:
        parse_condition(text)
    except (ConditionError, TypeError):
        return False
    return True
