"""Tests of the condition language (nbeval.data.conditions) and bounded regexes (nbeval.data.patterns).

Every expected value below was worked out by hand from the language's rules, not produced by the
code under test.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import itertools
import pathlib
import re
import threading
import time

import pytest

from nbeval.data import patterns
from nbeval.data.conditions import And, Not, Or, Regexp, Text, is_valid_condition, parse_condition
from nbeval.errors import ConditionError, NbevalError, RegexTimeout

# ----------------------------------------------------------------------------- the spec's examples

BRAZIL = "Brazil revenue was 15,969 million."
NO_COMMA = "Brazil revenue was 15969 Million."
REAL = "Brazil revenue was 15,969 million Real."
LOWER = "brazil revenue was 15,969 million."
THOUSAND = "Revenue was 15,969 thousand."
SHOUTED = "BRAZIL REVENUE WAS 15,969 MILLION."
REALISTIC = "A realistic Brazil figure: 15,969 million (Realistic)."
TEXTS = [BRAZIL, NO_COMMA, REAL, LOWER, THOUSAND, SHOUTED, REALISTIC, ""]

SPEC_CASES = {
    '"15,969"': [True, False, True, True, True, True, True, False],
    'regexp("15,?969")': [True, True, True, True, True, True, True, False],
    '"15,969" AND regexp("[Mm]illion")': [True, False, True, True, False, False, True, False],
    '("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"': [
        True,
        True,
        False,
        True,
        False,
        False,
        False,
        False,
    ],
    '"15,969" AND "million"': [True, False, True, True, False, False, True, False],
}


@pytest.mark.parametrize("condition", list(SPEC_CASES))
def test_spec_examples(condition: str) -> None:
    parsed = parse_condition(condition)
    got = [parsed.evaluate(t) for t in TEXTS]
    assert got == SPEC_CASES[condition]
    assert [parsed.check(t)[0] for t in TEXTS] == SPEC_CASES[condition]


def test_spec_example_trees() -> None:
    assert parse_condition('"15,969"') == Text("15,969")
    assert parse_condition('regexp("15,?969")') == Regexp("15,?969")
    assert parse_condition('"15,969" AND regexp("[Mm]illion")') == And((Text("15,969"), Regexp("[Mm]illion")))
    assert parse_condition('("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"') == And(
        (Or((Text("Brazil"), Text("brazil"))), Regexp("15,?969 [Mm]illion"), Not(Text("Real")))
    )


# ------------------------------------------------------------------------------------ precedence

LETTER_TEXTS = ["", "a", "b", "c", "ab", "ac", "bc", "abc"]
TRUTH = {  # columns follow LETTER_TEXTS
    '"a" OR "b" AND "c"': "FTFFTTTT",  # a or (b and c)
    '"a" AND "b" OR "c"': "FFFTTTTT",  # (a and b) or c
    'NOT "a" AND "b"': "FFTFFFTF",  # (not a) and b
    'NOT ("a" AND "b")': "TTTTFTTF",
    '("a" OR "b") AND "c"': "FFFFFTTT",
    'NOT "a" OR "b"': "TFTTTFTT",  # (not a) or b
    'NOT NOT "a"': "FTFFTTFT",
    '"a" OR NOT "b" AND "c"': "FTFTTTFT",  # a or ((not b) and c)
    '"a" AND NOT ("b" OR "c")': "FTFFFFFF",
}


@pytest.mark.parametrize("condition", list(TRUTH))
def test_precedence_truth_tables(condition: str) -> None:
    parsed = parse_condition(condition)
    got = "".join("T" if parsed.evaluate(t) else "F" for t in LETTER_TEXTS)
    assert got == TRUTH[condition]


def test_precedence_trees() -> None:
    a, b, c = Text("a"), Text("b"), Text("c")
    assert parse_condition('"a" OR "b" AND "c"') == Or((a, And((b, c))))
    assert parse_condition('"a" AND "b" OR "c"') == Or((And((a, b)), c))
    assert parse_condition('NOT "a" AND "b"') == And((Not(a), b))
    assert parse_condition('NOT "a" OR "b" AND NOT "c"') == Or((Not(a), And((b, Not(c)))))
    # chains of one operator are one n-ary node, however they are grouped
    assert parse_condition('("a" AND "b") AND "c"') == And((a, b, c)) == parse_condition('"a" AND ("b" AND "c")')


def test_lower_case_keywords_are_accepted() -> None:
    assert parse_condition('"a" and not "b" or "c"') == parse_condition('"a" AND NOT "b" OR "c"')
    assert parse_condition('REGEXP("x") And "y"') == And((Regexp("x"), Text("y")))


# --------------------------------------------------------------------------------------- escapes


@pytest.mark.parametrize(
    ("condition", "tree"),
    [
        (r'"say \"hi\""', Text('say "hi"')),
        (r'"back\\slash"', Text("back\\slash")),  # one backslash
        (r'"\\"', Text("\\")),
        (r'"a\nb"', Text("a\\nb")),  # no C escapes: backslash and n stay
        (r'regexp("\\d+")', Regexp("\\d+")),
        (r'regexp("\d+")', Regexp("\\d+")),  # lenient form, same pattern
        (r'regexp("\"quoted\"")', Regexp('"quoted"')),
        (r'regexp("a\\\\b")', Regexp("a\\\\b")),  # pattern a\\b: a literal backslash
        (r'regexp("\w+\s\(x\)")', Regexp("\\w+\\s\\(x\\)")),
        ('"AND"', Text("AND")),  # keywords inside quotes are text
        ('"(unbalanced"', Text("(unbalanced")),
        ('""', Text("")),
    ],
)
def test_escapes(condition: str, tree: object) -> None:
    assert parse_condition(condition) == tree


def test_escaped_operands_evaluate() -> None:
    assert parse_condition(r'"say \"hi\""').evaluate('they say "hi" twice')
    assert not parse_condition(r'"say \"hi\""').evaluate("they say hi twice")
    assert parse_condition(r'"back\\slash"').evaluate("a back\\slash here")
    assert not parse_condition(r'"a\nb"').evaluate("a\nb")  # a real newline is not backslash-n
    assert parse_condition(r'"a\nb"').evaluate("a\\nb")
    assert parse_condition(r'regexp("\d+")').evaluate("room 101")
    assert not parse_condition(r'regexp("\d+")').evaluate("room one")
    assert parse_condition(r'regexp("a\\\\b")').evaluate("a\\b")
    assert not parse_condition(r'regexp("a\\\\b")').evaluate("ab")
    assert parse_condition('""').evaluate("")  # the empty string occurs in every text


# ------------------------------------------------------------------------ the seed's unquoted form


def test_unquoted_regexp_seed_forms() -> None:
    a, d = parse_condition("regexp(^A.*)"), parse_condition("regexp(^D.*)")
    assert a == Regexp("^A.*") and d == Regexp("^D.*")
    assert [a.evaluate(t) for t in ["A", "A) because", "The answer is A", "", "a", "Result:\nA"]] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert [d.evaluate(t) for t in ["D", "Definitely", "A", "d"]] == [True, True, False, False]


@pytest.mark.parametrize(
    ("condition", "pattern"),
    [
        ("regexp((a|b)c)", "(a|b)c"),  # nested parentheses are balanced
        ("regexp([)]x)", "[)]x"),  # ')' in a character class closes nothing
        ("regexp([]a)]+)", "[]a)]+"),  # ']' first in a class is a member
        ("regexp([^)]+)", "[^)]+"),
        (r"regexp(a\)b)", r"a\)b"),  # escaped ')' closes nothing
        ("regexp( x )", " x "),  # spaces kept as written
        ('regexp(say "hi")', 'say "hi"'),
        ("regexp  (x)", "x"),
    ],
)
def test_unquoted_regexp_patterns(condition: str, pattern: str) -> None:
    assert parse_condition(condition) == Regexp(pattern)


def test_unquoted_regexp_combines() -> None:
    cond = parse_condition('regexp(^A.*) AND NOT "B" OR regexp((x))')
    assert cond == Or((And((Regexp("^A.*"), Not(Text("B")))), Regexp("(x)")))
    assert cond.evaluate("A") and not cond.evaluate("AB") and cond.evaluate("Bx")


# -------------------------------------------------------------------------------- error positions

ERRORS = [  # (condition, position worked out by hand, a word the message must contain)
    ("", 0, "empty"),
    ("   ", 0, "empty"),
    ('"a" AND', 7, "expected"),
    ('"a" AND OR "b"', 8, "found OR"),
    ('("a" OR "b"', 11, "')'"),
    ('"a")', 3, "no matching '('"),
    ('"a" "b"', 4, "expected AND, OR"),
    ('"abc', 0, "unterminated"),
    ('"a" AND "b', 8, "unterminated"),
    ('"a" & "b"', 4, "'&'"),
    ('"a" AND foo', 8, "foo"),
    ('"a" ORR "b"', 4, "ORR"),
    ('"a" AND regexp("(")', 8, "invalid regular expression"),
    ('regexp "x"', 7, "'('"),
    ("regexp(abc", 6, "no matching ')'"),
    ('regexp("x"', 10, "')'"),
    ("regexp()", 7, "empty"),
    ("NOT", 3, "expected"),
    ('"a" AND NOT', 11, "expected"),
    ("NOT NOT", 7, "expected"),
    ("()", 1, "found ')'"),
    ('"a" AND ()', 9, "found ')'"),
    ("'a'", 0, "double quotes"),
    ('__import__("os")', 0, "__import__"),
    ('"a" + "b"', 4, "'+'"),
    ("1 == 1", 0, "'1'"),
    ("\u201cBrazil\u201d", 0, "straight"),
]


@pytest.mark.parametrize(("condition", "position", "word"), ERRORS)
def test_error_positions(condition: str, position: int, word: str) -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition(condition)
    err = info.value
    assert err.position == position
    assert err.text == condition
    assert word in err.reason
    assert f"at position {position}" in str(err)
    assert isinstance(err, ValueError) and isinstance(err, NbevalError)
    assert not is_valid_condition(condition)


def test_invalid_regex_names_the_pattern_problem() -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition('"x" OR regexp("[a-")')
    assert info.value.position == 7
    assert "[a-" in info.value.reason and "of the pattern" in info.value.reason


def test_nesting_is_bounded() -> None:
    ok = "(" * 100 + '"a"' + ")" * 100
    assert parse_condition(ok) == Text("a")
    with pytest.raises(ConditionError) as info:
        parse_condition("(" * 101 + '"a"' + ")" * 101)
    assert info.value.position == 100
    with pytest.raises(ConditionError) as info:
        parse_condition("NOT " * 101 + '"a"')
    assert info.value.position == 400
    assert parse_condition("NOT " * 100 + '"a"').evaluate("a") is True  # even count


def test_non_string_condition_is_rejected() -> None:
    with pytest.raises(TypeError):
        parse_condition(None)  # type: ignore[arg-type]
    assert not is_valid_condition(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_condition('"a"').evaluate(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- normal form and identity

NORMALIZED = [
    ('"a" or "b" and "c"', '"a" OR ("b" AND "c")'),  # nested junctions always get parentheses
    ('"a" AND "b" OR "c"', '("a" AND "b") OR "c"'),
    ('("a" OR "b") AND "c"', '("a" OR "b") AND "c"'),
    ('(("a"))', '"a"'),
    ('("a" AND "b") AND "c"', '"a" AND "b" AND "c"'),
    ('NOT("a" OR "b")', 'NOT ("a" OR "b")'),
    ('not not "a"', 'NOT NOT "a"'),
    ("regexp(^A.*)", 'regexp("^A.*")'),
    (r'regexp("\\d")', r'regexp("\d")'),
    (r'"q\"x"', r'"q\"x"'),
    (r'"a\\"', r'"a\\"'),
    (r'"a\\\"b"', r'"a\\\"b"'),
    ("regexp( ( x ) )", 'regexp(" ( x ) ")'),
]


@pytest.mark.parametrize(("condition", "normal"), NORMALIZED)
def test_normal_form(condition: str, normal: str) -> None:
    parsed = parse_condition(condition)
    assert str(parsed) == normal
    assert parse_condition(normal) == parsed


ROUND_TRIP = (
    list(SPEC_CASES)
    + list(TRUTH)
    + [c for c, _ in NORMALIZED]
    + [
        'regexp(^A.*) AND NOT "B" OR regexp((x))',
        r'NOT (regexp("\"") OR "\\" AND ("x" OR NOT "y"))',
    ]
)


@pytest.mark.parametrize("condition", ROUND_TRIP)
def test_round_trip(condition: str) -> None:
    parsed = parse_condition(condition)
    again = parse_condition(str(parsed))
    assert again == parsed
    assert str(again) == str(parsed)
    assert parsed.source == condition


def test_quoting_round_trips_every_short_string() -> None:
    for n in range(6):
        for chars in itertools.product('a\\"()', repeat=n):
            value = "".join(chars)
            assert parse_condition(str(Text(value))) == Text(value), value


def test_equality_ignores_source_and_nodes_are_immutable() -> None:
    x, y = parse_condition('"a"   and  "b"'), parse_condition('"a" AND "b"')
    assert x == y and hash(x) == hash(y)
    assert x.source == '"a"   and  "b"' and y.source == '"a" AND "b"'
    assert parse_condition('"a"') != parse_condition('regexp("a")')
    assert isinstance(x, And)
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.operands = ()  # type: ignore[misc]  # assigning to a frozen node on purpose
    assert Text("a").source == '"a"'  # built by hand: source is the normal form


def test_direct_construction_validates() -> None:
    with pytest.raises(ConditionError):
        Regexp("(")
    with pytest.raises(ValueError):
        And((Text("a"),))


# -------------------------------------------------------------------------------------- explain


def test_explain_lists_every_operand() -> None:
    cond = parse_condition('"15,969" AND regexp("[Mm]illion")')
    assert cond.explain(BRAZIL) == '"15,969" found; regexp("[Mm]illion") found "million"'
    assert cond.explain(NO_COMMA) == '"15,969" not found; regexp("[Mm]illion") found "Million"'
    assert cond.check(NO_COMMA) == (False, cond.explain(NO_COMMA))
    assert cond.explain(THOUSAND) == '"15,969" found; regexp("[Mm]illion") not found'


def test_explain_mentions_repeated_operand_once() -> None:
    cond = parse_condition('"a" OR NOT "a"')
    assert cond.check("b") == (True, '"a" not found')


def test_explain_shortens_long_matches() -> None:
    expl = parse_condition('regexp("x+")').explain("x" * 100)
    assert expl == 'regexp("x+") found "' + "x" * 37 + '..."'


# ---------------------------------------------------------------------------------------- timeout

EVIL = "a" * 50_000 + "b"
#: The most a timed-out search may take, in seconds. These are deadline tests, so the time is
#: the point; unbounded, these patterns backtrack on EVIL for longer than anyone waits, so the
#: bound sits far above the timeouts (0.2 to 1 s) to hold with two busy processes on two cores.
CUT_OFF = 15.0


def test_catastrophic_regexp_times_out_quickly() -> None:
    cond = parse_condition('regexp("(a+)+$")')
    start = time.perf_counter()
    with pytest.raises(RegexTimeout) as info:
        cond.evaluate(EVIL)
    elapsed = time.perf_counter() - start
    assert elapsed < CUT_OFF
    msg = str(info.value)
    assert "(a+)+$" in msg and "1.0 s" in msg and "50,001-character" in msg
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, NbevalError)


def test_timeout_is_configurable() -> None:
    cond = parse_condition('regexp("(a+)+$")')
    start = time.perf_counter()
    with pytest.raises(RegexTimeout, match=r"0\.2 s"):
        cond.evaluate(EVIL, timeout=0.2)
    assert time.perf_counter() - start < CUT_OFF
    with pytest.raises(RegexTimeout):
        cond.explain(EVIL, timeout=0.2)


def test_evaluate_stops_early_but_check_tests_everything() -> None:
    cond = parse_condition('"a" OR regexp("(a+)+$")')
    assert cond.evaluate(EVIL, timeout=0.2) is True  # decided by "a"; the regexp never runs
    with pytest.raises(RegexTimeout):
        cond.check(EVIL, timeout=0.2)


# ---------------------------------------------------------------------------------- never eval


def test_no_eval_in_the_implementation() -> None:
    import nbeval.data.conditions as module

    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__"}


def test_parsing_and_evaluating_never_calls_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    for condition in SPEC_CASES:
        parse_condition(condition).check(BRAZIL)
    for hostile in ['__import__("os").system("true")', 'eval("1")', 'open("x")', "1+1"]:
        assert not is_valid_condition(hostile)


# ----------------------------------------------------------------------------------- patterns


def test_compile_user_pattern_caches_and_reports_errors() -> None:
    assert patterns.compile_user_pattern("ab+") is patterns.compile_user_pattern("ab+")
    with pytest.raises(ConditionError) as info:
        patterns.compile_user_pattern("ab(c")
    assert info.value.text == "ab(c" and info.value.position == 4
    assert "invalid regular expression" in str(info.value)
    with pytest.raises(TypeError):
        patterns.compile_user_pattern(b"x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("15,?969", "was 15969 then", "15969"),
        ("(?i)million", "MILLION", "MILLION"),
        (r"(?<=\$)\d+", "cost $42", "42"),
        (r"\bcat\b", "concat cat", "cat"),
        ("^b", "a\nb", None),  # no MULTILINE: ^ is the start only, as in re
        ("(?m)^b", "a\nb", "b"),
        ("a.b", "a\nb", None),  # no DOTALL, as in re
    ],
)
def test_search_follows_re(pattern: str, text: str, expected: str | None) -> None:
    match = patterns.search(pattern, text)
    ours = None if match is None else match.group(0)
    ref = re.search(pattern, text)
    assert ours == expected == (None if ref is None else ref.group(0))


def test_search_accepts_compiled_and_checks_arguments() -> None:
    compiled = patterns.compile_user_pattern("b+")
    assert patterns.search(compiled, "abbc").group(0) == "bb"
    assert patterns.search("x", "abc", timeout=None) is None
    with pytest.raises(ValueError):
        patterns.search("x", "abc", timeout=0)
    with pytest.raises(TypeError):
        patterns.search("x", None)  # type: ignore[arg-type]


def test_search_timeout_message() -> None:
    start = time.perf_counter()
    with pytest.raises(RegexTimeout) as info:
        patterns.search("(a|aa)+$", EVIL, timeout=0.3)
    assert time.perf_counter() - start < CUT_OFF
    assert str(info.value) == (
        "regular expression '(a|aa)+$' took longer than 0.3 s on a 50,001-character text; "
        "simplify it (catastrophic backtracking?)"
    )


def test_slow_but_finite_search_finishes_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    class SpyThread(threading.Thread):
        def start(self) -> None:
            started.append(self.name)
            super().start()

    monkeypatch.setattr(threading, "Thread", SpyThread)  # the module patterns starts its worker from
    # exponential but finite (a few tenths of a second): more than the inline CPU budget
    match = patterns.search(r"(?:a|aa)+$|!", "a" * 29 + "!", timeout=10.0)
    assert match is not None and match.group(0) == "!" and match.start() == 29
    assert started == ["nbeval-regex"]
    started.clear()
    assert patterns.search(r"\d+", "abc 123").group(0) == "123"  # quick: stays inline
    assert started == []
