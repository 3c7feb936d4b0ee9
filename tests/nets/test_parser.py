"""The network-string language: structure, constants, arithmetic, errors and fuzzing."""

from __future__ import annotations

import pickle

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from neurorun.nets import Apply, Chain, Clip, NetworkParseError, parse_network

SIZES = {"obs_length": 6, "act_length": 2, "obs_shape": (6,), "act_shape": (2,), "hidden": 10}


def test_chain_structure():
    net = parse_network("Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)", **SIZES)
    assert isinstance(net, Chain)
    assert [type(m) for m in net] == [nn.Linear, nn.Tanh, nn.Linear]
    assert (net[0].in_features, net[0].out_features) == (6, 64)
    assert (net[2].in_features, net[2].out_features) == (64, 2)


def test_single_layer_is_returned_bare():
    net = parse_network("Linear(obs_length, act_length)", **SIZES)
    assert type(net) is nn.Linear and net.weight.shape == (2, 6)


def test_parenthesized_chains_are_flattened():
    net = parse_network("(Linear(6, 3) >> ReLU()) >> (Tanh() >> Linear(3, 1))")
    assert [type(m) for m in net] == [nn.Linear, nn.ReLU, nn.Tanh, nn.Linear]


def test_constants_and_arithmetic():
    text = "Linear(obs_length, 2 * hidden + 1) >> Linear(2*hidden+1, hidden // 3 - -1 + 2 ** 2)"
    net = parse_network(text, **SIZES)
    assert net[0].out_features == 21  # 2 * 10 + 1
    assert net[1].out_features == 8  # 10 // 3 + 1 + 4


def test_tuples_indexing_and_keywords():
    net = parse_network("LayerNorm(obs_shape) >> Linear(obs_shape[0], act_length, bias=False)",
                        **SIZES)
    assert net[0].normalized_shape == (6,)
    assert net[1].bias is None and net[1].in_features == 6


def test_policy_layers_and_strings():
    net = parse_network("Clip(-hidden / 4, 0.5) >> Apply('x ** 2')", **SIZES)
    assert isinstance(net[0], Clip) and (net[0].lo, net[0].hi) == (-2.5, 0.5)
    assert isinstance(net[1], Apply)
    assert net(torch.tensor([-4.0, 0.25, 3.0])).tolist() == [6.25, 0.0625, 0.25]


def test_multiline_text():
    net = parse_network("\n  Linear(obs_length, hidden)\n  >> Tanh()\n", **SIZES)
    assert [type(m) for m in net] == [nn.Linear, nn.Tanh]


def _caret_column(message: str) -> int:
    """1-based column of the caret, relative to the quoted line above it."""
    *_, quoted, caret = message.splitlines()
    return caret.index("^") - 3


# (text, fragment the caret must point at, phrases the message must contain)
ERRORS = [
    ("Linear(obs_length, hiden)", "hiden", ["unknown constant 'hiden'", "did you mean hidden"]),
    ("Linear(6, 2) >> Linaer(2, 2)", "Linaer", ["unknown layer 'Linaer'", "Linear"]),
    ("Linear(6, 2) >> tanh()", "tanh", ["unknown layer 'tanh'", "Tanh"]),
    ("Linear(6, 2) >> Dropout(0.5)", "Dropout", ["Dropout is not allowed", "noisy"]),
    ("BatchNorm1d(6)", "BatchNorm1d", ["not allowed", "mix the observations"]),
    ("Linear(6, 2) >> Tanh", "Tanh", ["Tanh is a layer", "Tanh(...)"]),
    ("Linear(6, 2, 3, 4, 5)", "Linear", ["cannot create Linear", "TypeError"]),
    ("Linear(6, -2)", "Linear", ["cannot create Linear", "-2"]),
    ("Linear(6, 2) >> Linear(hidden / 0, 2)", "hidden / 0", ["cannot compute", "division"]),
    ("Linear(6, 2) + Tanh()", "Linear", ["expected a layer"]),
    ("Linear(6 >> 2, 3)", "6 >> 2", [">> chains layers"]),
    ("nn.Linear(6, 2)", "nn.Linear", ["bare name", "Linear(...)"]),
    ("Linear(6, 2) >> Apply('y ** 2')", "Apply", ["unknown name 'y'"]),
    ("Linear(6, 2 ** 100000)", "2 ** 100000", ["too large"]),
    ("Linear(obs_shape + 1, 2)", "obs_shape + 1", ["arithmetic needs numbers"]),
    ("Linear(obs_shape[3], 2)", "obs_shape[3]", ["out of range"]),
    ("Linear(int(6), 2)", "int(6)", ["not allowed as an argument"]),
    ("Clip(1, -1)", "Clip", ["expected lo < hi"]),
    ("Linear(100000, 100000)", "Linear", ["parameters, more than the limit"]),
    ("Linear(6, 2) >>", ">>", ["invalid syntax"]),
    # "the run failed: IndexError" at the first observation
    ("Linear(6, 2) >> Softmax(dim=5)", "Softmax", ["Softmax(dim=5): dim=5 is out of range",
                                                   "one vector", "dim is -1 (or 0)"]),
    ("Linear(6, 2) >> LogSoftmax(dim=-2)", "LogSoftmax", ["dim=-2 is out of range"]),
]


@pytest.mark.parametrize(("text", "fragment", "phrases"), ERRORS)
def test_error_messages(text, fragment, phrases):
    with pytest.raises(NetworkParseError) as caught:
        parse_network(text, **SIZES)
    message = str(caught.value)
    for phrase in phrases:
        assert phrase in message
    assert f"    {text}\n" in message  # the string is quoted
    if fragment != ">>":  # a syntax error at the end points past the last character
        assert _caret_column(message) == text.index(fragment) + 1
        assert caught.value.column == text.index(fragment) + 1


def test_syntax_error_column_and_line_of_multiline_text():
    text = "Linear(6, 2) >>\n   Tanh(] "
    with pytest.raises(NetworkParseError) as caught:
        parse_network(text)
    assert (caught.value.line, caught.value.column) == (2, 9)  # the ']' on the second line
    assert "line 2, column 9" in str(caught.value)


def test_empty_and_non_string():
    with pytest.raises(NetworkParseError, match="empty"):
        parse_network("   ")
    with pytest.raises(NetworkParseError, match="network string is needed"):
        parse_network(None)  # type: ignore[arg-type]


def test_error_is_a_value_error_and_pickles():
    assert issubclass(NetworkParseError, ValueError)
    error = NetworkParseError("bad", "Linear(1, x)", 10)
    restored = pickle.loads(pickle.dumps(error))
    assert str(restored) == str(error) and restored.column == 11


TOKENS = [
    "Linear", "Tanh", "ReLU", "Clip", "Bin", "Slice", "Round", "Apply", "RNN", "LSTM", "GRU",
    "LayerNorm", "Softmax", "Dropout", "Foo", "obs_length", "act_length", "obs_shape", "hidden",
    "(", ")", "(", ")", ",", ">>", "+", "-", "*", "/", "//", "**", "[", "]", "=", "bias=",
    "0", "1", "2", "3", "-1", "0.5", "1e9", "'x ** 2'", "'y'", "True", "None", " ", "\n",
    "lambda", ":", ".", "nn", "\x00", "é", "'",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_fuzz_token_soup_only_raises_parse_errors(tokens):
    _only_parse_errors("".join(tokens))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_fuzz_random_text_only_raises_parse_errors(text):
    _only_parse_errors(text)


def _only_parse_errors(text: str) -> None:
    try:
        net = parse_network(text, **SIZES)
    except NetworkParseError as error:
        assert str(error)
    else:
        assert isinstance(net, nn.Module)


def test_a_network_too_large_in_all_is_refused_before_any_layer_is_allocated(monkeypatch):
    """13 layers of 9,000 units (about 1e9 parameters) each pass the per-layer
    limit; the total is checked before anything is allocated (here with a limit of 1,000)."""
    from neurorun.nets import parser

    monkeypatch.setattr(parser, "MAX_PARAMETERS", 1000)
    allocated = []
    linear = parser.LAYERS["Linear"]
    monkeypatch.setitem(parser.LAYERS, "Linear", lambda *a, **k: (
        allocated.append(torch.get_default_device().type), linear(*a, **k))[1])
    text = "Linear(obs_length, 20) >> Linear(20, 20) >> Linear(20, 20) >> Linear(20, act_length)"
    with pytest.raises(NetworkParseError) as caught:
        parse_network(text, obs_length=6, act_length=2)
    total = (6 * 20 + 20) + 2 * (20 * 20 + 20) + (20 * 2 + 2)  # 1,022: each layer under 1,000
    assert f"{total:,} parameters in all" in str(caught.value)
    assert "cpu" not in allocated  # only shapes (the meta device), no memory


def test_a_flat_chain_of_thousands_of_layers_parses():
    """A flat `>> Tanh()` chain nests one ast level per layer, past
    Python's recursion limit; it is a chain, not a nesting, and parses as one."""
    net = parse_network("Linear(obs_length, 3)" + " >> Tanh()" * 3000, **SIZES)
    assert len(net) == 3001 and type(net[0]) is nn.Linear and type(net[-1]) is nn.Tanh
    assert net(torch.zeros(6)).shape == (3,)
    with pytest.raises(NetworkParseError) as caught:  # columns still point into the text
        parse_network("Tanh() >> " * 2000 + "Foo()")
    assert caught.value.column == len("Tanh() >> ") * 2000 + 1 and "unknown layer" in str(
        caught.value)
    with pytest.raises(NetworkParseError, match="nested"):  # real nesting still is refused
        parse_network("(" * 3000 + "Tanh()" + ")" * 3000)


@pytest.mark.parametrize(("text", "names"), [
    ("Linear(obs_length, hidden) >> Tanh() >> Linear(hidden, act_length)",
     {"obs_length", "hidden", "act_length"}),
    ("Linear(obs_shape[0], 2 * k)\n>> Linear(2 * k, act_length, bias=False)",
     {"obs_shape", "k", "act_length"}),
    ("Linear(4, 2)", set()),
    ("Linear(obs_length", None),  # unreadable: building it says where
])
def test_constant_names_are_the_names_a_string_reads_beside_its_layers(text, names):
    from neurorun.nets.parser import constant_names

    assert constant_names(text) == names
