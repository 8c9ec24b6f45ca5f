from __future__ import annotations

import random

import pytest

from shared.selectors import Requirement
from shared.selectors import SelectorError
from shared.selectors import _fast_parse
from shared.selectors import _Parser
from shared.selectors import from_label_selector
from shared.selectors import go_label_selector_string
from shared.selectors import parse
from shared.selectors import parse_cached

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app=db", False),
        ("app in (web,db)", True),
        ("app notin (web,db)", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("version>2", True),
        ("version<3", False),
        ("missing!=x", True),
        ("app in (db)", False),
    ],
)
def test_string_selectors_match_like_apimachinery(text: str, matches: bool) -> None:
    assert parse(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    "text", ["cheddar cheese", "app=", "=web", "app in web", "app in (", "a,", "Bad Key=x", "app=in valid"]
)
def test_bad_selectors_raise_errors_naming_the_problem(text: str) -> None:
    if text == "app=":  # an empty value is valid
        assert parse(text).matches({"app": ""})
        return
    with pytest.raises(SelectorError):
        parse(text)


def test_unparsable_selector_error_reads_like_upstream() -> None:
    with pytest.raises(SelectorError, match="found 'cheese', expected: in, notin"):
        parse("cheddar cheese")


def test_label_selector_objects() -> None:
    sel = from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web", "tier": "back"})


def test_nil_label_selector_selects_nothing_and_empty_selects_everything() -> None:
    assert not from_label_selector(None).matches(LABELS)
    assert from_label_selector({}).matches(LABELS)


def test_invalid_label_selector_operator() -> None:
    with pytest.raises(SelectorError, match="not a valid label selector operator"):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})


def test_go_string_form_matches_upstream_messages() -> None:
    assert go_label_selector_string({}) == (
        "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
    )
    assert go_label_selector_string({"matchLabels": {"b": "2", "a": "1"}}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{},}"
    )
    assert go_label_selector_string(None) == "nil"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app=web,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("app in a", "unable to parse requirement: found 'a' expected: '('"),
        ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("a >= 1", "unable to parse requirement: found '=', expected: identifier"),
    ],
)
def test_syntax_errors_say_what_apimachinery_says(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse(text)
    assert str(e.value) == message


def test_empty_value_set_is_the_empty_value_as_in_apimachinery() -> None:
    assert parse("app in ()").matches({"app": ""})
    assert not parse("app in ()").matches({"app": "web"})


def test_a_remembered_selector_is_the_one_parse_gives() -> None:
    text = "app=web,tier notin (cache),!canary"
    first = parse_cached(text)
    assert first == parse(text)
    assert parse_cached(text) is first


def test_a_refused_selector_is_refused_every_time_with_parses_message() -> None:
    with pytest.raises(SelectorError) as plain:
        parse("app=web,,")
    for _ in range(2):
        with pytest.raises(SelectorError) as cached:
            parse_cached("app=web,,")
        assert str(cached.value) == str(plain.value)


def _full_parse(text: str) -> list[Requirement] | str:
    """What the token-by-token parser alone reads: the requirements, or its error message."""
    try:
        return _Parser(text).parse()
    except SelectorError as e:
        return str(e)


# the grammar's pieces and its near misses: every token, whitespace of each kind, and
# characters no key or value may hold
_PIECES = [
    "app", "a", "in", "notin", "web", "x1", "k8s.io/name", "A_b", "-x", "x-", "é", "9",
    "=", "==", "!=", "!", "(", ")", ",", ">", "<", " ", "  ", "\t", "\n", "\r", "", "/", ".",
]  # fmt: skip


def test_the_fast_path_reads_every_selector_as_the_full_parser_does() -> None:
    rng = random.Random(1234)
    shapes = ["{k}={v}", "{k}=={v}", "{k}!={v}", "{k} in ({v},{v})", "{k} notin ({v})", "!{k}", "{k}"]
    fast_taken = 0
    for _ in range(20_000):
        if rng.random() < 0.5:  # well-formed-looking requirements, joined, with noise spliced in
            reqs = [
                rng.choice(shapes).format(k=rng.choice(_PIECES[:10]), v=rng.choice(_PIECES[:10]))
                for _ in range(rng.randint(1, 3))
            ]
            text = rng.choice([",", ", ", " ,"]).join(reqs)
            if rng.random() < 0.3:
                at = rng.randint(0, len(text))
                text = text[:at] + rng.choice(_PIECES) + text[at:]
        else:  # any sequence of the pieces
            text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 8)))
        fast = _fast_parse(text)
        if fast is not None:  # else parse() is the full parser itself, errors and all
            fast_taken += 1
            assert fast == _full_parse(text), text
    assert fast_taken > 4_000  # the fast path was exercised, not just the fallback
