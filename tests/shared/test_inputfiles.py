"""The bounded loader on plain text and real files: what it lets through and what it
refuses, with the file, line and key of each refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared import inputfiles
from shared.inputfiles import InputError


def laughs(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "spec:\n  junk:\n" + "".join(f"    {line}\n" for line in lines)


def test_a_few_anchors_as_helm_values_use_them_load() -> None:
    text = "base: &b {resource: namespace}\nrules:\n- resources: *b\n- resources: *b\n"
    assert inputfiles.load_one(text, "f.yaml")["rules"][1] == {"resources": {"resource": "namespace"}}


def test_aliases_that_expand_past_the_bound_are_refused_at_the_alias_with_its_key_and_line() -> None:
    with pytest.raises(InputError) as e:
        inputfiles.load_one(laughs(9), "f.yaml")
    # a0..a3 add 12,330 nodes through their aliases; a4's eighth alias of a3 (11,111) passes 100,000
    assert e.value.line == 7
    assert e.value.key == "spec.junk.a4[7]"
    assert "more than 100,000 nodes (*a3 here)" in str(e.value)


def test_nesting_deeper_than_the_bound_is_refused_in_yaml_and_in_json() -> None:
    for text in ("a: " + "[" * 101 + "]" * 101, '{"a": ' + "[" * 101 + "]" * 101 + "}"):
        with pytest.raises(InputError, match="nested deeper than 100 levels"):
            inputfiles.load_documents(text, "f")
    assert inputfiles.load_one("a: " + "[" * 98 + "]" * 98, "f") is not None


def test_libyamls_own_depth_refusal_is_said_as_the_bound() -> None:
    with pytest.raises(InputError, match="nested deeper than 100 levels"):
        inputfiles.load_one("a: " + "[" * 5000 + "]" * 5000, "f")


@pytest.mark.parametrize(
    "number", ["1.0e+999", ".inf", "-.Inf", ".NaN", "1" + "0" * 20, "-9223372036854775808"]
)
def test_plain_numbers_that_are_not_finite_or_beyond_64_bits_are_refused(number: str) -> None:
    with pytest.raises(InputError, match=r"finite|64 bits"):
        inputfiles.load_one(f"spec:\n  tolerance: {number}\n", "f.yaml")


@pytest.mark.parametrize("text", ["a: '1.0e+999'", "a: !!str .inf", "a: 9223372036854775807", "a: 1.5e+300"])
def test_quoted_or_fitting_numbers_pass(text: str) -> None:
    assert inputfiles.load_one(text, "f") is not None


def test_json_numbers_are_held_to_the_same_bounds() -> None:
    with pytest.raises(InputError, match=r"a\.b"):
        inputfiles.load_documents('{"a": {"b": 1e999}}', "f.json")


def test_a_file_over_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: [" + "1, " * 100 + "]\n")
    with pytest.raises(InputError, match="larger than the input limit of 100 bytes"):
        inputfiles.read_text(str(big), max_bytes=100)


def test_a_device_that_never_ends_is_refused_at_the_bound() -> None:
    with pytest.raises(InputError, match="larger than the input limit"):
        inputfiles.read_bytes("/dev/zero", max_bytes=1000)


def test_a_directory_and_a_missing_file_are_one_line_each(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        inputfiles.read_text(str(tmp_path))
    with pytest.raises(InputError, match="cannot read it: No such file"):
        inputfiles.read_text(str(tmp_path / "nope.yaml"))


def test_a_pem_file_without_a_pem_block_is_refused(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("not a certificate\n")
    with pytest.raises(InputError, match="is not a PEM CA bundle"):
        inputfiles.read_pem(str(ca), "CA bundle")


def test_the_size_bound_is_a_setting() -> None:
    before = inputfiles.limits().max_bytes
    try:
        inputfiles.set_max_bytes(10)
        assert inputfiles.limits().max_bytes == 10
    finally:
        inputfiles.set_max_bytes(before)
