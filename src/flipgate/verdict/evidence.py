"""Deterministic evidence: which figures and statements of an answer its context lacks.

Pure functions only. Three checks, all lexical:

* **Figures.** Every amount, percentage, count, duration, date, time and
  phone number in the answer must also be in the context, compared after
  `figures.py` normalises them (`$12` = `12 dollars`, `5-7` = `five to
  seven`; a range never matches a single value).
* **Statements.** The answer is split into statements; a statement is
  supported when at least two thirds of its content words (stopwords
  removed, stemmed, a few synonyms folded together) occur in the context.
  Two thirds lets a faithful paraphrase swap one word in three while a
  statement that brings in two new words out of four or five is flagged;
  precision matters more than recall here, because a faithful answer
  called ungrounded would block a release for nothing.
* **Predicates.** In "X is (a) Y" the claim is Y: when the context never uses
  one of Y's words ("Jane Doe is a playwright", "a health magazine"; adverbs
  and passive verbs aside), the statement is unsupported whatever X's words are.
* **Names.** A capitalised word the context and question never use (one
  that does not open a sentence, or a run that does: "Neil Gaiman") makes
  its statement unsupported, however many of its other words are there.

Deflections ("please contact support", "it depends"), questions back to
the user, statements about the context itself ("is not explicitly
stated"), lead-ins and headings, and polite filler are not claims: an
answer made only of those is a non-answer. A deflection still counts as a
claim when it carries a figure or when the context itself gives that very
instruction. Framing ("Based on the provided passages") and courtesy are
not read as words, and passage and citation numbers ("(Passage 3)", "[2]")
not as figures.

The offline judge (`judges/offline.py`) and the evidence shown for every
flipped row are both built on `analyse`.

Answers are untrusted (the PR chooses the prompt and `max_tokens`), so the
work is bounded: every step is one linear pass, and only the first
`EVIDENCE_LIMIT` characters of an answer are read; a longer answer's
analysis says where it was cut (`cut_note`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from flipgate.model import Evidence, Statement, StatementLabel
from flipgate.verdict.figures import NUMBER_WORDS, SCALE_WORDS, Figure, KnownFigures, extract_figures, vouched

# A statement is supported when at least this share of its content words
# occurs in the context (see the module docstring for why two thirds).
SUPPORT_THRESHOLD = 2 / 3
# Analysis of one answer stops after this many characters (a long answer
# is a few thousand); the rest is not read, and the row says so.
EVIDENCE_LIMIT = 20_000
# A cut moves back to a space at most this far, so a word or figure is not halved.
_CUT_SLACK = 200


def cut_text(text: str, limit: int = EVIDENCE_LIMIT) -> tuple[str, int | None]:
    """`text` as far as analysis reads it, and where it was cut (None: read whole)."""
    if len(text) <= limit:
        return text, None
    space = text.rfind(" ", limit - _CUT_SLACK, limit)
    at = space if space > 0 else limit
    return text[:at], at


def cut_note(at: int) -> str:
    return f"evidence cut at {at:,} characters"


# --- words --------------------------------------------------------------------

_STOPWORDS = frozenset("""
a about above after again against all also am an and any anything are around as at
be because been before being below between both but by can cannot could did do does
doing done down during each either else etc even ever every for from further get gets
getting got had has have having he her here hers him his how however i if in into is it
its itself just let lets like made make makes may me might mine more most much must my
need needs of off on onto only or other our ours out over own per please really same
shall she should since so some such than that the their theirs them then there these
they this those through thus to too under until up upon us very via want was we were
what whatever when where whether which while who whom whose why will with within would
yet you your yours yourself
no not never none nor without
once twice
thanks thank sorry hello hi happy glad hope sure certainly absolutely great welcome
question questions know hear feel note kindly ok okay yes yeah
use uses used using go goes going someone anyone something anything anybody somebody least
happen happens happened
""".split())

# Figures are checked as figures; their unit words are not content words.
_UNIT_WORDS = frozenset("""
dollar dollars usd buck bucks cent cents euro euros eur pound pounds gbp percent pct
second seconds minute minutes min mins hour hours hr hrs day days week weeks month months
year years yr yrs
""".split())

# Groups of words a paraphrase commonly swaps; each folds onto its first word.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("fee", "charge", "cost", "price", "pricing"),
    ("free", "waive", "complimentary"),
    ("abroad", "overseas", "foreign", "international", "internationally"),
    ("contact", "call", "phone", "reach"),
    ("deliver", "delivery", "arrive", "ship", "shipping", "mail"),
    ("expedite", "rush", "express", "faster", "quicker"),
    ("limit", "cap", "maximum", "max", "exceed"),
    ("notify", "notice", "notification", "tell", "inform", "alert"),
    ("dispute", "contest", "challenge"),
    ("refund", "reimburse", "reimbursement"),
    ("purchase", "buy"),
    ("immediately", "promptly", "instantly"),
    ("block", "lock", "freeze", "frozen"),
    ("stolen", "stole", "steal", "theft"),
    ("yearly", "annual", "annually"),
    ("cardholder", "cardmember", "member"),
    ("customer", "client"),
    ("start", "begin", "effective"),
    ("lower", "reduce", "decrease", "drop", "cut"),
    ("raise", "increase"),
)

# Multi-word paraphrases folded before tokenising (content words only; figures
# and the statements shown to people keep the text as written).
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement) for pattern, replacement in (
        (r"\b(?:at\s+)?no\s+(?:additional\s+|extra\s+)?(?:charge|cost|fee)s?\b", " free "),
        (r"\bfree\s+of\s+charge\b", " free "),
        (r"\bwithout\s+(?:any\s+|a\s+)?(?:charge|fee|cost)s?\b", " free "),
        (r"\bcosts?\s+nothing\b", " free "),
        (r"\bup\s+to\b(?!\s+date)|\bat\s+most\b|\bno\s+more\s+than\b", " limit "),
        (r"\b(?:per|a|each|every)\s+(calendar\s+)?year\b", r" \1 yearly "),
        (r"\b(?:per|a|each|every)\s+(calendar\s+)?month\b", r" \1 monthly "),
        (r"\b(?:per|a|each|every)\s+(business\s+)?day\b", r" \1 daily "),
        (r"\bright\s+away\b|\bstraight\s+away\b|\bas\s+soon\s+as\s+possible\b", " immediately "),
        (r"\breach(?:ing)?\s+out\b|\bget(?:ting)?\s+in\s+touch\b", " contact "),
        (r"\boutside\s+(?:of\s+)?(?:the\s+)?(?:united\s+states|u\.s\.|us|country)\b", " abroad "),
        (r"\bin\s+(?:other|another|foreign)\s+countr(?:y|ies)\b", " abroad "),
        (r"\bup\s+to\s+date\b", " current "),
    )
)

# Polite phrases that carry no claim; removed before content words are counted.
_COURTESY = re.compile(
    r"\b(?:thanks?(?:\s+you)?\s+for\s+(?:reaching\s+out|contacting\s+us|asking|"
    r"your\s+(?:question|message|patience))|happy\s+to\s+help|glad\s+to\s+help|"
    r"(?:i\s+)?hope\s+this\s+helps|let\s+(?:me|us)\s+know\s+if\b[^.;!?\n]*|feel\s+free\s+to\s+ask\b[^.;!?\n]*|"
    r"great\s+question|good\s+question|i'?m\s+sorry\s+to\s+hear\s+that|"
    r"(?:is\s+there\s+)?anything\s+else\b[^.;!?\n]*)"
)
# Where an answer says it takes its words from: framing, not a claim ("Based on the
# provided passages, ...", "According to passage 2, ...", "Sure, I can help with that").
_SOURCE = (r"(?:the\s+|this\s+|these\s+|given\s+|provided\s+|above\s+|available\s+|retrieved\s+)*"
           r"(?:context|passages?|information|text|documents?|sources?|excerpts?|search\s+results?"
           r"|data|knowledge|faq)(?:\s+(?:provided|given|above))?(?:\s*#?\d+)?")
_FRAMING = re.compile(
    r"\b(?:(?:based\s+(?:on|upon)|according\s+to|as\s+(?:stated|mentioned|described)\s+in|"
    r"from|in)\s+" + _SOURCE + r"|(?:sure|certainly|of\s+course|absolutely)\b[,!.]?\s*"
    r"(?:i\s+can|i'?d\s+be\s+(?:happy|glad)\s+to)\s+help(?:\s+(?:you\s+)?with\s+that)?|"
    r"i\s+can\s+help(?:\s+(?:you\s+)?with\s+that)?|here\s+(?:is|are)|here's)\b")
_FRAMING_ANY_CASE = re.compile(_FRAMING.pattern, re.IGNORECASE)  # for names, read as written
# A heading or a label that opens a statement ("## Delivery Times", "**Key Points:**",
# "Standard Delivery: 5 days"): its capitals are a style, not names.
_LABEL = re.compile(r"^\s*(?:#{1,6}\s[^\n]*|(?:\*\*|__)[^*_\n]{1,80}(?:\*\*|__)\s*:?"
                    r"|[^\W\d_][^:\n.!?]{0,40}:(?=\s|$))")
# A statement about the context itself, not about the world: "X is not explicitly stated".
_ABOUT_CONTEXT = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+|specifically\s+|clearly\s+)?"
    r"(?:stated|mentioned|specified|provided|given|listed|included|addressed|discussed|available)"
    r"|(?:does|do|did)\s*(?:not|n't)\s+(?:explicitly\s+|directly\s+|specifically\s+)?"
    r"(?:say|state|mention|specify|provide|contain|include|give|list|address|discuss|indicate)"
    r"|(?:there\s+is|there's)\s+no\s+(?:mention|information|indication|data|details?)"
    r"|no\s+(?:information|mention|details?)\s+(?:is|are|was)\s+(?:given|provided|available))\b")
# Passage and citation numbers are references, not figures: "(Passage 3)", "[2]".
_REFERENCES = re.compile(
    r"\b(?:passages?|documents?|docs?|sources?|references?|refs?|excerpts?)\s*#?\d+"
    r"(?:\s*(?:,|and|&|-)\s*\d+)*|\[\d+(?:\s*,\s*\d+)*\]", re.IGNORECASE)


_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ational", "ate"), ("ation", ""), ("ment", ""), ("ness", ""), ("ingly", ""), ("ing", ""),
    ("edly", ""), ("ed", ""), ("ly", ""), ("al", ""),
)
# "ly" and "al" only come off longer words: "apply" must not become "app".
_SHORT_STEM_MIN = {"ly": 4, "al": 4}


def stem(word: str) -> str:
    """A small suffix stripper: being the same on both sides matters more than linguistics."""
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for _ in range(2):  # "applying" -> "apply" -> "app", like "applies" and "applied"
        for suffix, replacement in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= _SHORT_STEM_MIN.get(suffix, 3):
                word = word[: len(word) - len(suffix)] + replacement
                break
        else:
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeious":
        word = word[:-1]  # stopped -> stop, cancelled -> cancel
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if word.endswith("at") and len(word) > 5:
        word = word[:-2]  # activate, activated, activation -> activ
    return word


_STOP_STEMS = frozenset(stem(word) for word in _STOPWORDS)
_SYNONYMS: dict[str, str] = {
    stem(word): stem(group[0]) for group in _SYNONYM_GROUPS for word in group
}
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def content_words(text: str) -> frozenset[str]:
    """The normalised content words of `text`: no stopwords, numbers or units; stemmed."""
    lowered = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    lowered = _FRAMING.sub(" ", _COURTESY.sub(" ", lowered))
    for pattern, replacement in _PHRASES:
        lowered = pattern.sub(replacement, lowered)
    words: set[str] = set()
    for token in _WORD.findall(lowered):
        if "'" in token:
            if token.endswith("n't"):
                continue  # negations are stopwords
            token = token.split("'", 1)[0]
        if (token in _STOPWORDS or token in _UNIT_WORDS or token in NUMBER_WORDS
                or token in SCALE_WORDS or len(token) < 2):
            continue
        stemmed = stem(token)
        if stemmed in _STOP_STEMS:
            continue
        words.add(_SYNONYMS.get(stemmed, stemmed))
    return frozenset(words)


def coverage(words: Iterable[str], known: frozenset[str]) -> float:
    """Share of `words` found in `known`; 1.0 when there is nothing to find."""
    wanted = set(words)
    if not wanted:
        return 1.0
    return len(wanted & known) / len(wanted)


# --- statements ---------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    "e.g. i.e. etc. a.m. p.m. u.s. u.k. vs. approx. no. mr. mrs. ms. dr. st. inc. ltd. "
    "jan. feb. mar. apr. jun. jul. aug. sep. sept. oct. nov. dec. min. max. est.".split()
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")
# A sentence ends after . ! or ? (and any closing quote or bracket) before a space.
# Passages joined without a space ("...in the 19th century.First for Women is ...") split
# where a full stop after a lower-case word meets a capitalised one.
_BOUNDARY = re.compile(r"(?<=[.!?])(?P<closing>[\"'\u201d)\]]*)\s+|;\s*|(?<=[a-z]{2}\.)(?=[A-Z][a-z])")


_CLOSING = "\"'\u201d)]"
# How much of a sentence's end is read to find its last word: an abbreviation
# is short, so a sentence's length never adds to the cost (one pass in all).
_LAST_WORD_WINDOW = 64


def _ends_with_abbreviation(line: str, start: int, end: int) -> bool:
    """Does `line[start:end]` end with an abbreviation (`e.g.`, `(U.S.`)? "No." is one only
    before a number ("No. 5"); "No. All plans are monthly" is an answer and a sentence."""
    tail = line[max(start, end - _LAST_WORD_WINDOW):end].rstrip(_CLOSING)
    words = tail.split()
    if not words:
        return False
    last = words[-1].lower().lstrip("(\"'")
    if last == "no.":
        return line[end:].lstrip()[:1].isdigit()
    return last in _ABBREVIATIONS


def split_statements(text: str, *, semicolons: bool = True) -> list[str]:
    """Split an answer into statements as written: by line, sentence and (unless
    `semicolons` is false) semicolon.

    Abbreviations (`e.g.`, `a.m.`, `U.S.`) and decimals (`$1.50`) do not end a
    sentence; bullet markers are dropped.
    """
    statements: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        start = 0
        for boundary in _BOUNDARY.finditer(line):
            at_semicolon = boundary.group().startswith(";")
            end = boundary.start() + len(boundary.group("closing") or "")
            if (at_semicolon and not semicolons) or (
                    not at_semicolon and _ends_with_abbreviation(line, start, end)):
                continue
            piece = line[start:end].strip()
            if piece:
                statements.append(piece)
            start = boundary.end()
        tail = line[start:].strip()
        if tail:
            statements.append(tail)
    return statements


# --- names --------------------------------------------------------------------

_NAME_TOKEN = re.compile(r"[^\W\d_][\w'\u2019-]*")
# What may stand between a sentence's start and its first word: quotes, brackets, markup.
_OPENING = re.compile(r"(?:^|[.!?:;\n])[\s\"'\u201c\u2018(\[*#>_-]*$")
_OPENING_WINDOW = 16  # how far back a sentence's opening is sought: the reading stays linear


def _fold(word: str) -> str:
    """A word as names compare: lower case, no accents, no possessive."""
    decomposed = unicodedata.normalize("NFKD", word.replace("\u2019", "'"))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return plain.removesuffix("'s").strip("'-")


# "U.N.", "U.S.": an abbreviation written with dots, read as the word without them.
_DOTTED = re.compile(r"\b(?:[A-Za-z]\.){2,}")
# A run of capitalised words ("United Nations", "Bank of England"): its initials name it too.
_CAPITAL_RUN = re.compile(r"\b[A-Z][\w'\u2019-]*(?:\s+(?:of\s+(?:the\s+)?)?[A-Z][\w'\u2019-]*)+")
# Two spellings of one name share a stem this long ("America", "American"; "Sundays").
_NAME_STEM = 5


def _initials(run: str) -> str:
    return "".join(word[0] for word in run.split() if word[0].isupper()).lower()


# Marks in a name vocabulary: the initials of a run of capitalised words, and an acronym
# (written in capitals or with dots). A run matches an acronym and an acronym a run, never
# a plain word: "Lionel Messi" is not known for a context's "lm".
_RUN, _ACRONYM = "#", "@"


def name_vocabulary(text: str) -> frozenset[str]:
    """Every word of `text` as names compare, hyphenated words also in their parts, dotted
    abbreviations without their dots ("U.N." -> "un"), and, marked, the initials of each run
    of capitalised words ("United Nations") and each acronym ("UN", "U.N.")."""
    words: set[str] = set()
    for match in _NAME_TOKEN.finditer(text):
        word = match.group()
        folded = _fold(word)
        words.add(folded)
        words.update(part for part in folded.split("-") if part)
        if len(word) >= 2 and word.isupper():
            words.add(_ACRONYM + folded)
    for match in _DOTTED.finditer(text):
        plain = match.group().replace(".", "").lower()
        words.update((plain, _ACRONYM + plain))
    words.update(_RUN + _initials(match.group()) for match in _CAPITAL_RUN.finditer(text))
    return frozenset(words)


def _same_name(folded: str, vocabulary: frozenset[str]) -> bool:
    """One name written another way: a known name with an ending added or dropped
    ("Sundays" for "Sunday", "American" for "America")."""
    if len(folded) < _NAME_STEM:
        return False
    return any(abs(len(word) - len(folded)) <= 2 and len(word) >= _NAME_STEM
               and (word.startswith(folded) or folded.startswith(word)) for word in vocabulary)


def names(text: str) -> list[str]:
    """The capitalised words of `text` that name something: those that do not open a
    sentence, and one that opens it when a capitalised word follows ("Neil Gaiman");
    stopwords and single letters are never names."""
    tokens = list(_NAME_TOKEN.finditer(text))
    found = []
    for index, match in enumerate(tokens):
        word = match.group()
        folded = _fold(word)
        if not word[0].isupper() or len(word) < 2 or folded in _STOPWORDS \
                or folded.startswith("i'"):  # "I'm", "I'll": the writer, not a name
            continue
        if _OPENING.search(text, max(0, match.start() - _OPENING_WINDOW), match.start()) is not None:
            after = tokens[index + 1] if index + 1 < len(tokens) else None
            if after is None or not after.group()[0].isupper() \
                    or text[match.end():after.start()].strip():
                continue
        found.append(word)
    return found


def unknown_names(text: str, vocabulary: frozenset[str]) -> tuple[str, ...]:
    """The names in `text` that `vocabulary` (a context's and query's words) never uses.
    A run of capitalised words whose initials the context uses ("United States" for "U.S.")
    or that it writes as one word ("Super Bowl" for "Superbowl") is known; so is a hyphenated
    word whose capitalised parts are ("Prize-winning")."""
    runs = [match.group() for match in _CAPITAL_RUN.finditer(text)]
    initialled = {word for run in runs
                  if _ACRONYM + _initials(run) in vocabulary
                  or "".join(_fold(word) for word in run.split()) in vocabulary  # "Super Bowl"
                  for word in run.split()}

    def known(word: str) -> bool:
        folded = _fold(word)
        parts = [_fold(part) for part in word.split("-") if part[:1].isupper()]
        return (folded in vocabulary or word in initialled or _same_name(folded, vocabulary)
                or word.isupper() and _RUN + folded in vocabulary
                or bool(parts) and all(part in vocabulary for part in parts))
    return tuple(dict.fromkeys(word for word in names(text) if not known(word)))


# --- predicates ---------------------------------------------------------------

# "X is (a) Y": up to four words after the verb, ending where a preposition, a
# relative word or punctuation starts: what X is said to be ("a health magazine").
# A passive verb ("was founded by") is an action, not what X is: coverage reads it.
_PREDICATE = re.compile(
    r"\b(?:is|are|was|were)\s+(?:(?:also|not|both|all)\s+)*(?:(?:a|an|the)\s+)?"
    r"((?:[\w-]+\s+){0,3}?[\w-]+)(?=\s*(?:$|[.,;:!?\"\u201d)])|\s(?:of|in|for|from|with|who|that"
    r"|which|and|or|by|at|on|to|while|but|than|whose|where|when)\b)", re.IGNORECASE)


def unknown_predicates(statement: str, known_words: frozenset[str]) -> tuple[str, ...]:
    """The words of the statement's "is (a) Y" predicates, as written, that `known_words`
    (a context's and query's content words) never use; adverbs aside."""
    found = []
    for match in _PREDICATE.finditer(statement):
        predicate = match.group(1).split()
        if predicate[0].lower().endswith("ed"):
            continue  # a passive verb ("is blocked outside ..."): an action, read by coverage
        if statement[match.end():].lstrip().lower().startswith("than "):
            continue  # a comparison ("is older than B"): the figures decide it, not a word
        for word in predicate:
            if word.lower().endswith("ly"):
                continue  # an adverb ("actually", "widely") says how, not what
            words = content_words(word)
            if words and not words <= known_words:
                found.append(word)
    return tuple(dict.fromkeys(found))


# --- statements, classified ---------------------------------------------------

class Kind(StrEnum):
    CLAIM = "claim"            # something checkable against the context
    DEFLECTION = "deflection"  # sends the user elsewhere, refuses, "it depends"
    QUESTION = "question"      # asks the user something back
    FILLER = "filler"          # politeness with no content


_DEFLECTION = re.compile(
    r"""
    \b(?:contact|call|reach\s+out\s+to|get\s+in\s+touch\s+with|speak\s+(?:to|with)|talk\s+to
       |visit|email|message|ask)\b[^.;]{0,40}?
       \b(?:support|customer\s+(?:service|care)|team|representative|agent|banker|branch
          |us|specialist|advisor|adviser|bank|help\s*desk)\b
  | \bit\s+(?:all\s+|really\s+)?depends\b | \bdepends?\s+on\b | \bvar(?:y|ies)\s+(?:by|depending|based)\b
  | \b(?:i|we)\s*(?:'m|\s+am|'re|\s+are)?\s*(?:cannot|can't|can\s+not|unable|not\s+able
       |not\s+sure|won't\s+be\s+able|don't\s+have|do\s+not\s+have)\b
  | \bunable\s+to\s+(?:help|assist|provide|answer|share|confirm)\b
  | \b(?:check|refer\s+to|see|consult|review)\s+(?:our|the|your)\s+(?:website|app
       |terms|cardholder\s+agreement|account\s+agreement|fee\s+schedule|documentation)\b
  | \bfor\s+(?:more|further|specific|the\s+latest|up-to-date)\s+(?:details|information|info)\b
    """,
    re.VERBOSE | re.IGNORECASE,
)


def is_deflection(statement: str) -> bool:
    """Does the statement send the user elsewhere, refuse, or hedge ("it depends")?"""
    return _DEFLECTION.search(statement.replace("\u2019", "'")) is not None


@dataclass(frozen=True)
class StatementCheck:
    text: str                  # as written in the answer
    kind: Kind
    words: frozenset[str]      # its content words
    coverage: float            # share of them found in the context (and query)
    figures: tuple[Figure, ...]
    unknown_names: tuple[str, ...] = ()  # names the context and query never mention
    unknown_predicates: tuple[str, ...] = ()  # "is (a) Y" with a Y the context never uses

    @property
    def supported(self) -> bool:
        return self.kind is not Kind.CLAIM or (self.coverage >= SUPPORT_THRESHOLD
                                                and not self.unknown_names
                                                and not self.unknown_predicates)


@dataclass(frozen=True)
class Analysis:
    """An answer read against its context: statements, figures and what is missing."""

    statements: tuple[StatementCheck, ...]
    unsupported_figures: tuple[Figure, ...]
    known_words: frozenset[str]
    text: str = ""              # the answer as far as it was read
    cut_at: int | None = None   # where the answer was cut; None when read whole

    @property
    def notes(self) -> tuple[str, ...]:
        return (cut_note(self.cut_at),) if self.cut_at is not None else ()

    @property
    def claims(self) -> tuple[StatementCheck, ...]:
        return tuple(s for s in self.statements if s.kind is Kind.CLAIM)

    @property
    def unsupported_statements(self) -> tuple[StatementCheck, ...]:
        return tuple(s for s in self.statements if not s.supported)

    @property
    def non_answer(self) -> bool:
        """No checkable claim at all: only deflections, questions back, or filler."""
        return not self.claims

    @property
    def figures(self) -> tuple[Figure, ...]:
        return tuple(f for s in self.statements for f in s.figures)

    @property
    def answer_words(self) -> frozenset[str]:
        return frozenset(w for s in self.claims for w in s.words)

    def evidence(self) -> Evidence:
        return Evidence(
            unsupported_figures=tuple(dict.fromkeys(f.text for f in self.unsupported_figures)),
            unsupported_statements=tuple(dict.fromkeys(s.text for s in self.unsupported_statements)),
            notes=self.notes,
        )


# "Here is a summary of the article in 200 words:", "Sure! Here's the overview": the answer
# introducing itself, with or without a figure; never a claim.
_LEAD_IN = re.compile(r"\W*(?:(?:sure|certainly|okay|ok)\W+)?(?:here\s+(?:is|are)|here's|below\s+is)\b",
                      re.IGNORECASE)


def about_the_context(statement: str) -> bool:
    """Does the statement speak of what the context says or lacks ("is not explicitly
    stated", "the passages do not mention")? Then it is not a claim about the world."""
    return _ABOUT_CONTEXT.search(statement.lower().replace("\u2019", "'")) is not None


def _classify(statement: str, words: frozenset[str], figures: Sequence[Figure],
              context_words: frozenset[str]) -> Kind:
    if statement.rstrip().endswith("?") and not figures:
        return Kind.QUESTION
    if not figures and about_the_context(statement):
        return Kind.DEFLECTION
    if (statement.rstrip(" *_").endswith(":") and (not figures or _LEAD_IN.match(statement))) \
            or (not figures and statement.startswith("#")):
        return Kind.FILLER  # a lead-in or a heading ("Here is what the label says:")
    if is_deflection(statement) and not figures:
        # The context may itself give this instruction ("call us right away"):
        # then it is an answer, not a brush-off.
        return Kind.CLAIM if words and words <= context_words else Kind.DEFLECTION
    if not words and not figures:
        return Kind.FILLER
    return Kind.CLAIM


def _without_figures(statement: str, figures: Iterable[Figure]) -> str:
    """The statement minus its figures: "business" in "2 business days" is checked as
    part of the figure, not again as a word."""
    pieces, start = [], 0
    for figure in figures:  # in order, not overlapping
        pieces.append(statement[start:figure.span[0]])
        start = figure.span[1]
    pieces.append(statement[start:])
    return " ".join(pieces)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


def analyse(context: str, response: str, *, query: str = "") -> Analysis:
    """Read `response` (up to `EVIDENCE_LIMIT` characters) against `context`.
    Echoing the `query` is not inventing."""
    response, cut_at = cut_text(response)
    context_words = content_words(context)
    known_words = context_words | content_words(query)
    vocabulary = name_vocabulary(context) | name_vocabulary(query)
    known_figures = KnownFigures.of(extract_figures(context) + extract_figures(query))
    checks: list[StatementCheck] = []
    unsupported: list[Figure] = []
    for statement in split_statements(response):
        plain = _REFERENCES.sub(_blank, statement)  # same length: figure spans still fit
        figures = tuple(extract_figures(plain))
        words = content_words(_without_figures(statement, figures))
        kind = _classify(statement, words, figures, context_words)
        readable = _LABEL.sub(_blank, _FRAMING_ANY_CASE.sub(_blank, plain))
        checks.append(StatementCheck(statement, kind, words, coverage(words, known_words), figures,
                                     unknown_names(readable, vocabulary),
                                     unknown_predicates(readable, known_words)))
        unsupported.extend(f for f in figures if not vouched(f, known_figures))
    return Analysis(tuple(checks), tuple(unsupported), known_words, text=response, cut_at=cut_at)


def find_unsupported(context: str, response: str, *, query: str = "") -> Evidence:
    """The answer's figures and statements the context does not contain, as written.

    Never raises: if the analysis fails on some text nobody foresaw, the row
    keeps its verdict and its evidence says it is incomplete.
    """
    try:
        return analyse(context, response, query=query).evidence()
    except Exception as exc:  # noqa: BLE001 - one row's evidence must never end the run
        return Evidence(notes=(f"evidence incomplete: the analysis failed "
                               f"({type(exc).__name__})",))


def lexical_statements(context: str, response: str, *, query: str = "",
                       analysis: Analysis | None = None) -> tuple[Statement, ...]:
    """The offline judge's statement list: each statement of the answer, as written,
    labelled by the same checks as its groundedness score, with the context
    sentence that shares the most content words with it as the span of a supported one.
    `analysis`, when given, is `analyse(context, response, query=query)`, already read."""
    if analysis is None:
        analysis = analyse(context, response, query=query)
    bad_figures = set(analysis.unsupported_figures)
    sentences = [(sentence, content_words(sentence)) for sentence in split_statements(context)]

    def supporting(words: frozenset[str]) -> str | None:
        shared, best = max(((len(words & known), sentence) for sentence, known in sentences),
                           default=(0, None), key=lambda pair: pair[0])
        return best if shared else None

    statements = []
    for check in analysis.statements:
        if check.kind is not Kind.CLAIM:
            statements.append(Statement(check.text, StatementLabel.NOT_A_CLAIM))
        elif not check.supported or any(f in bad_figures for f in check.figures):
            statements.append(Statement(check.text, StatementLabel.UNSUPPORTED))
        else:
            statements.append(Statement(check.text, StatementLabel.SUPPORTED,
                                        span=supporting(check.words)))
    return tuple(statements)
