"""A prompt in Python source, read with the parser as its library would build it (never run).

`FILE.py:NAME` names a module-level assignment, `NAME["key"]` an entry of a module-level
dict literal, `Class.NAME` a class attribute. Its value is read when it is:

- text: a string literal, adjacent literals, an f-string or `+` of texts and module
  constants, `textwrap.dedent(...)` / `inspect.cleandoc(...)` / `.strip()` of text;
- `string.Template(text)`: one template in `$name`;
- LangChain: `PromptTemplate(template=...)`, `PromptTemplate.from_template(...)`,
  `ChatPromptTemplate.from_template(...)`, `ChatPromptTemplate.from_messages([...])` /
  `ChatPromptTemplate([...])` of role tuples, strings, `*MessagePromptTemplate.from_template`,
  `SystemMessage`/`HumanMessage`/`AIMessage` (sent as written) and `MessagesPlaceholder`;
  `template_format` f-string (the default), jinja2 or mustache, written literally;
- LlamaIndex: `PromptTemplate(...)`, `ChatPromptTemplate(message_templates=[ChatMessage(...)])`,
  `ChatPromptTemplate.from_messages([...])`.

Which library a `PromptTemplate` is comes from the module's imports. Anything whose value
only running the code gives (another call, a name imported from elsewhere, a prompt pulled
from a hub) is refused in one line saying what it depends on and what would work.
"""

from __future__ import annotations

import ast
import inspect
import posixpath
import re
import textwrap
from dataclasses import dataclass, field

from flipgate.errors import InputError, Problem
from flipgate.prompts.parts import TEXT, ChatPart

MAX_DEPTH = 64
_TOO_DEEP = "{name} is built from names or parts nested more than " + str(MAX_DEPTH) + " deep; refused"
MAX_TEXT = 512_000   # characters one name may build: a template file's own cap (sandbox.Limits)
TARGET = re.compile(r"(?P<name>[A-Za-z_]\w*)(?:\.(?P<attr>[A-Za-z_]\w*)|\[(?P<key>\"[^\"]*\"|'[^']*')\])?")
LANGCHAIN, LLAMAINDEX = "LangChain", "LlamaIndex"
_LANGCHAIN_FORMATS = {"f-string": "fstring", "jinja2": "jinja2", "mustache": "mustache"}
_LANGCHAIN_ROLES = {"system": "system", "human": "user", "user": "user", "ai": "assistant",
                    "assistant": "assistant"}
_LANGCHAIN_CLASSES = {"SystemMessagePromptTemplate": "system", "HumanMessagePromptTemplate": "user",
                      "AIMessagePromptTemplate": "assistant"}
_LANGCHAIN_MESSAGES = {"SystemMessage": "system", "HumanMessage": "user", "AIMessage": "assistant"}
_LLAMA_ROLES = ("system", "user", "assistant")
_HUB_HINT = ("keep the prompt's text in the repository and name it (generator.python), or "
             "name its parts with generator.messages")


@dataclass(frozen=True)
class Read:
    """What a name holds: text (with its line), or a prompt object's messages."""

    text: str | None = None
    line: int = 1
    format: str | None = None          # the format the object fixes (string.Template: dollar)
    parts: tuple[ChatPart, ...] = ()
    chat: bool = False                 # parts, as the library sends them (no role lines split)


@dataclass
class Module:
    """A parsed module's top-level names: assignments, imports and classes."""

    source: str
    path: str
    assigned: dict[str, ast.expr] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)       # local name -> module.name
    classes: dict[str, dict[str, ast.expr]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)   # each name's text, built once

    def problem(self, node: ast.AST | None, message: str) -> InputError:
        return InputError(Problem(self.source, getattr(node, "lineno", None), message))


def parse_module(text: str, *, source: str, path: str) -> Module:
    try:
        tree = ast.parse(text, filename=source)
    except SyntaxError as exc:
        raise InputError(Problem(source, exc.lineno, f"is not valid Python: {exc.msg}")) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise InputError(Problem(source, None, f"could not be parsed as Python: {type(exc).__name__}")) from None
    module = Module(source=source, path=path)
    for node in tree.body:
        _assign(node, module.assigned)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                module.imported[alias.asname or alias.name] = f"{'.' * node.level}{node.module or ''}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module.imported[alias.asname or alias.name.partition(".")[0]] = \
                    alias.name if alias.asname else alias.name.partition(".")[0]
        elif isinstance(node, ast.ClassDef):
            body: dict[str, ast.expr] = {}
            for item in node.body:
                _assign(item, body)
            module.classes[node.name] = body
    return module


def _assign(node: ast.stmt, into: dict[str, ast.expr]) -> None:
    """The last assignment of a name wins, as at import."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                into[target.id] = node.value
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        into[node.target.id] = node.value


def read_target(module: Module, target: str) -> Read:
    """What `target` (NAME, NAME["key"] or Class.NAME) holds."""
    match = TARGET.fullmatch(target)
    if match is None:
        raise module.problem(None, f"{target!r} is not NAME, NAME[\"key\"] or Class.NAME")
    name, attr, key = match.group("name", "attr", "key")
    if attr is not None:
        if name not in module.classes:
            raise module.problem(None, f"defines no class {name} at the module level")
        if attr not in module.classes[name]:
            raise module.problem(None, f"class {name} assigns no {attr} in its body")
        return _value(module, module.classes[name][attr], target, 0)
    value = _named(module, name, None, target)
    if key is None:
        return _value(module, value, target, 0)
    wanted = ast.literal_eval(key)
    if not isinstance(value, ast.Dict):
        raise module.problem(value, f"{name} is {_what(value)}, not a dict written in the file, so "
                                    f"{target} is known only when the code runs")
    entries = [v for k, v in zip(value.keys, value.values, strict=True)
               if isinstance(k, ast.Constant) and k.value == wanted]
    if entries:
        return _value(module, entries[-1], target, 0)   # the last one wins, as in Python
    raise module.problem(value, f"the dict {name} has no entry {key} written in it")


def read_text(module: Module, target: str) -> tuple[str, int, str | None]:
    """A name that must hold one text (a system message, a message of generator.messages):
    (the text, its line, the format its object fixes; None: the configured one)."""
    read = read_target(module, target)
    if read.text is not None:
        return read.text, read.line, read.format
    if len(read.parts) == 1 and read.parts[0].format != TEXT and read.parts[0].placeholder is None:
        return read.parts[0].text, read.parts[0].line, read.parts[0].format
    raise module.problem(None, f"{target} is a prompt of several messages, not one text: name it "
                               "as generator.python")


def _named(module: Module, name: str, node: ast.AST | None, what: str) -> ast.expr:
    if name in module.assigned:
        return module.assigned[name]
    if name in module.imported:
        origin = module.imported[name]
        raise module.problem(node, f"{what} reads {name}, imported from {origin.rpartition('.')[0]}: "
                                   f"flipgate reads one file without running it, so name it where it "
                                   f"is written (generator.python: {_file_of(module, origin.rpartition('.')[0])}:"
                                   f"{origin.rpartition('.')[2]})")
    raise module.problem(node, f"assigns no {name} at the module level (a prompt or string "
                               "constant flipgate can read without running the code)")


def _file_of(module: Module, dotted: str) -> str:
    """The file a module name most likely is: a relative import beside the importing file."""
    level = len(dotted) - len(dotted.lstrip("."))
    path = dotted.lstrip(".").replace(".", "/") + ".py"
    if level == 0:
        return path
    base = posixpath.dirname(module.path)
    for _ in range(level - 1):
        base = posixpath.dirname(base)
    return posixpath.join(base, path)


def _what(value: ast.expr) -> str:
    if isinstance(value, ast.Call):
        return f"a call ({ast.unparse(value.func)}(...))"
    return f"a {type(value).__name__} expression"


def _value(module: Module, value: ast.expr, name: str, depth: int) -> Read:
    """`value` as text or a prompt object."""
    if depth > MAX_DEPTH:
        raise module.problem(value, _TOO_DEEP.format(name=name))
    hub = _hub_call(value)
    if hub is not None:
        raise module.problem(value, f"{name} is pulled from a prompt hub when the code runs "
                                    f"({ast.unparse(hub.func)}(...)); flipgate cannot read it: {_HUB_HINT}")
    if isinstance(value, ast.Name) and value.id in module.assigned:
        return _value(module, module.assigned[value.id], name, depth + 1)
    if isinstance(value, ast.Call):
        built = _prompt_object(module, value, name, depth)
        if built is not None:
            return built
    text = _text(module, value, name, depth)
    return Read(text=text, line=value.lineno)


def _hub_call(value: ast.expr) -> ast.Call | None:
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "pull_prompt" or (node.func.attr == "pull"
                                                    and ast.unparse(node.func.value).endswith("hub"))):
            return node
    return None


# --- text --------------------------------------------------------------------------

_TEXT_CALLS = {"textwrap.dedent": textwrap.dedent, "inspect.cleandoc": inspect.cleandoc}
_TEXT_METHODS = ("strip", "lstrip", "rstrip")


def _text(module: Module, value: ast.expr, name: str, depth: int) -> str:
    """The text `value` builds, each name built once, none longer than MAX_TEXT."""
    text = _built(module, value, name, depth)
    if len(text) > MAX_TEXT:
        raise module.problem(value, f"{name} builds more than {MAX_TEXT:,} characters; refused")
    return text


def _built(module: Module, value: ast.expr, name: str, depth: int) -> str:
    if depth > MAX_DEPTH:
        raise module.problem(value, _TOO_DEEP.format(name=name))
    if isinstance(value, ast.Constant):
        if isinstance(value.value, str):
            return value.value
        raise module.problem(value, f"{name} is a {type(value.value).__name__}, not a string")
    if isinstance(value, ast.Name):
        if value.id not in module.texts:
            module.texts[value.id] = _text(module, _named(module, value.id, value, name), name, depth + 1)
        return module.texts[value.id]
    if isinstance(value, ast.JoinedStr):
        out = []
        for piece in value.values:
            if isinstance(piece, ast.Constant):
                out.append(str(piece.value))
            elif isinstance(piece, ast.FormattedValue) and piece.conversion == -1 \
                    and piece.format_spec is None and isinstance(piece.value, ast.Name):
                out.append(_text(module, piece.value, name, depth + 1))
            else:
                raise module.problem(value, f"{name} is an f-string whose field "
                                     f"{{{ast.unparse(piece.value) if isinstance(piece, ast.FormattedValue) else ''}}} "
                                     "only running the code can fill; write it as a template "
                                     "placeholder ({name}) in a plain string")
        return "".join(out)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and value.value.id in module.imported:
        origin = module.imported[value.value.id]
        raise module.problem(value, f"{name} reads {ast.unparse(value)}, from the module {origin}: "
                                    "flipgate reads one file without running it, so name it where it "
                                    f"is written (generator.python: {_file_of(module, origin)}:{value.attr})")
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _text(module, value.left, name, depth + 1) + _text(module, value.right, name, depth + 1)
    if isinstance(value, ast.Call) and not value.keywords and len(value.args) <= 1:
        called = _qualified(module, value.func)
        if called in _TEXT_CALLS and len(value.args) == 1:
            return _TEXT_CALLS[called](_text(module, value.args[0], name, depth + 1))
        if isinstance(value.func, ast.Attribute) and value.func.attr in _TEXT_METHODS and not value.args:
            return str(getattr(_text(module, value.func.value, name, depth + 1), value.func.attr)())
    if isinstance(value, ast.Call):
        raise module.problem(value, f"{name} is a call ({ast.unparse(value.func)}(...)) flipgate does "
                                    "not know, and it never runs the code: name the string or the "
                                    "prompt it is built from")
    if isinstance(value, ast.BinOp):
        raise module.problem(value, f"{name} is built with an operator ({type(value.op).__name__}) "
                                    "only running the code can apply; write the text as literals")
    raise module.problem(value, f"{name} is {_what(value)}, not a string or a prompt flipgate reads")


def _qualified(module: Module, func: ast.expr) -> str:
    """A callee's dotted name with its first part resolved through the module's imports
    (`PromptTemplate` imported from langchain_core.prompts: `langchain_core.prompts.PromptTemplate`)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    root = module.imported.get(func.id, func.id).lstrip(".")
    return ".".join([root, *parts])


# --- prompt objects ----------------------------------------------------------------

def _library(qualified: str) -> str | None:
    if qualified.startswith("langchain"):
        return LANGCHAIN
    if qualified.startswith("llama_index"):
        return LLAMAINDEX
    return None


def _kw(call: ast.Call, key: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == key), None)


def _literal(module: Module, node: ast.expr | None, name: str, what: str) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise module.problem(node, f"{name}: {what} is {ast.unparse(node)}, which only running the "
                                   "code gives; write it literally") from None


def _prompt_object(module: Module, call: ast.Call, name: str, depth: int) -> Read | None:
    qualified = _qualified(module, call.func)
    tail = qualified.split(".")
    if qualified in ("string.Template",):
        if len(call.args) != 1 or call.keywords:
            raise module.problem(call, f"{name}: string.Template takes the template as its one argument")
        return Read(text=_text(module, call.args[0], name, depth + 1), line=call.args[0].lineno,
                    format="dollar")
    library = _library(qualified)
    if library is None or len(tail) < 2:
        return None
    ignored = {"input_variables", "validate_template", "metadata", "tags", "name", "output_parser",
               "input_types", "prompt_type", "template_format", "optional_variables"}
    unread = [k.arg for k in call.keywords if k.arg not in ignored and k.arg not in
              ("template", "message_templates", "messages")]
    if unread:
        raise module.problem(call, f"{name}: {library}'s {'.'.join(tail[-2:])}(...) sets "
                                   f"{', '.join(str(k) for k in unread)}, filled when the code runs; "
                                   "flipgate reads only the template (name its text, or drop the keyword)")
    cls, method = (tail[-2], tail[-1]) if tail[-1] in ("from_template", "from_messages") else (tail[-1], None)
    if cls == "RichPromptTemplate":
        raise module.problem(call, f"{name} is LlamaIndex's RichPromptTemplate, whose {{% chat %}} blocks "
                                   "are rendered by its banks library, which flipgate does not run: name "
                                   "its messages with generator.messages (a Jinja2 template each)")
    fmt = _format(module, call, name, library)
    if cls == "PromptTemplate" and method in (None, "from_template"):
        template = call.args[0] if call.args else _kw(call, "template")
        if library == LANGCHAIN and method is None and call.args:
            raise module.problem(call, f"{name}: LangChain's PromptTemplate takes template= by keyword")
        if template is None:
            raise module.problem(call, f"{name}: {library}'s PromptTemplate(...) names no template")
        part = _part(module, "user", template, fmt, name, depth)
        return Read(parts=(part,), chat=True)
    if cls == "ChatPromptTemplate" and method == "from_template" and library == LANGCHAIN:
        return Read(parts=(_part(module, "user", call.args[0], fmt, name, depth),), chat=True)
    if cls == "ChatPromptTemplate":
        items = _resolve(module, call.args[0] if call.args else (_kw(call, "messages")
                                                                 or _kw(call, "message_templates")))
        if not isinstance(items, (ast.List, ast.Tuple)):
            raise module.problem(call, f"{name}: the messages of {'.'.join(tail[-2:])}(...) are "
                                       "not a list written in the call; write them as one, or name them "
                                       "with generator.messages")
        parts = tuple(_message(module, _resolve(module, item) or item, name, fmt, library, depth)
                      for item in items.elts)
        return Read(parts=parts, chat=True)
    return None


def _resolve(module: Module, node: ast.expr | None) -> ast.expr | None:
    """A module-level name followed to the value it was assigned (a list of messages, one
    message built at the module level)."""
    for _ in range(MAX_DEPTH):
        if not (isinstance(node, ast.Name) and node.id in module.assigned):
            break
        node = module.assigned[node.id]
    return node


def _format(module: Module, call: ast.Call, name: str, library: str) -> str:
    if library == LLAMAINDEX:
        return "llamaindex"
    written = _literal(module, _kw(call, "template_format"), name, "template_format") or "f-string"
    if written not in _LANGCHAIN_FORMATS:
        raise module.problem(call, f"{name}: template_format {written!r} is not one of "
                                   f"{', '.join(_LANGCHAIN_FORMATS)}")
    return _LANGCHAIN_FORMATS[str(written)]


def _part(module: Module, role: str, template: ast.expr, fmt: str, name: str, depth: int) -> ChatPart:
    text = _text(module, template, name, depth + 1)
    return ChatPart(role=role, text=text, format=fmt, path=module.path, source=module.source,
                    line=template.lineno)


def _message(module: Module, item: ast.expr, name: str, fmt: str, library: str, depth: int) -> ChatPart:
    """One entry of a chat prompt's message list."""
    where = f"{name} (line {item.lineno})"
    if isinstance(item, ast.Tuple) and len(item.elts) == 2:
        role = _literal(module, item.elts[0], where, "the role")
        if library == LANGCHAIN and role == "placeholder":
            text = _text(module, item.elts[1], where, depth + 1)
            if not re.fullmatch(r"\{\w+\}", text):
                raise module.problem(item, f"{where}: a placeholder is written ('placeholder', '{{name}}')")
            return ChatPart(role="", placeholder=text[1:-1], optional=True, path=module.path,
                            source=module.source, line=item.lineno)
        roles = _LANGCHAIN_ROLES if library == LANGCHAIN else {r: r for r in _LLAMA_ROLES}
        if role not in roles:
            raise module.problem(item, f"{where}: the role {role!r} is not one of {', '.join(roles)}")
        return _part(module, roles[str(role)], item.elts[1], fmt, where, depth)
    if not isinstance(item, ast.Call):
        if library == LANGCHAIN:
            return _part(module, "user", item, fmt, where, depth)   # a string: a human message
        raise module.problem(item, f"{where}: a message is a ChatMessage(...) or a (role, text) pair")
    called = _qualified(module, item.func).split(".")
    if called[-1] == "from_template" and len(called) > 1 and called[-2] in _LANGCHAIN_CLASSES:
        own = _format(module, item, where, LANGCHAIN)
        template = item.args[0] if item.args else _kw(item, "template")
        if template is None:
            raise module.problem(item, f"{where}: {called[-2]}.from_template names no template")
        return _part(module, _LANGCHAIN_CLASSES[called[-2]], template, own, where, depth)
    if called[-1] in _LANGCHAIN_MESSAGES:
        content = item.args[0] if item.args else _kw(item, "content")
        if content is None:
            raise module.problem(item, f"{where}: {called[-1]} has no content")
        text = _text(module, content, where, depth + 1)
        return ChatPart(role=_LANGCHAIN_MESSAGES[called[-1]], text=text, format=TEXT, path=module.path,
                        source=module.source, line=content.lineno)
    if called[-1] == "MessagesPlaceholder":
        field_name = _literal(module, item.args[0] if item.args else _kw(item, "variable_name"),
                              where, "the placeholder's name")
        optional = _literal(module, _kw(item, "optional"), where, "optional") or False
        if not isinstance(field_name, str) or _kw(item, "n_messages") is not None:
            raise module.problem(item, f"{where}: MessagesPlaceholder needs its variable_name written "
                                       "as text (n_messages is not read)")
        return ChatPart(role="", placeholder=field_name, optional=bool(optional), path=module.path,
                        source=module.source, line=item.lineno)
    if called[-1] == "ChatMessage" and library == LLAMAINDEX:
        role_node, content = _kw(item, "role"), _kw(item, "content")
        role = (role_node.attr.lower() if isinstance(role_node, ast.Attribute)
                else _literal(module, role_node, where, "the role")) if role_node is not None else "user"
        if role not in _LLAMA_ROLES:
            raise module.problem(item, f"{where}: the role {role!r} is not one of {', '.join(_LLAMA_ROLES)}")
        if content is None:
            raise module.problem(item, f"{where}: ChatMessage has no content=")
        return _part(module, str(role), content, "llamaindex", where, depth)
    raise module.problem(item, f"{where}: {ast.unparse(item.func)}(...) is not a message flipgate "
                               "reads without running the code; name the messages with generator.messages")
