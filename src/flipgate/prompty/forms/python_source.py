"""A module-level string constant of Python source, read with the parser (never run)."""

from __future__ import annotations

import ast

from flipgate.errors import InputError, Problem


def _refusal(value: ast.expr, name: str) -> str:
    if isinstance(value, ast.JoinedStr):
        return (f"{name} is an f-string with expressions, which only running the code can fill; "
                "write its fields as template placeholders ({name}) in a plain string")
    if isinstance(value, ast.Call):
        return (f"{name} is a call ({ast.unparse(value.func)}(...)), and flipgate never runs the "
                "code: name the string constant it is built from")
    if isinstance(value, (ast.Name, ast.Attribute)):
        return f"{name} is another name ({ast.unparse(value)}): name that constant instead"
    if isinstance(value, ast.BinOp):
        return (f"{name} joins strings with an operator ({type(value.op).__name__}); write adjacent "
                "literals (\"a\" \"b\") so it is read without running the code")
    if isinstance(value, ast.Constant):
        return f"{name} is a {type(value.value).__name__}, not a string"
    return f"{name} is a {type(value).__name__} expression, not a string literal"


def constant(text: str, name: str, *, source: str) -> tuple[str, int]:
    """(the value of module-level NAME, the line its value starts on)."""
    try:
        tree = ast.parse(text, filename=source)
    except SyntaxError as exc:
        raise InputError(Problem(source, exc.lineno, f"is not valid Python: {exc.msg}")) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise InputError(Problem(source, None, f"could not be parsed as Python: {type(exc).__name__}")) from None
    found: ast.expr | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            found = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == name and node.value is not None:
            found = node.value
    if found is None:
        raise InputError(Problem(source, None, f"assigns no {name} at the module level (a string "
                                               "constant flipgate can read without running the code)"))
    if isinstance(found, ast.Constant) and isinstance(found.value, str):
        return found.value, found.lineno
    if isinstance(found, ast.JoinedStr) and all(isinstance(v, ast.Constant) and isinstance(v.value, str)
                                                for v in found.values):
        return "".join(str(v.value) for v in found.values if isinstance(v, ast.Constant)), found.lineno
    raise InputError(Problem(source, found.lineno, _refusal(found, name)))
