"""The network-string language: ``Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)``.

The text is parsed with :mod:`ast` and never evaluated. ``a >> b`` chains layers into a
:class:`~neurorun.nets.chain.Chain`; a layer is a call of a name in
:data:`~neurorun.nets.catalog.LAYERS`. Arguments are numbers, strings, ``True``/``False``/
``None``, tuples, named constants (``obs_length``, ``act_length``, ``obs_shape``,
``act_shape`` and any ``network_args`` key), indexing of tuple constants (``obs_shape[0]``) and
arithmetic on numbers (``+ - * / // % **`` and unary ``-``). Every problem raises
:class:`NetworkParseError`, which quotes the text and marks the column with a caret.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import io
import operator
import tokenize
from typing import Any

import torch
from torch import nn

from neurorun.common.errors import one_line
from neurorun.common.values import is_int
from neurorun.nets.catalog import LAYERS, REFUSED, dim_error
from neurorun.nets.chain import Chain
from neurorun.nets.expression import BINARY, UNARY

MAX_PARAMETERS = 100_000_000  # a layer, or a network, larger than this is a typo, not a policy
_MAX_POWER_BITS = 4096  # integer powers beyond this many bits are refused, not computed
_SCALARS = (int, float, bool, str, type(None))


class NetworkParseError(ValueError):
    """A network string that cannot be built; the message marks the offending column.

    Attributes:
        text: the network string. line, column: 1-based position of the problem.
    """

    def __init__(self, problem: str, text: str, index: int = 0) -> None:
        index = max(0, min(index, len(text)))
        self.problem, self.text, self.index = problem, text, index
        self.line = text.count("\n", 0, index) + 1
        start = text.rfind("\n", 0, index) + 1
        self.column = index - start + 1
        end = text.find("\n", index)
        shown = text[start : len(text) if end < 0 else end].replace("\t", " ")
        where = f"line {self.line}, column {self.column}" if "\n" in text else (
            f"column {self.column}")
        marker = " " * (self.column - 1) + "^"
        super().__init__(f"{problem}\n  in the network string, at {where}:\n    {shown}\n"
                         f"    {marker}")

    def __reduce__(self) -> tuple:
        # pickled across processes (ray) with the arguments, not the formatted message
        return (type(self), (self.problem, self.text, self.index))


def _suggest(name: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
    if close:
        return f"; did you mean {' or '.join(close)}?"
    return f"; known: {', '.join(sorted(valid))}" if valid else ""


class _Builder:
    """Walks the syntax tree; ``index`` turns an ast position into a character index of text."""

    def __init__(self, text: str, source: str, lead: int, constants: dict[str, Any]) -> None:
        self.text, self.source, self.lead, self.constants = text, source, lead, constants

    def error(self, problem: str, node: ast.AST) -> NetworkParseError:
        byte_column = getattr(node, "col_offset", 0)
        chars = len(self.source.encode()[:byte_column].decode("utf-8", errors="ignore"))
        return NetworkParseError(problem, self.text, self.lead + chars)

    def chain_members(self, node: ast.expr) -> list[nn.Module]:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.RShift):
            return self.chain_members(node.left) + self.chain_members(node.right)
        if isinstance(node, ast.Call):
            return [self.layer(node)]
        if isinstance(node, ast.Name) and node.id in LAYERS:
            raise self.error(f"{node.id} is a layer; call it to create one: {node.id}(...)", node)
        if isinstance(node, ast.Name):
            raise self.error(f"unknown layer {node.id!r}{_suggest(node.id, list(LAYERS))}", node)
        raise self.error(
            f"expected a layer such as Linear(obs_length, 64), chained with >>, "
            f"but found {_describe(node)}",
            node,
        )

    def layer(self, call: ast.Call) -> nn.Module:
        func = call.func
        if isinstance(func, ast.Attribute):
            raise self.error(f"write the layer's bare name, {func.attr}(...), "
                             f"instead of {ast.unparse(func)}(...)", call)
        if not isinstance(func, ast.Name):
            raise self.error(f"expected a layer name before '(', found {_describe(func)}", call)
        name = func.id
        if name in REFUSED:
            raise self.error(f"{name} is not allowed in a policy network: {REFUSED[name]}", call)
        if name not in LAYERS:
            raise self.error(f"unknown layer {name!r}{_suggest(name, list(LAYERS))}", call)
        args = [self.value(arg) for arg in call.args]
        kwargs = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise self.error("** unpacking is not supported; name each argument", call)
            kwargs[keyword.arg] = self.value(keyword.value)
        return self.construct(name, args, kwargs, call)

    def construct(self, name: str, args: list, kwargs: dict, call: ast.Call) -> nn.Module:
        shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
        cls = LAYERS[name]
        try:
            inspect.signature(cls).bind(*args, **kwargs)  # a clear TypeError for wrong arities
            with torch.device("meta"):  # shapes and argument errors without allocating memory
                count = sum(p.numel() for p in cls(*args, **kwargs).parameters())
            if count > MAX_PARAMETERS:
                raise self.error(f"{name}({shown}) would hold {count:,} parameters, more than "
                                 f"the limit of {MAX_PARAMETERS:,}; check the sizes", call)
            module = cls(*args, **kwargs)
            wrong_dim = dim_error(module)
            if wrong_dim:
                raise self.error(f"{name}({shown}): {wrong_dim}", call)
            return module
        except NetworkParseError:
            raise
        except Exception as error:  # a layer may reject its arguments with any exception
            raise self.error(f"cannot create {name}({shown}): "
                             f"{one_line(error, with_type=True)}", call) from None

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, _SCALARS):
            return node.value
        if isinstance(node, ast.Name):
            return self.constant(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            return self.arithmetic(UNARY[type(node.op)], node, self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            left, right = self.value(node.left), self.value(node.right)
            return self.arithmetic(BINARY[type(node.op)], node, left, right)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.RShift):
            raise self.error(">> chains layers; it cannot appear inside a layer's arguments", node)
        raise self.error(f"{_describe(node)} is not allowed as an argument; use numbers, "
                         "constants and + - * / // % ** on them", node)

    def constant(self, node: ast.Name) -> Any:
        if node.id in self.constants:
            return self.constants[node.id]
        if node.id in ("inf", "nan"):
            return float(node.id)
        if node.id in LAYERS:
            raise self.error(f"{node.id} is a layer, not a value; layers are chained with >>",
                             node)
        hint = _suggest(node.id, list(self.constants))
        raise self.error(f"unknown constant {node.id!r}{hint} (pass new constants in "
                         "network_args)", node)

    def arithmetic(self, op: Any, node: ast.expr, *operands: Any) -> Any:
        for operand in operands:
            if not isinstance(operand, (int, float)):
                raise self.error(f"arithmetic needs numbers, got {operand!r}", node)
        if op is operator.pow and all(is_int(x) for x in operands):
            base, exponent = operands
            if abs(base) > 1 and exponent > 0 and abs(base).bit_length() * exponent > (
                    _MAX_POWER_BITS):
                raise self.error(f"{base} ** {exponent} is too large a number", node)
        try:
            return op(*operands)
        except (ArithmeticError, ValueError) as error:
            raise self.error(f"cannot compute {ast.unparse(node)}: {error}", node) from None

    def subscript(self, node: ast.Subscript) -> Any:
        sequence, index = self.value(node.value), self.value(node.slice)
        if not isinstance(sequence, tuple) or not is_int(index):
            raise self.error("indexing works on tuple constants with an integer, as in "
                             f"obs_shape[0]; got {sequence!r}[{index!r}]", node)
        if not -len(sequence) <= index < len(sequence):
            raise self.error(f"index {index} is out of range for {sequence!r}", node)
        return sequence[index]


def _describe(node: ast.AST) -> str:
    try:
        return repr(ast.unparse(node))
    except Exception:  # unparse of an odd tree; the class name is still informative
        return type(node).__name__


def _links(source: str) -> list[tuple[int, str]]:
    """``source`` cut at its top-level ``>>`` (outside brackets and strings, found by Python's
    tokenizer), each part with its offset: one ast of a flat chain nests a level per layer,
    past Python's recursion limit at a few thousand layers; its parts do not."""
    cuts, depth = [], 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP:
                depth += (token.string in "([{") - (token.string in ")]}")
                if token.string == ">>" and depth == 0:
                    cuts.append(token.start[1])
    except (tokenize.TokenError, SyntaxError):  # unbalanced or unreadable: ast says where
        return [(0, source)]
    starts = [0, *(cut + 2 for cut in cuts)]
    ends = [*cuts, len(source)]
    return [(start, source[start:end]) for start, end in zip(starts, ends, strict=True)]


def _parse_links(text: str, source: str, lead: int, constants: dict[str, Any]
                 ) -> list[tuple[_Builder, ast.expr]]:
    """Each link of the chain parsed, with the builder that reports its columns."""
    parts = []
    for start, link in _links(source):
        stripped = link.lstrip()
        offset = lead + start + len(link) - len(stripped)
        try:
            body = ast.parse(stripped, mode="eval").body
        except SyntaxError as error:
            column = offset + max((error.offset or 1) - 1, 0)
            raise NetworkParseError(f"invalid syntax: {error.msg}", text, column) from None
        parts.append((_Builder(text, stripped, offset, constants), body))
    return parts


def _build(parts: list[tuple[_Builder, ast.expr]]) -> nn.Module:
    members = [member for builder, body in parts for member in builder.chain_members(body)]
    return members[0] if len(members) == 1 else Chain(*members)


def constant_names(text: str) -> set[str] | None:
    """The names of constants ``text`` reads (its layers' names left out); None for a text that
    does not parse (building it says why)."""
    flat = text.replace("\r", " ").replace("\n", " ").strip()
    names: set[str] = set()
    for _, link in _links(flat):
        try:
            tree = ast.parse(link.strip(), mode="eval")
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            return None
        names.update(node.id for node in ast.walk(tree)
                     if isinstance(node, ast.Name) and node.id not in LAYERS)
    return names


def parse_network(text: str, **constants: Any) -> nn.Module:
    """Build the module that a network string describes.

    Args:
        text: e.g. ``"Linear(obs_length, hidden) >> Tanh() >> Linear(hidden, act_length)"``;
            it may span several lines.
        **constants: the names the text may use, e.g. ``obs_length=4, hidden=64``.

    Returns:
        The single layer, or a :class:`~neurorun.nets.chain.Chain` for ``a >> b``.

    Raises:
        NetworkParseError: for any problem, with the column of the offending part.
    """
    if not isinstance(text, str):
        raise NetworkParseError(f"a network string is needed, got {type(text).__name__}", "")
    flat = text.replace("\r", " ").replace("\n", " ")  # one line, same character positions
    source = flat.lstrip()
    lead = len(flat) - len(source)
    if not source:
        raise NetworkParseError("the network string is empty; expected e.g. "
                                "Linear(obs_length, act_length)", text)
    try:
        parts = _parse_links(text, source, lead, constants)
        with torch.device("meta"):  # the whole network's size first, without memory
            total = sum(p.numel() for p in _build(parts).parameters())
        if total > MAX_PARAMETERS:
            raise NetworkParseError(f"the network would hold {total:,} parameters in all, more "
                                    f"than the limit of {MAX_PARAMETERS:,}; check the sizes",
                                    text, lead)
        return _build(parts)
    except (RecursionError, MemoryError):
        raise NetworkParseError("the network string is nested too deeply", text) from None
    except ValueError as error:
        if isinstance(error, NetworkParseError):
            raise
        raise NetworkParseError(f"unreadable text: {error}", text) from None
