"""A small, safe expression language for ``Apply("...")``: parsed with ``ast``, never evaluated.

The expression sees one tensor, ``x``. Allowed: numbers, the constants ``pi`` and ``e``, the
operators ``+ - * / // % **`` and unary ``-``/``+``, and calls of the functions in
:data:`FUNCTIONS` (positional or keyword arguments, e.g. ``clamp(x, -1, 1)``).

An expression compiles once into a function of ``(functions, x)``: ``compile_expression`` binds
torch's functions (the ``Apply`` module), :mod:`neurorun.nets.arrays` binds numpy's or
jax.numpy's under the same names.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from neurorun.common.values import is_number

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": torch.abs,
    "clamp": torch.clamp,
    "cos": torch.cos,
    "exp": torch.exp,
    "log": torch.log,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "relu": torch.relu,
    "round": torch.round,
    "sigmoid": torch.sigmoid,
    "sign": torch.sign,
    "sin": torch.sin,
    "sqrt": torch.sqrt,
    "square": torch.square,
    "tanh": torch.tanh,
}
CONSTANTS = {"pi": math.pi, "e": math.e}
BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}

Functions = dict[str, Callable[..., Any]]
Compiled = Callable[[Functions, Any], Any]  # (the function table, x) -> value


def _unknown(kind: str, name: str, valid: list[str]) -> ValueError:
    close = difflib.get_close_matches(name, valid, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; valid: {', '.join(valid)}"
    return ValueError(f"unknown {kind} {name!r} in the Apply expression{hint}")


def _compile_name(node: ast.Name) -> Compiled:
    if node.id == "x":
        return lambda f, x: x
    if node.id in CONSTANTS:
        value = CONSTANTS[node.id]
        return lambda f, x: value
    raise _unknown("name", node.id, ["x", *CONSTANTS])


def _compile_call(node: ast.Call) -> Compiled:
    if not isinstance(node.func, ast.Name):
        raise ValueError(f"Apply expression: call a function by its name, not {ast.unparse(node)}")
    if node.func.id not in FUNCTIONS:
        raise _unknown("function", node.func.id, sorted(FUNCTIONS))
    name = node.func.id
    args = [_compile(a) for a in node.args]
    if any(k.arg is None for k in node.keywords):
        raise ValueError("Apply expression: ** keyword unpacking is not supported")
    kwargs = {k.arg: _compile(k.value) for k in node.keywords}
    return lambda f, x: f[name](*[a(f, x) for a in args],
                                **{k: v(f, x) for k, v in kwargs.items()})


def _compile(node: ast.AST) -> Compiled:
    if isinstance(node, ast.Constant) and is_number(node.value):
        value = float(node.value)  # floats overflow to errors/inf instead of growing unbounded
        return lambda f, x: value
    if isinstance(node, ast.Name):
        return _compile_name(node)
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        op, left, right = BINARY[type(node.op)], _compile(node.left), _compile(node.right)
        return lambda f, x: op(left(f, x), right(f, x))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        uop, operand = UNARY[type(node.op)], _compile(node.operand)
        return lambda f, x: uop(operand(f, x))
    if isinstance(node, ast.Call):
        return _compile_call(node)
    raise ValueError(
        f"Apply expression: {ast.unparse(node)!r} is not allowed; use x, numbers, "
        "+ - * / // % **, and the functions " + ", ".join(sorted(FUNCTIONS))
    )


def parse_expression(text: str) -> Compiled:
    """``text`` as a function of ``(functions, x)``, checked for its form only.

    Raises:
        ValueError: the text is not a valid expression of the allowed form, naming the problem.
    """
    if not isinstance(text, str):
        raise ValueError(f"Apply expects the expression as a string, e.g. Apply('x ** 2'), "
                         f"got {text!r}")
    try:
        return _compile(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, RecursionError, MemoryError) as error:
        raise ValueError(f"Apply expression {text!r} is not valid: {error}") from None


def compile_expression(text: str) -> Callable[[Tensor], Tensor]:
    """Compile ``text`` into a function of the tensor ``x`` (torch's functions).

    Raises:
        ValueError: the text is not a valid expression of the allowed form, naming the problem.
    """
    compiled = parse_expression(text)
    try:
        # A trial run catches wrong arities and constant results; an explicit device keeps it
        # off the meta device the parser builds layers on first.
        probe = compiled(FUNCTIONS, torch.zeros(2, device="cpu"))
    except (SyntaxError, TypeError, RecursionError, MemoryError, OverflowError) as error:
        raise ValueError(f"Apply expression {text!r} is not valid: {error}") from None
    except ZeroDivisionError:
        raise ValueError(f"Apply expression {text!r} divides a constant by zero") from None
    if not isinstance(probe, Tensor):
        raise ValueError(f"Apply expression {text!r} does not depend on x; use x in it")

    def evaluate(x: Tensor) -> Tensor:
        return compiled(FUNCTIONS, x)

    return evaluate
