"""Figures in text, normalised so equal facts compare equal.

Every amount, percentage, count, duration, date, time and phone number is
read into a `Figure` whose value is normalised: `$12`, `12 dollars` and
`USD 12` are one figure; `5-7`, `5 to 7` and `five to seven` are one range; `3rd` is `third`;
`30-day` is `30 days`, `two weeks` is `14 days`, `10%` is `10 percent`. A
range never matches a single value (`5-7 days` is not `5 days`).

Hostile text stays cheap: reading is one left-to-right pass over tokens, a
number never spans more than `MAX_NUMBER_WORDS` words, and a digit run longer
than `MAX_FIGURE_DIGITS` is kept as its digit string (a `literal`, compared
as text) instead of being turned into a number. Arithmetic on the numbers
that remain is exact (`_EXACT`), so two different figures never round into
one.

Pure functions only; `evidence.py` builds the statement checks on them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Context, Decimal, localcontext

NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}
# Ordinals in words; "first" and "second" are left out: "at first", "a second" are no figures.
ORDINAL_WORDS: dict[str, int] = {
    word: number for number, word in enumerate((
        "third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
        "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split(),
        start=3)
}
SCALE_WORDS: dict[str, int] = {"hundred": 100, "thousand": 1_000, "million": 1_000_000,
                                "billion": 1_000_000_000}
# Longer digit runs are compared as strings, never converted (a figure that
# long is an identifier or noise, not an amount anyone reads as one).
MAX_FIGURE_DIGITS = 30
# "one hundred and twenty-five thousand three hundred" is 9 words.
MAX_NUMBER_WORDS = 12
# Precise enough for MAX_FIGURE_DIGITS digits times any scale or unit factor.
_EXACT = Context(prec=MAX_FIGURE_DIGITS + 40)


# --- figures ------------------------------------------------------------------

_MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate((
        ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
        ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
        ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
        ("december", "dec")), start=1)
    for name in names
}
_CURRENCY_SYMBOLS = {"$": "usd", "us$": "usd", "€": "eur", "£": "gbp"}
_CURRENCY_WORDS = {"usd": "usd", "dollar": "usd", "dollars": "usd", "bucks": "usd",
                   "eur": "eur", "euro": "eur", "euros": "eur",
                   "gbp": "gbp", "pound": "gbp", "pounds": "gbp"}
_CENT_WORDS = {"cent", "cents"}
# Durations fold onto one unit per family, so `two weeks` is `14 days`.
_DURATIONS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("second", "seconds", "sec", "secs"), ("second", 1)),
    **dict.fromkeys(("minute", "minutes", "min", "mins"), ("minute", 1)),
    **dict.fromkeys(("hour", "hours", "hr", "hrs"), ("hour", 1)),
    **dict.fromkeys(("day", "days"), ("day", 1)),
    **dict.fromkeys(("week", "weeks"), ("day", 7)),
    **dict.fromkeys(("month", "months"), ("month", 1)),
    **dict.fromkeys(("year", "years", "yr", "yrs"), ("month", 12)),
}
_DURATION_FAMILIES = frozenset(family for family, _ in _DURATIONS.values())
_DAY_QUALIFIERS = {"business", "calendar", "working", "banking"}
_CURRENCY_CODES = ("usd", "eur", "gbp")
_RANGE_WORDS = {"to", "through", "thru"}
# "1 or 2 tablets" is the range 1-2 as well as each of its ends.
_ALTERNATIVE = "or"
# Words after a number that are not what it counts.
_NOT_NOUNS = frozenset("""
a an and or to the of in on at for with by from per each every than as is are was were be
over under above below up down more less about around after before until through thru
""".split())
# "an hour" is a figure after these words ("within an hour", "takes an hour"), not in
# "$10 an hour" or "3 tablets a day", where it is a rate.
_ONE_UNIT_AFTER = frozenset("""
in within for about around after than over under takes take took lasts last lasted least
most nearly almost only just roughly approximately
""".split())

_TOKEN = re.compile(
    r"""
    (?P<phone>(?<![\d-])(?:\+?1[-.\s])?\(?\d{3}\)?[-.\s]\d{3}[-.\s]\d{4}(?![\d-]))
  | (?P<always>\b24/7\b)
  | (?P<iso>\b\d{4}-\d{2}-\d{2}\b)
  | (?P<slash>\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b)
  | (?P<time>\b\d{1,2}(?::\d{2})?\s?(?:[ap]\.m\.|[ap]m\b)|\b\d{1,2}:\d{2}\b)
  | (?P<ordinal>\b\d+(?:st|nd|rd|th)\b)
  | (?P<number>(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:k\b)?)
  | (?P<currency>US\$|[$\u20ac\u00a3])
  | (?P<percent>%)
  | (?P<dash>[-\u2013\u2014])
  | (?P<word>[A-Za-z]+)
  | (?P<punct>[^\s\w])
    """,
    re.VERBOSE | re.IGNORECASE,
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Figure:
    """One figure as written, with a normalised meaning to compare by.

    `unit` is a currency code (`usd`), `percent`, a duration family (`day`,
    `month`, ...), `count` for a bare number, `ordinal`, `date`, `time` or
    `literal` (phone numbers, `24/7`). `value` is `(low, high)` for numbers
    (high is None for a single value), `(year, month, day)` for dates,
    `(hour, minute)` for times and `(text,)` for literals.
    """

    text: str
    unit: str
    value: tuple[object, ...]
    from_to: bool = False  # written "from X to Y" (or "X or Y"): its ends are facts too
    span: tuple[int, int] = field(default=(0, 0), compare=False)  # where in its text
    # The number as written before its unit's factor (`12` of "12 years"), and the word a
    # count counts ("tablet" of "6 tablets"): a person reads "children 12 and over" as
    # "12 years and over", and never "2 tablets" as "200 mg".
    written: Decimal | None = field(default=None, compare=False)
    noun: str | None = field(default=None, compare=False)


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "punct"
        tokens.append(_Token(kind, match.group(), match.start(), match.end()))
    return tokens


def _digit_string(text: str) -> str:
    """A digit run as the string it is compared by: no separators, no leading zeros."""
    digits = text.replace(",", "").lower()
    return digits.lstrip("0") or "0"


def _too_long(text: str) -> bool:
    return len(text) > MAX_FIGURE_DIGITS


def _decimal(text: str) -> Decimal:
    """A digits token as a number: `1,500` -> 1500, `1.5k` -> 1500, `12.00` -> 12."""
    text = text.replace(",", "")
    multiplier = 1
    if text[-1:] in "kK":
        text, multiplier = text[:-1], 1000
    return (Decimal(text) * multiplier).normalize()


def _read_number(tokens: Sequence[_Token], i: int) -> tuple[Decimal, int, bool] | None:
    """A number starting at token i: (value, index after it, written in words)."""
    if i >= len(tokens):
        return None
    token = tokens[i]
    if token.kind == "number":
        if _too_long(token.text):
            return None  # read whole as a literal by `_special_figure`
        value, j = _decimal(token.text), i + 1
        if j < len(tokens) and tokens[j].lower in SCALE_WORDS:
            value, j = (value * SCALE_WORDS[tokens[j].lower]).normalize(), j + 1
        return value, j, False
    if token.kind != "word" or token.lower not in NUMBER_WORDS:
        return None
    words, j = _read_number_words(tokens, i)
    return Decimal(words), j, True


def _read_number_words(tokens: Sequence[_Token], i: int) -> tuple[int, int]:
    """`seven`, `twenty-five`, `one hundred and fifty`, `two thousand`: (value, index after)."""
    total = current = 0
    last = ""  # what was read last: ones, teens, tens, hundred, scale
    j = i
    while j < len(tokens) and j - i < MAX_NUMBER_WORDS:
        word = tokens[j].lower
        if tokens[j].kind == "dash":
            # "twenty-five": a dash joins a tens word to a ones word, nothing else.
            if last == "tens" and j + 1 < len(tokens) and 1 <= NUMBER_WORDS.get(tokens[j + 1].lower, 0) <= 9:
                j += 1
                continue
            break
        if tokens[j].kind != "word":
            break
        if word in NUMBER_WORDS:
            small = NUMBER_WORDS[word]
            if last in ("ones", "teens") or (last == "tens" and not 1 <= small <= 9):
                break
            current += small
            last = "tens" if small >= 20 else "ones" if small < 10 else "teens"
        elif word == "hundred" and last in ("ones", "teens", "tens") and current < 100:
            current *= 100
            last = "hundred"
        elif word in SCALE_WORDS and word != "hundred" and (current or total) and last != "scale":
            total, current = total + current * SCALE_WORDS[word], 0
            last = "scale"
        elif word == "and" and last in ("hundred", "scale") and j + 1 < len(tokens) \
                and tokens[j + 1].lower in NUMBER_WORDS:
            pass
        else:
            break
        j += 1
    return total + current, j


def _read_unit(tokens: Sequence[_Token], i: int) -> tuple[str, Decimal, int] | None:
    """A unit right after a number: (unit, multiplier, index after it)."""
    if i >= len(tokens):
        return None
    token = tokens[i]
    if token.kind == "percent":
        return "percent", Decimal(1), i + 1
    j = i + 1 if token.kind == "dash" else i  # "30-day"
    if j >= len(tokens) or tokens[j].kind != "word":
        return None
    word = tokens[j].lower
    if word in ("percent", "pct"):
        return "percent", Decimal(1), j + 1
    if word == "per" and j + 1 < len(tokens) and tokens[j + 1].lower == "cent":
        return "percent", Decimal(1), j + 2
    if word in _CURRENCY_WORDS and j == i:
        return _CURRENCY_WORDS[word], Decimal(1), j + 1
    if word in _CENT_WORDS and j == i:
        return "usd", Decimal("0.01"), j + 1
    if word in _DAY_QUALIFIERS and j + 1 < len(tokens) and tokens[j + 1].lower in _DURATIONS:
        j += 1
        word = tokens[j].lower
    if word in _DURATIONS:
        family, factor = _DURATIONS[word]
        return family, Decimal(factor), j + 1
    return None


def _month_at(tokens: Sequence[_Token], i: int) -> int | None:
    if i >= len(tokens) or tokens[i].kind != "word":
        return None
    token = tokens[i]
    if token.lower == "may" and token.text != "May":
        return None  # the modal verb, not the month
    return _MONTHS.get(token.lower)


def _day_at(tokens: Sequence[_Token], i: int) -> int | None:
    if i >= len(tokens):
        return None
    token = tokens[i]
    digits = token.text[:-2] if token.kind == "ordinal" else token.text
    # Compared as a string first: int() of an unbounded digit run is never called.
    if token.kind in ("number", "ordinal") and digits.isdigit() and len(digits) <= 2 \
            and 1 <= int(digits) <= 31:
        return int(digits)
    return None


def _year_at(tokens: Sequence[_Token], i: int) -> int | None:
    if i < len(tokens) and tokens[i].kind == "number" and re.fullmatch(r"(19|20)\d\d", tokens[i].text):
        return int(tokens[i].text)
    return None


def _read_date(tokens: Sequence[_Token], i: int) -> tuple[tuple[int | None, int, int | None], int] | None:
    """`March 5`, `Mar. 5th, 2026`, `5 March 2026`, `5th of March`, `March 2026`."""
    month = _month_at(tokens, i)
    if month is not None:
        j = i + 1
        if j < len(tokens) and tokens[j].text == ".":
            j += 1
        day = _day_at(tokens, j)
        if day is not None:
            j += 1
            k = j + 1 if j < len(tokens) and tokens[j].text == "," else j
            year = _year_at(tokens, k)
            return (year, month, day), (k + 1 if year is not None else j)
        if (year := _year_at(tokens, j)) is not None:
            return (year, month, None), j + 1
        return None
    day = _day_at(tokens, i)
    if day is None:
        return None
    j = i + 1
    if j < len(tokens) and tokens[j].lower == "of":
        j += 1
    month = _month_at(tokens, j)
    if month is None:
        return None
    j += 1
    year = _year_at(tokens, j)
    return (year, month, day), (j + 1 if year is not None else j)


def _time_value(text: str) -> tuple[int, int]:
    match = re.match(r"(\d{1,2})(?::(\d{2}))?\s?([ap])?", text.lower())
    assert match is not None
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half == "p" and hour < 12:
        hour += 12
    if half == "a" and hour == 12:
        hour = 0
    return hour, minute


def _special_figure(token: _Token) -> Figure | None:
    """Figures the tokenizer recognised whole: phones, 24/7, numeric dates, times, ordinals."""
    text, span = token.text, (token.start, token.end)
    if token.kind == "phone":
        return Figure(text, "literal", (re.sub(r"\D", "", text)[-10:],), span=span)
    if token.kind == "always":
        return Figure(text, "literal", ("24/7",), span=span)
    if token.kind == "iso":
        year, month, day = (int(part) for part in text.split("-"))
        return Figure(text, "date", (year, month, day), span=span)
    if token.kind == "slash":
        month, day, year = (int(part) for part in text.split("/"))  # US order: month/day/year
        return Figure(text, "date", (year + 2000 if year < 100 else year, month, day), span=span)
    if token.kind == "time":
        return Figure(text, "time", _time_value(text), span=span)
    if token.kind in ("number", "ordinal") and _too_long(text):
        return Figure(text, "literal", (_digit_string(text),), span=span)
    if token.kind == "ordinal":
        return Figure(text, "ordinal", (Decimal(text[:-2]).normalize(), None), span=span)
    if token.kind == "word" and token.lower in ORDINAL_WORDS:
        return Figure(text, "ordinal", (Decimal(ORDINAL_WORDS[token.lower]), None), span=span)
    return None


def extract_figures(text: str) -> list[Figure]:
    """Every figure in `text`, in order, each with its text as written."""
    with localcontext(_EXACT):
        return _extract(text)


def _extract(text: str) -> list[Figure]:
    tokens = _tokenize(text)
    figures: list[Figure] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if (date := _read_date(tokens, i)) is not None:
            (year, month, day), end = date
            span = (token.start, tokens[end - 1].end)
            figures.append(Figure(text[span[0]:span[1]], "date", (year, month, day), span=span))
            i = end
            continue
        if (special := _special_figure(token)) is not None:
            figures.append(special)
            i += 1
            continue
        read = _read_amount(tokens, i)
        if read is None:
            i += 1
            continue
        (unit, value, from_to, written, noun), end = read
        span = (token.start, tokens[end - 1].end)
        figures.append(Figure(text[span[0]:span[1]], unit, value, from_to, span=span,
                              written=written, noun=noun))
        i = end
    return figures


_Amount = tuple[str, tuple[object, ...], bool, Decimal | None, str | None]


def _read_amount(tokens: Sequence[_Token], i: int) -> tuple[_Amount, int] | None:
    """A number, range or amount at token i: ((unit, value, from_to, as written, noun),
    index after it)."""
    currency: str | None = None
    j = i
    between = i > 0 and tokens[i - 1].lower == "between"
    from_to = i > 0 and tokens[i - 1].lower == "from"
    if tokens[j].kind == "word" and tokens[j].lower in ("a", "an") and i > 0 \
            and tokens[i - 1].lower in _ONE_UNIT_AFTER:
        unit = _read_unit(tokens, j + 1)
        if unit is None or unit[0] not in _DURATION_FAMILIES or tokens[j + 1].kind == "dash":
            return None
        return (unit[0], (unit[1], None), False, Decimal(1), None), unit[2]
    if tokens[j].kind == "currency":
        currency, j = _CURRENCY_SYMBOLS[tokens[j].lower], j + 1
    elif tokens[j].kind == "word" and tokens[j].lower in _CURRENCY_CODES:
        currency, j = tokens[j].lower, j + 1
    first = _read_number(tokens, j)
    if first is None:
        return None
    low, j, in_words = first
    unit = _read_unit(tokens, j)
    if unit is not None:
        j = unit[2]
    high: Decimal | None = None
    # A second number after a range word makes a range: 5-7, 5 to 7, between 5 and 7.
    alternative = j < len(tokens) and tokens[j].lower == _ALTERNATIVE
    if j < len(tokens) and (tokens[j].kind == "dash" or tokens[j].lower in _RANGE_WORDS
                            or (between and tokens[j].lower == "and") or alternative):
        k = j + 1
        if k < len(tokens) and (tokens[k].kind == "currency" or tokens[k].lower in _CURRENCY_CODES):
            k += 1
        second = _read_number(tokens, k)
        if second is not None and second[0] > low:
            second_unit = _read_unit(tokens, second[1])
            same_unit = unit is None or second_unit is None or second_unit[:2] == unit[:2]
            if same_unit:
                high, j = second[0], second[1]
                from_to = from_to or alternative
                if second_unit is not None:
                    unit, j = second_unit, second_unit[2]
    if unit is not None and currency is None:
        name, factor = unit[0], unit[1]
    elif currency is not None:
        name, factor = currency, Decimal(1)
    else:
        name, factor = "count", Decimal(1)
    if in_words and low == 1 and high is None and unit is None and currency is None:
        return None  # a lone "one" is a pronoun far more often than a figure
    scaled_high = None if high is None else (high * factor).normalize()
    noun = None
    if name == "count" and j < len(tokens) and tokens[j].kind == "word" \
            and tokens[j].lower not in _NOT_NOUNS and len(tokens[j].text) > 1:
        noun = tokens[j].lower.removesuffix("s") or tokens[j].lower
    return (name, ((low * factor).normalize(), scaled_high), from_to and high is not None,
            low if factor != 1 and high is None else None, noun), j


# --- matching -----------------------------------------------------------------

def expand_known(figures: Iterable[Figure]) -> list[Figure]:
    """What a context's figures vouch for: themselves, plus a date's year and day,
    and both ends of a "from X to Y" change."""
    known: list[Figure] = []
    for figure in figures:
        known.append(figure)
        if figure.unit == "date":
            year, _, day = figure.value
            if isinstance(year, int):
                known.append(Figure(figure.text, "count", (Decimal(year), None)))
            if isinstance(day, int):
                known.append(Figure(figure.text, "ordinal", (Decimal(day), None)))
        elif figure.from_to:
            low, high = figure.value
            known.append(Figure(figure.text, figure.unit, (low, None)))
            known.append(Figure(figure.text, figure.unit, (high, None)))
        if figure.written is not None:  # "12 years" vouches "12" ("children 12 and over")
            known.append(Figure(figure.text, "count", (figure.written, None)))
    return known


_NON_NUMERIC = ("date", "time", "literal")
_HALF_UNSAID = re.compile(r"^[^apAP]*$")


def figure_supported(figure: Figure, known: Sequence[Figure]) -> bool:
    """Is `figure` (from an answer) vouched for by the `known` figures (from a context)?

    Units must agree, except that a bare number matches any numeric figure of
    the same value (`12` is vouched for by `$12`), never the other way round.
    """
    return vouched(figure, KnownFigures.of(known))


@dataclass(frozen=True)
class KnownFigures:
    """What a context's figures vouch for, indexed so that each answer figure is
    checked in constant time (an answer of thousands of figures against a
    context of thousands stays linear)."""

    exact: frozenset[tuple[str, tuple[object, ...]]]  # (unit, value)
    numeric: frozenset[tuple[object, ...]]            # values of amounts, counts, durations
    years: frozenset[Decimal]                          # bare years, to complete a date
    ymd: frozenset[tuple[object, ...]]                 # dates as (year, month, day)
    ym: frozenset[tuple[object, ...]]                  # (year, month) of dates with a year
    md: frozenset[tuple[object, ...]]                  # (month, day) of every date
    months: frozenset[object]
    md_no_year: frozenset[tuple[object, ...]]          # (month, day) of dates without a year
    months_no_year: frozenset[object]

    @classmethod
    def of(cls, figures: Iterable[Figure]) -> KnownFigures:
        expanded = expand_known(figures)
        dates = [f.value for f in expanded if f.unit == "date"]
        return cls(
            exact=frozenset((f.unit, f.value) for f in expanded),
            numeric=frozenset(f.value for f in expanded if f.unit not in _NON_NUMERIC),
            years=frozenset(f.value[0] for f in expanded if f.unit == "count"),  # type: ignore[misc]
            ymd=frozenset(dates),
            ym=frozenset((y, m) for y, m, _ in dates if y is not None),
            md=frozenset((m, d) for _, m, d in dates),
            months=frozenset(m for _, m, _ in dates),
            md_no_year=frozenset((m, d) for y, m, d in dates if y is None),
            months_no_year=frozenset(m for y, m, _ in dates if y is None),
        )

    def has_date(self, year: object, month: object, day: object) -> bool:
        """A known date of that month (and day, and year, when given); a known date
        without a year counts when the context states the year apart."""
        if year is None:
            return month in self.months if day is None else (month, day) in self.md
        year_apart = Decimal(year) in self.years  # type: ignore[arg-type]
        if day is None:
            return (year, month) in self.ym or (year_apart and month in self.months_no_year)
        return (year, month, day) in self.ymd or (year_apart and (month, day) in self.md_no_year)


_AGE = re.compile(r"(\d{1,3})-year$")


def vouched(figure: Figure, known: KnownFigures | Sequence[Figure]) -> bool:
    """Is `figure` vouched for by what is `known` (an index, or figures to index)?"""
    if not isinstance(known, KnownFigures):
        known = KnownFigures.of(known)
    if figure.unit == "date":
        return known.has_date(*figure.value)
    if (figure.unit, figure.value) in known.exact:
        return True
    if figure.unit == "time" and _HALF_UNSAID.search(figure.text):
        # "1:30" in "1:30 to 2 pm" may be either half of the day.
        hour, minute = figure.value
        return isinstance(hour, int) and hour < 12 and ("time", (hour + 12, minute)) in known.exact
    if figure.unit in ("count", "ordinal") and figure.value in known.numeric:
        return True
    age = _AGE.match(figure.text)
    if age and (Decimal(age.group(1)), None) in known.numeric:
        return True  # "a 37-year-old man" where the context says "Jordan, 37,"
    if figure.from_to:  # "from 2% to 3%" is vouched for by both ends
        low, high = figure.value
        return all(vouched(Figure(figure.text, figure.unit, (end, None)), known)
                   for end in (low, high))
    return False


def same_fact(a: Figure, b: Figure) -> bool:
    """Either figure vouches for the other (for completeness checks, where either
    side may be the bare form)."""
    return figure_supported(a, [b]) or figure_supported(b, [a])
