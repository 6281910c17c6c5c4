"""One message of a chat prompt as the application builds it in code or `generator.messages`
lists it: a role and a template (in its own format), literal text, or a history placeholder."""

from __future__ import annotations

from dataclasses import dataclass

# How a part's text becomes content: a template format (fstring, jinja2, mustache, the
# two substitution formats of `forms/substitute.py`), or `text`: sent exactly as written.
TEXT = "text"


@dataclass(frozen=True)
class ChatPart:
    role: str = "user"             # system | user | assistant ("" for a placeholder)
    text: str = ""                 # the template, or (format text) the content as sent
    format: str = "fstring"        # fstring | jinja2 | mustache | llamaindex | dollar | text
    path: str = ""                 # the repository file it was read from
    source: str = ""               # how messages name that file (path@ref)
    line: int = 1                  # where its text starts in that file
    placeholder: str | None = None  # a history placeholder: the case field holding the messages
    optional: bool = False         # a placeholder whose field may be absent (then no messages)

    @property
    def key(self) -> str:
        """The name its template is loaded under (see `keys`)."""
        if not self.path:
            return self.source            # inline text: generator.messages[N]
        return self.path if self.line == 1 else f"{self.path}:{self.line}"


def keys(parts: tuple[ChatPart, ...]) -> list[str]:
    """Each part's template name, unique within the generator (two on one line: `#2`)."""
    out: list[str] = []
    for part in parts:
        key, n = part.key, 1
        while key in out:
            n += 1
            key = f"{part.key}#{n}"
        out.append(key)
    return out
