"""one_line: how every part says an error inside a one-line message."""

import pytest

from neurorun.common.errors import one_line

YAML_ERROR = ("while parsing a block mapping\n  in \"<unicode string>\", line 1, column 1\n"
              "expected <block end>, but found '<scalar>'\n  in \"<unicode string>\", line 2")


def test_a_message_of_several_lines_is_one_line_with_single_spaces():
    assert one_line(ValueError(YAML_ERROR)) == (
        "while parsing a block mapping in \"<unicode string>\", line 1, column 1 expected "
        "<block end>, but found '<scalar>' in \"<unicode string>\", line 2")


def test_first_line_leaves_the_context_below_it_out():
    error = ValueError("  Value 'abc' could not be converted to Integer\n    full_key: seed\n")
    assert one_line(error, first_line=True) == "Value 'abc' could not be converted to Integer"


@pytest.mark.parametrize("first_line", [False, True])
@pytest.mark.parametrize("with_type", [False, True])
def test_an_error_that_says_nothing_is_its_types_name(first_line, with_type):
    for error in (KeyError(), RuntimeError(" \n\t")):
        assert one_line(error, with_type=with_type, first_line=first_line) == (
            type(error).__name__)


def test_with_type_puts_the_types_name_first():
    assert one_line(OSError("disk\nfull"), with_type=True) == "OSError: disk full"
    assert one_line(OSError("disk\nfull")) == "disk full"


def test_a_long_message_is_cut_to_the_limit_with_dots():
    error = RuntimeError("x" * 500)
    assert one_line(error) == "x" * 297 + "..."
    assert one_line(error, limit=10, with_type=True) == "Runtime..."  # the name counts too
    assert one_line(RuntimeError("x" * 10), limit=10) == "x" * 10  # at the limit: whole
    assert one_line(error, limit=None) == "x" * 500


def test_a_message_taken_from_a_log_record_is_said_the_same_way():
    assert one_line("Error reading entry:\n  disk  full") == "Error reading entry: disk full"
    assert one_line("", with_type=True) == ""  # no type to name
