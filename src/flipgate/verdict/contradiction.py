"""Contradictions a lexical reader can see: a claim against the context passage it clashes with.

Pure functions only. Six shapes, each found by words and figures, never
by meaning:

* **Negation.** A context clause negates something ("does not support
  dual-fuel systems", "must not be connected", "never asks for your PIN",
  "no fee for ...", "is not available in ...", "cannot be used abroad").
  Its *predicate* is the first content word after the negation, its
  *topic* the clause's other content words. An answer asserts what the
  context denies when its clauses that neither negate nor hedge carry the
  predicate (or a word of its compatibility group: "works with" for
  "support") and the topic (two of its words, or all when it has fewer,
  one of them a word no affirming context clause uses), unless an
  affirming context clause says the same ("the T500 does not support
  dual-fuel; the T700 supports dual-fuel": model numbers are not words).
  So does a bare "Yes" to a question that names the topic. An answer that
  repeats the negation ("No, it does not support dual-fuel") has a
  negation of its own and is left alone. Clauses that bound rather than
  deny ("not ... until", "cannot ... more than", "after the first"), in
  the context or in the answer, are left to the figure check.
* **Denial of what the context affirms.** The mirror image: an answer
  clause negates a predicate and topic that a plain context clause (no
  negation, bound, exception or other item) affirms, and no context clause
  denies: "Cards cannot be used abroad" against "Cards can be used abroad".
* **Figure.** A figure the context lacks, in a statement whose closest
  context sentence (two shared content words, half of the statement's)
  gives a figure of the same unit that the statement does not: "$40" where
  the context says "$25" (a statement that keeps "$12" and adds "$5" adds
  a figure, left to the figure check). A count must count the same thing
  ("16 tablets" is weighed against "6 tablets", never "200 mg"), and any
  sentence that does may be the one shown, a limit first against a limit.
* **Moved figure.** A figure the context holds, but for another item: the
  statement's closest sentence (closer than every sentence holding the
  figure) says the item is free, or gives it another figure of the unit
  the statement does not keep. A statement that names the other item
  ("after the first", "additional") is left alone.
* **Order.** "A was born first", "A came out before B", "A is older than
  B", where the question asks "A or B" (or the answer names B): the year
  the context gives just after each name's first mention says the other
  order ("A (born 1971)" against "B (born 1908)").
* **Entity.** A capitalised name the context lacks where the closest
  context clause puts another name after the same word: "in Mexico" where
  the context says "in Canada".

Precision matters more than recall: a faithful answer called ungrounded
would block a release for nothing, so each shape asks for shared words
beside the clash, and a clause it cannot read plainly is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from flipgate.text.escaping import quoted
from flipgate.verdict.evidence import Kind, StatementCheck, content_words, split_statements
from flipgate.verdict.figures import Figure, KnownFigures, expand_known, extract_figures, vouched
from flipgate.verdict.structured import is_record_fact

NEGATION, FIGURE, ENTITY, ORDER = "negation", "figure", "entity", "order"
_MONEY = frozenset({"usd", "eur", "gbp"})


@dataclass(frozen=True)
class Clash:
    """One claim of the answer and the context passage it contradicts, both verbatim."""

    claim: str
    passage: str
    how: str     # NEGATION | FIGURE | ENTITY
    detail: str  # what clashes, in words: "the context denies 'support' there"


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})
# Negations in the context that deny what follows them.
_DENIES = re.compile(
    r"\b(?:not|never|no|cannot|neither|nor)\b|n't\b")
# An answer clause with any of these does not affirm plainly: it repeats a
# negation, or speaks of an absence ("free", "without"), and is left alone.
_HEDGES = re.compile(
    r"\b(?:not|never|no|cannot|neither|nor|none|nothing|without|free|waived?|unable|"
    r"incompatible|unsupported|unavailable|prohibited|forbidden|avoid|refuse[sd]?|instead|"
    r"rather|except|unless|only)\b|n't\b")
# A negated clause with one of these bounds a figure or a time rather than denying.
_BOUNDS = re.compile(
    r"\b(?:until|unless|except|before|after|without|only|other\s+than|more\s+than|less\s+than|"
    r"fewer\s+than|longer\s+than|later\s+than|earlier\s+than|over|under|above|below|"
    r"exceed(?:s|ing)?|beyond|than)\b")
# Clauses of a sentence: the parts a "but" or "however" sets against each other.
_CLAUSE = re.compile(r"\b(?:but|however|whereas|although|though|while|yet)\b|[:(),]")
# An answer that only says yes: it affirms what the question asks.
_YES = re.compile(r"^\W*(?:yes|yep|yeah|sure|of\s+course|absolutely|definitely|certainly)\b"
                  r"(?:\W+(?:it|you|they|we|he|she)\s+(?:does|do|can|will|is|are|may))?\W*$")
# A bare yes is short: a longer statement is never read as one (and the pattern stays cheap).
_YES_LONGEST = 40
# Words a compatibility claim swaps for one another: "works with" for "supports".
_PREDICATE_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset().union(*(content_words(word) for word in group.split())) for group in (
        "support supports work works compatible connect connected handle accept install",
        "available offer offered provide provided",
        "cover covered include included",
        "allow allowed permit permitted",
    ))
# Negated and affirming clauses must share this many topic words (or all, when fewer).
TOPIC_WORDS_NEEDED = 2
# A figure or name clash needs this many shared content words with its context sentence.
SHARED_WORDS_NEEDED = 2
_QUOTE_LIMIT = 90


def _clauses(text: str) -> list[str]:
    return [piece.strip() for piece in _CLAUSE.split(text) if piece and piece.strip()]


# What ends a negation's scope: a clause that turns against it ("but", "however", "while").
_TURN = re.compile(r"\b(?:but|however|whereas|although|though|while|yet)\b")


def _affirmed(lowered: str) -> list[str]:
    """An answer sentence's clauses that affirm plainly: neither negated, hedged nor bounded,
    nor in a list a negation runs on over ("they do not offer reservations, outdoor seating,
    or music": the denial covers every item until a "but" turns it)."""
    out, denied, start = [], False, 0
    for cut in [*_CLAUSE.finditer(lowered), None]:
        clause = lowered[start:cut.start() if cut else len(lowered)].strip()
        if clause:
            denied = denied or bool(_DENIES.search(clause))
            if not denied and not _HEDGES.search(clause) and not _BOUNDS.search(clause):
                out.append(clause)
        if cut is not None:
            if _TURN.match(cut.group()):
                denied = False
            start = cut.end()
    return out


def _context_clauses(context: str) -> list[tuple[str, str, str]]:
    """(sentence, clause, the clause lowered) for each clause of the context, read once for
    both negation checks."""
    return [(sentence, clause, clause.lower().translate(_APOSTROPHES))
            for sentence in split_statements(context) for clause in _clauses(sentence)]


def _ordered_words(text: str) -> list[str]:
    """The content words of `text` in the order they stand (one normalisation, as evidence's)."""
    return [word for token in re.findall(r"[a-z][a-z'-]*", text) for word in sorted(content_words(token))]


def _predicates(word: str) -> frozenset[str]:
    return next((group for group in _PREDICATE_GROUPS if word in group), frozenset({word}))


def _denial_in(clause: str) -> tuple[str, frozenset[str]] | None:
    """A clause's negation read as (predicate, topic), or None when it negates nothing
    plainly (no negation, or one that bounds a figure or a time)."""
    cue = _DENIES.search(clause)
    if cue is None or _BOUNDS.search(clause):
        return None
    after = _ordered_words(clause[cue.end():])
    if not after:
        return None
    return after[0], content_words(clause[:cue.start()]) | frozenset(after[1:])


@dataclass(frozen=True)
class _Denial:
    passage: str            # the context sentence, verbatim
    predicate: frozenset[str]
    predicate_text: str
    topic: frozenset[str]     # the clause's other content words
    specific: frozenset[str]  # those no affirming clause of the context uses
    # A record's attribute whose word no affirming clause uses ("No music attributes."):
    # that word alone names it.
    alone: bool = False


def _denials(context_clauses: Sequence[tuple[str, str, str]]
             ) -> tuple[list[_Denial], list[frozenset[str]]]:
    """The context's negated clauses, and the content words of each affirming one."""
    negated: list[tuple[str, str, frozenset[str]]] = []
    affirming: set[str] = set()
    clauses: list[frozenset[str]] = []
    for sentence, clause, lowered in context_clauses:
        if _DENIES.search(lowered) is None:
            clauses.append(content_words(clause))
            affirming.update(clauses[-1])
        elif (read := _denial_in(lowered)) is not None:
            negated.append((sentence, *read))
    out = []
    for sentence, predicate, words in negated:
        topic = words - {predicate}
        out.append(_Denial(sentence, _predicates(predicate), predicate, topic,
                           (topic - affirming) or topic,
                           alone=is_record_fact(sentence) and predicate not in affirming))
    return out, clauses


def _denied(denial: _Denial, words: frozenset[str], *, topic_only: bool = False) -> bool:
    """Do `words` carry the denial's predicate (unless `topic_only`) and enough of its topic?"""
    if not denial.topic or not (topic_only or words & denial.predicate):
        return False
    if denial.alone and not topic_only:
        return True
    # A record's yes/no attribute ("No valet business parking.") is exact and short: its
    # predicate and one word of its topic ("valet parking") name it.
    needed = 1 if is_record_fact(denial.passage) else TOPIC_WORDS_NEEDED
    return bool(words & denial.specific) and len(words & denial.topic) >= min(needed, len(denial.topic))


def _negation_clashes(statements: Sequence[StatementCheck],
                      context_clauses: Sequence[tuple[str, str, str]], query: str) -> list[Clash]:
    denials, affirming = _denials(context_clauses)
    if not denials:
        return []

    def affirmed_elsewhere(denial: _Denial, words: frozenset[str]) -> bool:
        shared = words & denial.topic
        return any(clause & denial.predicate and shared <= clause for clause in affirming)

    query_words = content_words(query)
    clashes = []
    for statement in statements:
        lowered = statement.text.lower().translate(_APOSTROPHES)
        if len(lowered) <= _YES_LONGEST and _YES.match(lowered):
            # A bare yes affirms the question: it clashes when the question names what is denied.
            found = next((d for d in denials if _denied(d, query_words, topic_only=True)), None)
        elif statement.kind is Kind.CLAIM:
            # What the statement affirms plainly: its clauses that neither negate, hedge nor
            # bound ("after the first one" may be exactly what the negation leaves open).
            affirmed = frozenset().union(*(content_words(clause) for clause in _affirmed(lowered)))
            found = next((d for d in denials if _denied(d, affirmed)
                          and not affirmed_elsewhere(d, affirmed)), None)
        else:
            found = None
        if found is not None:
            clashes.append(Clash(statement.text, found.passage, NEGATION,
                                 f"the context denies {found.predicate_text!r} there"))
    return clashes


# A context clause with one of these does not affirm plainly: it excepts or restricts.
_RESTRICTS = re.compile(r"\b(?:without|unless|except|only|instead|rather|if|when)\b")


def _denied_but_affirmed(statements: Sequence[StatementCheck],
                         context_clauses: Sequence[tuple[str, str, str]]) -> list[Clash]:
    """Claims that deny what a context clause affirms plainly ("Cards cannot be used
    abroad" against "Cards can be used abroad"), unless the context denies it too."""
    affirming: list[tuple[str, frozenset[str]]] = []
    denied: list[tuple[frozenset[str], frozenset[str]]] = []
    for sentence, clause, lowered in context_clauses:
        if (read := _denial_in(lowered)) is not None:
            denied.append((_predicates(read[0]), read[1]))
        elif not (_DENIES.search(lowered) or _RESTRICTS.search(lowered)
                  or _BOUNDS.search(lowered) or _OTHER_ITEM.search(lowered)):
            affirming.append((sentence, content_words(clause)))
    clashes = []
    for statement in statements:
        if statement.kind is not Kind.CLAIM:
            continue
        for clause in _clauses(statement.text.lower().translate(_APOSTROPHES)):
            read = _denial_in(clause)
            if read is None or not read[1] or _RESTRICTS.search(clause) \
                    or _OTHER_ITEM.search(clause):
                continue  # a denial under a condition, or of another item, is not plain
            predicate, topic = _predicates(read[0]), read[1]
            needed = min(TOPIC_WORDS_NEEDED, len(topic))
            if any(their_predicate & predicate and len(their_topic & topic) >= needed
                   for their_predicate, their_topic in denied):
                continue
            passage = next((sentence for sentence, words in affirming
                            if words & predicate and len(words & topic) >= needed), None)
            if passage is not None:
                clashes.append(Clash(statement.text, passage, NEGATION,
                                     "it denies what the context affirms"))
                break
    return clashes


_ARTICLES = re.compile(r"\b(?:the|a|an)\b", re.IGNORECASE)


def _capitalised(text: str) -> list[tuple[str, str]]:
    """(the word before, the name) for each capitalised word that does not open a sentence
    and follows its word directly (an article between aside): "Washington, DC" and
    "Washington (CNN)" put no name after "Washington", a comma or a bracket stands between."""
    out, before, after_before = [], ".", 0
    for match in re.finditer(r"[A-Za-z][\w'-]*|[.!?]", text):
        token = match.group()
        if token in ".!?":
            before = "."
            continue
        if token[0].isupper() and before != "." \
                and not _ARTICLES.sub("", text[after_before:match.start()]).strip():
            out.append((before, token))
        if token.lower() not in ("the", "a", "an"):
            before, after_before = token.lower(), match.end()
    return out


def _closest(words: frozenset[str], clauses: Sequence[tuple[str, frozenset[str]]]) -> str | None:
    """The context sentence that says what the statement says, but for the clash: it shares
    `SHARED_WORDS_NEEDED` of the statement's content words and at least half of them."""
    shared, best = max(((len(words & known), clause) for clause, known in clauses),
                       default=(0, None), key=lambda pair: pair[0])
    return best if shared >= max(SHARED_WORDS_NEEDED, len(words) / 2) else None


@dataclass(frozen=True)
class _Sentence:
    text: str
    words: frozenset[str]
    figures: tuple[Figure, ...]


def _holders(sentences: Sequence[_Sentence]) -> dict[tuple[object, ...], list[int]]:
    """Which sentences vouch for which figure: by (unit, value), and by value for counts."""
    index: dict[tuple[object, ...], list[int]] = {}
    for number, sentence in enumerate(sentences):
        for figure in expand_known(sentence.figures):
            for key in ((figure.unit, figure.value), ("number", figure.value)):
                places = index.setdefault(key, [])
                if not places or places[-1] != number:
                    places.append(number)
    return index


def _sentences(context: str, figures: Sequence[Figure]) -> list[_Sentence]:
    """The context's sentences, each with the figures read once from the whole context."""
    out, cursor, next_figure = [], 0, 0
    for sentence in split_statements(context):
        start = context.find(sentence, cursor)
        if start < 0:  # not found as written: read it alone
            out.append(_Sentence(sentence, content_words(sentence),
                                 tuple(extract_figures(sentence))))
            continue
        end = cursor = start + len(sentence)
        while next_figure < len(figures) and figures[next_figure].span[0] < start:
            next_figure += 1
        mine = []
        while next_figure < len(figures) and figures[next_figure].span[1] <= end:
            mine.append(figures[next_figure])
            next_figure += 1
        out.append(_Sentence(sentence, content_words(sentence), tuple(mine)))
    return out


def _figure_and_name_clashes(statements: Sequence[StatementCheck], context: str,
                             query: str) -> list[Clash]:
    context_figures = extract_figures(context)
    sentences = _sentences(context, context_figures)
    pairs = [(sentence.text, sentence.words) for sentence in sentences]
    by_text = {sentence.text: sentence for sentence in sentences}
    holders = _holders(sentences)
    by_noun: dict[str, list[_Sentence]] = {}
    for sentence in sentences:
        for noun in dict.fromkeys(f.noun for f in sentence.figures if f.noun):
            by_noun.setdefault(noun, []).append(sentence)
    known_figures = KnownFigures.of(context_figures + extract_figures(query))
    context_words = content_words(context) | content_words(query)
    clashes = []
    names: dict[str, list[tuple[str, str]]] = {}  # each passage read once
    for statement in statements:
        if statement.kind is not Kind.CLAIM:
            continue
        closest = _closest(statement.words, pairs)
        passage = by_text[closest] if closest is not None else None
        clash = _figure_clash(statement, passage, by_noun, known_figures)
        if clash is None and passage is not None:
            if passage.text not in names:
                names[passage.text] = _capitalised(passage.text)
            clash = (_moved_figure_clash(statement, passage, sentences, holders)
                     or _name_clash(statement, passage.text, names[passage.text], context_words))
        if clash is not None:
            clashes.append(clash)
    return clashes


def _nouns_agree(a: Figure, b: Figure) -> bool:
    """"6 tablets" and "200 mg" count different things; a count without a noun may be either."""
    return a.noun is None or b.noun is None or a.noun == b.noun


# How many sentences that count the same thing are weighed for one figure (a bound on work).
_NOUN_CANDIDATES = 50
_LIMIT = frozenset(content_words("limit"))


def _figure_clash(statement: StatementCheck, closest: _Sentence | None,
                  by_noun: dict[str, list[_Sentence]], known: KnownFigures) -> Clash | None:
    """A figure the context lacks where a sentence gives another of the same unit (and noun):
    the closest sentence, or one that counts the same thing ("16 tablets" against "Do not
    exceed 6 tablets in 24 hours"), a limit weighed first against a limit."""
    best: tuple[int, _Sentence, Figure, Figure] | None = None
    bound = bool(statement.words & _LIMIT)
    for figure in statement.figures:
        if vouched(figure, known):
            continue
        candidates = [closest] if closest is not None else []
        if figure.noun:
            candidates += by_noun.get(figure.noun, [])[:_NOUN_CANDIDATES]
        for sentence in candidates:
            # A figure the statement keeps beside its own is an addition, not a replacement.
            other = next((f for f in sentence.figures if f.unit == figure.unit
                          and _nouns_agree(f, figure) and not vouched(f, statement.figures)),
                         None)
            shared = len(statement.words & sentence.words)
            if other is None or (sentence is not closest and (shared < 1 or other.noun is None)):
                continue
            rank = shared + (2 if bound and sentence.words & _LIMIT else 0)
            if best is None or rank > best[0]:
                best = (rank, sentence, figure, other)
    if best is None:
        return None
    _, sentence, figure, other = best
    return Clash(statement.text, sentence.text, FIGURE,
                 f"it says {figure.text!r} where the context says {other.text!r}")


_FREE = frozenset(content_words("free"))
# A statement with one of these may speak of the other item ("after the first one", "each
# additional card"): it is left alone.
_OTHER_ITEM = re.compile(r"\b(?:later|subsequent|additional|further|next|second|third|other|"
                         r"another|extra|more|beyond|then|thereafter)\b")


def _moved_figure_clash(statement: StatementCheck, passage: _Sentence,
                        sentences: Sequence[_Sentence],
                        holders: dict[tuple[object, ...], list[int]]) -> Clash | None:
    """A figure the context gives for another item: the statement's closest sentence says
    that item is free, or gives it another figure of the unit, while the figure stands in a
    sentence that shares fewer of the statement's words ("The first card costs 5 pounds"
    against "The first card is free. Later cards cost 5 pounds each.")."""
    lowered = statement.text.lower()
    if statement.words & _FREE or _HEDGES.search(lowered) or _BOUNDS.search(lowered) \
            or _OTHER_ITEM.search(lowered):
        return None
    shared = len(statement.words & passage.words)
    for figure in statement.figures:
        if vouched(figure, passage.figures):
            continue
        places = holders.get((figure.unit, figure.value)) or (
            holders.get(("number", figure.value), []) if figure.unit in ("count", "ordinal")
            else [])
        if not places or any(len(statement.words & sentences[at].words) >= shared
                             for at in places):
            continue
        if figure.unit in _MONEY and passage.words & _FREE:
            return Clash(statement.text, passage.text, FIGURE,
                         f"it gives {figure.text!r} for what the context says is free")
        # The passage's own figure kept beside this one: an addition, not a move.
        other = next((f for f in passage.figures if f.unit == figure.unit
                      and _nouns_agree(f, figure) and not vouched(f, statement.figures)), None)
        if other is not None:
            return Clash(statement.text, passage.text, FIGURE,
                         f"it says {figure.text!r} where the context says {other.text!r}")
    return None


def _name_clash(statement: StatementCheck, passage: str, theirs: Sequence[tuple[str, str]],
                context_words: frozenset[str]) -> Clash | None:
    answer_names = {name.lower() for _, name in _capitalised(statement.text)}
    for before, name in _capitalised(statement.text):
        if content_words(name) <= context_words:
            continue
        other = next((their for their_before, their in theirs
                      if their_before == before and their.lower() not in answer_names), None)
        if other is not None:
            return Clash(statement.text, passage, ENTITY,
                         f"it names {name!r} where the context names {other!r}")
    return None


# --- order: which of two came first ----------------------------------------------

_EVENTS = r"(?:born|released|founded|established|formed|published|built|opened|created|launched)"
# "A was born first", "A was released before B", "A is older than B": the claimed order.
_ORDER = re.compile(
    r"^\W*(?P<a>[^,;:]+?)\s+(?:(?:was|were)\s+(?:\w+ly\s+)?" + _EVENTS +
    r"\s+(?:(?P<first>first|earlier)|(?P<later>later|last|second)|(?P<before>before|after)\s+(?P<b1>[^,;:]+?))"
    r"|(?:is|was|are|were)\s+(?:(?P<older>older|younger))(?:\s+than\s+(?P<b2>[^,;:]+?))?)"
    r"\s*(?:[.!]\W*)?$", re.IGNORECASE)
# The two a question weighs: the capitalised runs either side of its last "or".
_RUN = r"(?:[A-Z][\w'.\u2019-]*|\d+|of|de|the|von|van|du|la|and)"
_CHOICE = re.compile(r"(?P<a>[A-Z][\w'.\u2019-]*(?:\s+" + _RUN + r")*)\s*,?\s+or\s+(?:the\s+)?"
                     r"(?P<b>[A-Z][\w'.\u2019-]*(?:\s+" + _RUN + r")*)")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
# The year that dates a name is found this close after its first mention.
_YEAR_WINDOW = 160
# Only the start of a question is searched for its "A or B" (a question is short).
_QUERY_READ = 600


def _year_after(name: str, context: str) -> int | None:
    """The first year within `_YEAR_WINDOW` characters after the first mention of `name`
    (as written, or its last word) in `context`."""
    words = [w for w in re.findall(r"[\w'\u2019-]+", name) if len(w) > 1]
    for probe in (name.strip(), words[-1] if words else ""):
        if len(probe) < 3:
            continue
        at = context.lower().find(probe.lower())
        if at >= 0:
            year = _YEAR.search(context, at + len(probe), at + len(probe) + _YEAR_WINDOW)
            return int(year.group(1)) if year else None
    return None


def _same(a: str, b: str) -> bool:
    """Do two written names share a word of three letters or more ("Neil N. LaBute", "Neil LaBute")?"""
    def words(text: str) -> set[str]:
        return {w.lower().strip(".") for w in text.split()
                if len(w.strip(".")) > 2 and w.lower() not in ("the", "and")}
    return bool(words(a) & words(b))


def _order_clashes(statements: Sequence[StatementCheck], context: str, query: str) -> list[Clash]:
    choices = list(_CHOICE.finditer(query[:_QUERY_READ]))
    choice = choices[-1] if choices else None   # the last "A or B" of the question
    clashes = []
    for statement in statements:
        if statement.kind is not Kind.CLAIM or len(statement.text) > 200:
            continue
        claim = _ORDER.match(statement.text)
        if claim is None:
            continue
        first = claim.group("a")
        other = claim.group("b1") or claim.group("b2")
        if other is None and choice is not None:
            options = (choice.group("a"), choice.group("b"))
            if _same(first, options[0]) != _same(first, options[1]):
                other = options[1] if _same(first, options[0]) else options[0]
        if other is None or _same(first, other):
            continue
        earlier = bool(claim.group("first")) or (claim.group("before") or "").lower() == "before" \
            or (claim.group("older") or "").lower() == "older"
        years = _year_after(first, context), _year_after(other, context)
        if years[0] is None or years[1] is None or years[0] == years[1]:
            continue
        if (years[0] < years[1]) != earlier:
            clashes.append(Clash(statement.text, f"{first.strip()}: {years[0]}; {other.strip()}: {years[1]}",
                                 ORDER, "the context's years give the other order"))
    return clashes


def find_clashes(statements: Sequence[StatementCheck], context: str, *,
                 query: str = "") -> tuple[Clash, ...]:
    """Each statement of an answer that contradicts its context, with the passage it clashes
    with (one clash a statement: a negation first, then a figure, then a name)."""
    found: dict[str, Clash] = {}
    clauses = _context_clauses(context)
    for clash in (_negation_clashes(statements, clauses, query)
                  + _denied_but_affirmed(statements, clauses)
                  + _figure_and_name_clashes(statements, context, query)
                  + _order_clashes(statements, context, query)):
        found.setdefault(clash.claim, clash)
    return tuple(found.values())


def clash_reason(clash: Clash) -> str:
    """One clash in words, for a judge's reason."""
    return (f"{clash.how} check: {quoted(clash.claim, _QUOTE_LIMIT)} against "
            f"{quoted(clash.passage, _QUOTE_LIMIT)} ({clash.detail})")
