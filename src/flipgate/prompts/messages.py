"""Rendered text into chat messages, the way each reference runtime splits it.

- v1 splits at lines `system:` / `user:` / `assistant:` / `function:`
  (optionally `# `-prefixed), strips each message, and turns markdown
  images `![alt](url)` into `image_url` parts (a file of the same ref
  becomes a `data:` URL).
- v2 splits line by line at role markers that may carry attributes
  (`user[name="Alice"]:`, `developer:`), keeps inner blank lines, and puts
  the messages of `kind: thread` inputs (and image/file/audio inputs) where
  the template mentions them.

A case's values can never start a message: before rendering, a marker is put
in front of every role-like line inside them, and removed after splitting.
That is a deliberate difference from the reference runtimes (which would
let data forge a message), and the only one.
"""

from __future__ import annotations

import base64
import posixpath
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any

V1_ROLES = ("assistant", "function", "system", "user")
V2_ROLES = ("assistant", "developer", "system", "user")
_ANY_ROLE = "|".join(sorted(set(V1_ROLES) | set(V2_ROLES)))

Message = dict[str, Any]

# Inserted before a role line inside a case's value; removed after splitting. Only whole
# role lines in a value are marked: a template that writes `{{ message.role }}:` on a line
# of its own (rendering a history it was given) chose to start a message there.
DATA_MARK = "\x00"
_ROLE_LIKE = re.compile(rf"^([^\S\n]*#?[^\S\n]*(?:{_ANY_ROLE})(?:\[[^\]\n]*\])?[^\S\n]*:[^\S\n]*)$",
                        re.IGNORECASE | re.MULTILINE)

_V1_SEPARATOR = re.compile(rf"^\s*#?\s*({'|'.join(V1_ROLES)})\s*:\s*\n", re.IGNORECASE | re.MULTILINE)
_V1_IMAGE = re.compile(r"!\[[^\]]*\]\((.*?)(?=\"|\))\)", re.MULTILINE)
# Linear-time: possessive quantifiers, and quoted / unquoted values share no characters.
_V2_BOUNDARY = re.compile(
    rf"^\s*#?\s*({'|'.join(V2_ROLES)})"
    r"(\[(?:\w++\s*+=\s*+(?:\"[^\"]*\"|[^\",\]]*+)\s*+,?+\s*+)+\])?\s*:\s*$", re.IGNORECASE)
_V2_ATTRIBUTE = re.compile(r'(\w+)\s*=\s*"?([^",]*)"?')
THREAD_MARK_PREFIX = "__PROMPTY_THREAD_"  # the reference's own spelling

ImageReader = Callable[[str], "bytes | None"]


def mark_data(value: Any) -> Any:
    """Case values with a marker before each role-like line, so data can't start a message."""
    if isinstance(value, str):
        return _ROLE_LIKE.sub(lambda m: DATA_MARK + m.group(1), value)
    if isinstance(value, dict):
        return {k: mark_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_data(v) for v in value]
    return value


def _unmark(text: str) -> str:
    return text.replace(DATA_MARK, "")


# --- v1 ---------------------------------------------------------------------------

def inline_image(url: str, *, directory: str, read: ImageReader | None) -> str:
    """An image reference as v1 sends it: URLs as they are, a file of the ref as a data URL."""
    if url.startswith("http") or url.startswith("data"):
        return url
    suffix = posixpath.splitext(url)[1].lower()
    kinds = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
    if suffix not in kinds:
        raise ValueError(f"image {url!r}: only .png, .jpg and .jpeg files are inlined")
    data = read(posixpath.normpath(posixpath.join(directory, url))) if read is not None else None
    if data is None:
        raise ValueError(f"image {url!r} is not in this git ref")
    return f"data:{kinds[suffix]};base64,{base64.b64encode(data).decode('ascii')}"


def _v1_content(content: str, *, directory: str, read: ImageReader | None) -> str | list[dict[str, Any]]:
    matches = list(_V1_IMAGE.finditer(content))
    if not matches:
        return content
    parts: list[dict[str, Any]] = []
    start = 0
    for match in matches:
        if text := content[start:match.start()].strip():
            parts.append({"type": "text", "text": text})
        url = match.group(1).split(" ")[0].strip()
        parts.append({"type": "image_url",
                      "image_url": {"url": inline_image(url, directory=directory, read=read)}})
        start = match.end()
    if text := content[start:].strip():
        parts.append({"type": "text", "text": text})
    return parts


def split_v1(text: str, *, directory: str = ".", read: ImageReader | None = None) -> list[Message]:
    """v1's split: role lines, each message stripped; text before any role is the system's."""
    chunks = [chunk for chunk in _V1_SEPARATOR.split(text) if chunk.strip()]
    if not chunks:
        return []
    if chunks[0].strip().lower() not in V1_ROLES:
        chunks.insert(0, "system")
    if chunks[-1].strip().lower() in V1_ROLES:
        chunks.pop()
    if len(chunks) % 2:
        raise ValueError("the rendered prompt does not alternate role lines and messages")
    messages = []
    for index in range(0, len(chunks), 2):
        content = _unmark(chunks[index + 1]).strip()
        messages.append({"role": chunks[index].strip().lower(),
                         "content": _v1_content(content, directory=directory, read=read)})
    return messages


# --- a template file or a string constant ------------------------------------------

_ROLE_LINE = re.compile(r"^[^\S\n]*(system|user|assistant)[^\S\n]*:[^\S\n]*\n", re.IGNORECASE | re.MULTILINE)


def split_roles(text: str) -> list[Message]:
    """Lines `system:` / `user:` / `assistant:` split the text, each message stripped; text
    without any is one user message, exactly as rendered (text before the first is the user's)."""
    chunks = _ROLE_LINE.split(text)
    if len(chunks) == 1:
        return [{"role": "user", "content": _unmark(text)}] if text.strip() else []
    messages = []
    if chunks[0].strip():
        messages.append({"role": "user", "content": _unmark(chunks[0]).strip()})
    for index in range(1, len(chunks), 2):
        content = _unmark(chunks[index + 1]).strip()
        if content:
            messages.append({"role": chunks[index].lower(), "content": content})
    return messages


# --- v2 ---------------------------------------------------------------------------

def _v2_attributes(raw: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for match in _V2_ATTRIBUTE.finditer(raw.strip("[]")):
        key, text = match.group(1), match.group(2).strip()
        if key == "nonce":
            continue
        if text.lower() in ("true", "false"):
            values[key] = text.lower() == "true"
            continue
        for kind in (int, float):
            try:
                values[key] = kind(text)
                break
            except ValueError:
                continue
        else:
            values[key] = text
    return values


def split_v2(text: str, *, attributes: bool = True) -> list[Message]:
    """v2's split. With `attributes` False (the reference's default "strict" format,
    which rewrites role lines before rendering), `[name=...]` attributes are dropped."""
    messages: list[Message] = []
    role = "system"
    metadata: dict[str, str] = {}
    lines: list[str] = []

    def flush() -> None:
        if lines:
            messages.append({"role": role, **metadata, "content": _unmark("\n".join(lines).strip("\n"))})

    for line in text.splitlines():
        match = _V2_BOUNDARY.match(line.strip())
        if match:
            flush()
            role, lines = match.group(1).lower(), []
            metadata = _v2_attributes(match.group(2)) if attributes and match.group(2) else {}
            continue
        lines.append(line)
    flush()
    return messages


def thread_marks(rich_inputs: Mapping[str, str]) -> dict[str, str]:
    """A fresh marker per rich input (mark -> input name), rendered in its place."""
    return {f"{THREAD_MARK_PREFIX}{secrets.token_hex(4)}_{name}__": name for name in rich_inputs}


def _message_from_data(value: Any) -> Message:
    """A thread entry (`{"role", "content", ...}`) as a chat message."""
    if not isinstance(value, dict):
        return {"role": "user", "content": str(value)}
    message: Message = {"role": value.get("role", "user")}
    message.update({k: v for k, v in value.items() if k not in ("role", "content", "parts")})
    content = value.get("content", "")
    if isinstance(content, list):
        parts = [_part_from_data(item) for item in content]
        message["content"] = ("".join(p["text"] for p in parts)
                              if all(p.get("type") == "text" for p in parts) else parts)
    else:
        message["content"] = content if isinstance(content, str) else str(content)
    return message


def _part_from_data(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        return {"type": "text", "text": str(item)}
    kind = item.get("kind", item.get("type", "text"))
    if kind == "text":
        return {"type": "text", "text": item.get("value", item.get("text", ""))}
    if kind in ("image", "image_url"):
        url = item.get("source", "")
        if not url and "image_url" in item:
            url = item["image_url"].get("url", "") if isinstance(item["image_url"], dict) else str(item["image_url"])
        image: dict[str, Any] = {"url": url}
        if item.get("detail"):
            image["detail"] = item["detail"]
        return {"type": "image_url", "image_url": image}
    return {"type": "text", "text": str(item)}


def _media_part(kind: str, value: Any) -> dict[str, Any]:
    source = str(value) if value else ""
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": source}}
    if kind == "audio":
        return {"type": "input_audio", "input_audio": {"data": source, "format": "wav"}}
    return {"type": "file", "file": {"url": source}}


def _append_part(messages: list[Message], part: dict[str, Any]) -> None:
    """A media part joins a preceding user message, else starts one (as the reference does)."""
    if not messages or messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": [part]})
        return
    content = messages[-1]["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    messages[-1]["content"] = [*content, part]


def expand_rich_inputs(messages: list[Message], marks: Mapping[str, str], values: Mapping[str, Any],
                       rich_inputs: Mapping[str, str]) -> list[Message]:
    """Put each thread's messages (and each media part) where its marker was rendered;
    a thread the template never mentions goes at the end.

    Every marker in a message is expanded, in the order they appear (the reference
    runtime expands only one per message, picked in an order that varies by run)."""
    expanded: list[Message] = []
    found = False
    pattern = re.compile("|".join(re.escape(mark) for mark in marks)) if marks else None
    for message in messages:
        content = message["content"]
        pieces = pattern.split(content) if pattern is not None and isinstance(content, str) else [content]
        if len(pieces) == 1:
            expanded.append(message)
            continue
        found = True
        hits = pattern.findall(content)  # type: ignore[union-attr]
        for index, piece in enumerate(pieces):
            if piece.strip():
                expanded.append({**message, "content": piece.strip()})
            if index < len(hits):
                name = marks[hits[index]]
                kind = rich_inputs.get(name, "thread")
                if kind == "thread":
                    thread = values.get(name)
                    if isinstance(thread, list):
                        expanded.extend(_message_from_data(entry) for entry in thread)
                else:
                    _append_part(expanded, _media_part(kind, values.get(name)))
    if not found:
        for name, kind in rich_inputs.items():
            if kind == "thread" and isinstance(values.get(name), list):
                expanded.extend(_message_from_data(entry) for entry in values[name])
    return expanded
