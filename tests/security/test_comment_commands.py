"""Only the writer's visible words are commands (issue 28, item 4): a comment's command
lines are the lines GitHub's own engine (cmark-gfm) renders as lines of a top-level
paragraph. A line hidden in an HTML comment, a quote at any depth, a list, a footnote, a
`<blockquote>`, `<pre>`, `<details>` or other HTML, or code of any form is never obeyed:
pasting someone's text cannot carry their commands under the paster's permission.

Each body is checked twice: against cmark-gfm with GitHub's tag filter, its HTML read by
html5lib's tokenizer as a browser reads it (tests/support/gfm.py), that the lines it claims
are hidden are hidden and the shown ones shown, and against flipgate's reader."""

from __future__ import annotations

import random

import pytest
import yaml

from flipgate.config.starter import Starter, workflow_text
from flipgate.github.event import Ignore, command_lines, decide

from support.action_harness import Harness
from support.gfm import shown_command_lines
from support.workflow_expressions import job_runs

HIDDEN = "/flipgate label hidden grounded"
SHOWN = "/flipgate label shown grounded"

# name -> (comment body, the command lines a reader of the rendered comment sees)
ATTACKS: dict[str, tuple[str, list[str]]] = {
    # The red team's four (issue 28): each hid a command cmark-gfm does not show.
    "html comment opened mid-line": (f"Looks good <!--\n{HIDDEN}\n-->\n{SHOWN}", [SHOWN]),
    "quote in a list item, lazy line": (f"- > quoted\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "<blockquote> block": (f"<blockquote>\n\n{HIDDEN}\n\n</blockquote>\n\n{SHOWN}", [SHOWN]),
    "<pre> block": (f"<pre>\n\n{HIDDEN}\n\n</pre>\n{SHOWN}", [SHOWN]),
    # Quotes at any depth, and their lazy lines.
    "nested quote, lazy line": (f"> > deep\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "quote after a quote, lazy line": (f"> a\n>\n> > b\n{HIDDEN}", []),
    "quote in a numbered item": (f"1. > step\n{HIDDEN}", []),
    "list item continuation": (f"- item\n  {HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "list item, lazy line": (f"- item\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    # Other HTML that encloses or swallows what follows.
    "<details> block": (f"<details>\n\n{HIDDEN}\n\n</details>\n\n{SHOWN}", [SHOWN]),
    "<details> opened mid-line": (f"see <details>\n{HIDDEN}\n</details>", []),
    "html comment block, blank lines": (f"<!--\n\n{HIDDEN}\n\n-->\n{SHOWN}", [SHOWN]),
    "unfinished attribute": (f"<div title='\n\n{HIDDEN}\n\n'>", []),
    "inline attribute across lines": (f"x <a title='\n{HIDDEN}\n'>y</a>\n{SHOWN}", [SHOWN]),
    "processing instruction": (f"<?x\n{HIDDEN}\n?>\n{SHOWN}", [SHOWN]),
    "cdata": (f"<![CDATA[\n{HIDDEN}\n]]>\n{SHOWN}", [SHOWN]),
    "<script> block": (f"<script>\n\n{HIDDEN}\n\n</script>\n{SHOWN}", [SHOWN]),
    "link title across lines": (f'[a](https://example.com "\n{HIDDEN}\n")\n{SHOWN}', [SHOWN]),
    "image alt text": (f"![\n{HIDDEN}\n](x.png)\n{SHOWN}", [SHOWN]),
    "reference definition's title": (f'[r]: https://example.com\n"\n{HIDDEN}\n"\n\n{SHOWN}',
                                     [SHOWN]),
    "unreferenced footnote": (f"[^1]: note\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    # Code in any form.
    "fenced code": (f"```\n{HIDDEN}\n```\n{SHOWN}", [SHOWN]),
    "tilde fence": (f"~~~ text\n{HIDDEN}\n~~~\n{SHOWN}", [SHOWN]),
    "unclosed fence": (f"```\n{HIDDEN}", []),
    "indented code": (f"    {HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "tab-indented code": (f"\t{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "code span across lines": (f"x `\n{HIDDEN}\n`\n{SHOWN}", [SHOWN]),
    "long code span across lines": (f"x ``\n{HIDDEN} ``\n\n{SHOWN}", [SHOWN]),
    "code span in emphasis": (f"*x `\n{HIDDEN}\n`*", []),
    # Blocks that are not paragraphs.
    "setext heading": (f"{HIDDEN}\n---\n\n{SHOWN}", [SHOWN]),
    "table header": (f"{HIDDEN} | x\n--- | ---\n\n{SHOWN}", [SHOWN]),
    "table row": (f"| a |\n| - |\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    "row of a table whose header has no pipe": (f"a\n:---\n{HIDDEN}\n\n{SHOWN}", [SHOWN]),
    # Not a line of its own when rendered.
    "line separator": (f"text\u2028{HIDDEN}", []),
    "emphasis across lines": (f"*a\n{HIDDEN}*\n\n{SHOWN}", [SHOWN]),
    # The sixth red team's (issue 35): GitHub shows only "Thanks." of these.
    "a void tag, then a comment left open": (f"Thanks.\n<source><!--\n{HIDDEN}", []),
    "a void tag, then a comment left open, past a blank line":
        (f"Thanks.\n<source><!--\n{HIDDEN}\n\n{SHOWN}", []),
}

# Lines that are commands, as people write them (each must stay one).
LEGIT: dict[str, tuple[str, list[str]]] = {
    "alone": ("/flipgate run", ["/flipgate run"]),
    "indented three spaces": ("   /flipgate run", ["/flipgate run"]),
    "after text": ("Thanks, now:\n/flipgate run", ["/flipgate run"]),
    "label lines, CRLF": (f"Read them.\r\n{SHOWN}\r\n/flipgate label b partial",
                          [SHOWN, "/flipgate label b partial"]),
    "after a hard break": (f"Thanks  \n{SHOWN}", [SHOWN]),
    "after a quote and a blank line": (f"> their words\n\n{SHOWN}", [SHOWN]),
    "after a fence": (f"```\ncode\n```\n{SHOWN}", [SHOWN]),
    "after an html comment": (f"<!-- note -->\n{SHOWN}", [SHOWN]),
    "after a closed inline comment": (f"x <!-- note -->\n{SHOWN}", [SHOWN]),
    "after closed details": ("<details><summary>log</summary>\n\nx\n\n</details>\n\n"
                             f"{SHOWN}", [SHOWN]),
    "after a list": (f"- one\n- two\n\n{SHOWN}", [SHOWN]),
    "after bold text": (f"**Done**\n{SHOWN}", [SHOWN]),
    "code later in the line": ("/flipgate label q1 grounded `(the refund one)`",
                               ["/flipgate label q1 grounded `(the refund one)`"]),
    "help": ("/flipgate help", ["/flipgate help"]),
    # Shown by GitHub as its writer's words, so obeyed (the sixth red team, issue 35).
    "after </search>": (f"Thanks\n</search>\n{SHOWN}", [SHOWN]),
    "after <!-->": (f"x <!-->\n{SHOWN}", [SHOWN]),
    "after a line of <!-->": (f"<!-->\n{SHOWN}", [SHOWN]),
    "after <!--->": (f"x <!--->\n{SHOWN}", [SHOWN]),
    "after a comment closed by --!>": (f"x <!-- --!>\n{SHOWN}\n-->", [SHOWN]),
    "after <!x, which ends at the next >": (f"Thanks <!x\n{SHOWN}\n-->", [SHOWN]),
    "after <!doctype": (f"Thanks\n<!doctype html>\n{SHOWN}", [SHOWN]),
    "after <noembed>, which GitHub shows as text": (f"x <noembed>\n{SHOWN}", [SHOWN]),
    "after <xmp>, which GitHub shows as text": (f"x <xmp>\n{SHOWN}", [SHOWN]),
    "after <plaintext>, which GitHub shows as text": (f"x <plaintext>\n{SHOWN}", [SHOWN]),
}


def words(lines: list[str]) -> list[list[str]]:
    """Lines compared by their first three words (the shown text has no markup)."""
    return [line.split()[:3] for line in lines]


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hidden_line_is_never_a_command(name: str) -> None:
    body, shown = ATTACKS[name]
    assert words(shown_command_lines(body)) == words(shown), "cmark-gfm renders it otherwise"
    assert command_lines(body) == shown


@pytest.mark.parametrize("name", sorted(LEGIT))
def test_a_shown_line_is_a_command(name: str) -> None:
    body, shown = LEGIT[name]
    assert words(shown_command_lines(body)) == words(shown), "cmark-gfm renders it otherwise"
    assert command_lines(body) == shown


def test_a_comment_of_hidden_commands_is_not_a_command() -> None:
    payload = {"action": "created", "issue": {"number": 7, "pull_request": {"url": "u"}},
               "comment": {"id": 1, "user": {"login": "maintainer"},
                           "created_at": "2024-05-01T12:00:00Z",
                           "body": "\n\n".join(body for body, shown in ATTACKS.values()
                                               if not shown)}}
    assert isinstance(decide("issue_comment", payload), Ignore)


# Lines to build comments from at random: every kind of Markdown and HTML that opens or
# closes something, and commands at every indentation and container.
_PIECES = ["", "", "", "text", "Thanks!", "x <!--", "<!--", "-->", "<!-- note -->", "```",
           "~~~", "`", "x `", "``", "<pre>", "</pre>", "<blockquote>", "</blockquote>",
           "<details>", "</details>", "<div title='", "'>", "<b>", "</b>", "*", "**a", "_b",
           "---", "===", "| a | b |", "|---|---|", "- item", "1. step", "> quote", "> > deep",
           "    code", "\tcode", "[^1]: note", "[r]: https://example.com", '"', "[x", "](y)",
           "<?x", "?>", "<![CDATA[", "]]>", "# heading", "x  ", "x\\", "<http://a.b>", "<br>",
           "<p>", "</p>", "- > q", "  - sub", "2. two", "-", "+ plus", "<span>", "</span>",
           "x <b>", "<a title='", "```js", "> ```", "<!-->", "<!--->", "--!>", "</ x", "~~x",
           "<textarea>", "</textarea>", "&#10;", "x <details>", "<x-y>", "   > q", "***"]
_PREFIXES = ["", "", "", " ", "   ", "    ", "\t", "> ", "- ", "1. ", ">", "  ", "- > ",
             "text ", "` "]


def random_comment(rng: random.Random, size: int) -> str:
    lines = []
    for n in range(size):
        if rng.random() < 0.35:
            lines.append(f"{rng.choice(_PREFIXES)}/flipgate label c{n} grounded")
        else:
            lines.append(rng.choice(_PIECES))
    return "\n".join(lines)


def expected(body: str) -> list[list[str]]:
    """What cmark-gfm shows, of the lines flipgate may read at all: written at the start of a
    line, after at most three spaces (the workflow's filter sees no other)."""
    starts = {line.split()[2] for line in body.split("\n")
              if line.lstrip(" ").startswith("/flipgate ") and len(line) - len(line.lstrip(" ")) < 4}
    return [line for line in words(shown_command_lines(body)) if line[2:] and line[2] in starts]


def test_random_comments_read_exactly_what_cmark_gfm_shows() -> None:
    """Never a line cmark-gfm does not show; and every line it shows, but where cmark-gfm
    tries a table only at a paragraph's first delimiter row (flipgate tries each: a table
    there makes it read less, never more)."""
    rng = random.Random(28)
    for _ in range(1500):
        body = random_comment(rng, rng.randint(1, 10))
        read, shown = words(command_lines(body)), expected(body)
        assert all(line in shown for line in read), repr(body)
        if body.count("|---|---|") < 2:
            assert read == shown, repr(body)


def test_a_job_a_hidden_command_starts_does_nothing_visible(harness: Harness) -> None:
    """The workflow's filter cannot parse Markdown, so a hidden command line may start a job;
    flipgate's reader is the authority, and that job sends GitHub nothing: no reaction,
    reply, comment or status."""
    body = ATTACKS["html comment opened mid-line"][0].replace(SHOWN, "thanks")
    workflow = yaml.safe_load(workflow_text(Starter(generator="prompts/answer.prompty")))
    harness.comment_event(body)
    event = {"comment": {"body": body, "author_association": "OWNER"},
             "issue": {"pull_request": {"url": "u"}}}
    assert job_runs(workflow["jobs"]["flipgate"]["if"],
                    {"github": {"event_name": "issue_comment", "event": event}})
    harness.server.requests.clear()
    assert harness.run(None) == 0
    assert harness.server.requests == []
    assert "nothing to do: the comment is not a /flipgate command" in harness.log.getvalue()
