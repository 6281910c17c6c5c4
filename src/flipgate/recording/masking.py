"""What `record` masks in logged traffic before anything is compared, written or printed.

Text is normalised first (`text.parsing.fold`: NFKC, so full-width and compatibility
forms read as their plain letters and NBSP as a space; zero-width and direction-control
characters removed), and the masks
match the normalised text, which is also what the cases file keeps:

- e-mail addresses, with unicode local parts and internationalised domains (in
  unicode or `xn--` form), and percent-encoded ones (`jose%40example.com`,
  decoded up to three times);
- card numbers: 13 to 19 digits with any one of space, `-`, `.`, `/` or `_`
  between them, or glued to letters, kept only when the Luhn check passes, so
  order numbers and other figures stay; a run inside a hexadecimal token (a
  trace or hash id) is an id, not a card;
- every `--mask` pattern.

`dedup_key` is the form records are compared in: normalised, whitespace folded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from flipgate.errors import InputError, Problem
from flipgate.text.parsing import fold

EMAIL_MASK, CARD_MASK, PATTERN_MASK = "[email]", "[card]", "[masked]"

_LOCAL = r"[\w.!#$%&'*+/=?^`{|}~-]+"
_DOMAIN = r"(?:[^\W_](?:[\w-]*[^\W_])?\.)+(?:[^\W\d_]{2,}|xn--[a-z0-9-]+)"
EMAIL = re.compile(rf"(?<![\w.+-]){_LOCAL}@{_DOMAIN}(?![\w-])", re.IGNORECASE)
# 13-19 digits, one separator at most between two of them.
CARD_CANDIDATE = re.compile(r"(?<!\d)\d(?:[ ./_-]?\d){12,18}(?!\d)")
# A run of text that percent-encoding may hide an address or a card number in.
_ENCODED_RUN = re.compile(r"[\w.+@-]*%[0-9A-Fa-f]{2}(?:[\w.+@-]|%[0-9A-Fa-f]{2})*")
_HEX_TOKEN = re.compile(r"[0-9a-f]*[a-f][0-9a-f]*", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def dedup_key(text: str) -> str:
    """The form two records are the same in: normalised, whitespace folded, ends stripped."""
    return _WHITESPACE.sub(" ", fold(text)).strip()


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _token_around(text: str, start: int, end: int) -> str:
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return text[start:end]


def _mask_cards(text: str) -> str:
    def card(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group())
        token = _token_around(text, match.start(), match.end())
        if token != match.group() and _HEX_TOKEN.fullmatch(token):
            return match.group()  # inside a hexadecimal id
        return CARD_MASK if luhn_ok(digits) else match.group()

    return CARD_CANDIDATE.sub(card, text)


def _mask_plain(text: str) -> str:
    return _mask_cards(EMAIL.sub(EMAIL_MASK, text))


def _decoded(run: str) -> str:
    for _ in range(3):
        decoded = unquote(run)
        if decoded == run:
            break
        run = decoded
    return fold(run)


def _mask_encoded(match: re.Match[str]) -> str:
    run = match.group()
    decoded = _decoded(run)
    if EMAIL.search(decoded):
        return EMAIL_MASK
    if _mask_cards(decoded) != decoded:
        return CARD_MASK
    return run


@dataclass(frozen=True)
class Masking:
    """What is dropped and what is masked. E-mails and card numbers are always masked."""

    mask: tuple[re.Pattern[str], ...] = ()
    drop: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_options(cls, mask: Sequence[str] = (), drop: Sequence[str] = ()) -> Masking:
        problems = []
        compiled: dict[str, list[re.Pattern[str]]] = {"mask": [], "drop": []}
        for option, patterns in (("--mask", mask), ("--drop", drop)):
            for pattern in patterns:
                try:
                    compiled[option[2:]].append(re.compile(pattern))
                except re.error as exc:
                    problems.append(Problem(option, None, f"'{pattern}' is not a regular expression: {exc}"))
        if problems:
            raise InputError(problems)
        return cls(mask=tuple(compiled["mask"]), drop=tuple(compiled["drop"]))

    def drops(self, *texts: str) -> bool:
        return any(p.search(fold(text)) for p in self.drop for text in texts)

    def apply(self, text: str) -> str:
        text = _mask_plain(fold(text))
        text = _ENCODED_RUN.sub(_mask_encoded, text)
        for pattern in self.mask:
            text = pattern.sub(PATTERN_MASK, text)
        return text
