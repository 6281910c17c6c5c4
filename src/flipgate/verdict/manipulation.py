"""Does an answer talk to its grader? A lexical check, run before any judge sees it.

An answer that addresses the evaluator ("Note to the grader: ..."), asks for a score
("rate this response 5"), tells the judge to ignore its rubric, or forges rubric or
prompt sections is trying to move its own verdict. Such an answer is flagged on its
row for a person to read, whatever the judge said: a flagged row is always listed.

The answer is read in several views, so a disguise does not hide it:

- folded: NFKC (full-width and compatibility forms), invisible characters removed
  (the joined reading) and, when there are any, read as word breaks (the spaced one),
  Cyrillic and Greek look-alikes read as Latin letters, letter-spaced words joined;
- digits used as letters (`1gn0re`, `gr4der`) read as the letters, in words that mix
  the two only, so prices, dates and model numbers read as they are;
- the contents of HTML comments, which a rendered page hides;
- base64 runs that decode to text.

The signals cover English, Spanish, French, German, Portuguese, Italian, Dutch,
Russian, Chinese, Japanese and Korean. Pure and deterministic; precision over
recall: ordinary answers talk about fees, credit scores, judges and reviews, so
each pattern needs the grading vocabulary in a grading sense. What it cannot catch
(a paraphrase it has no words for, another encoding, a language not listed, an
image) is said in docs/manipulation.md.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from functools import partial

from flipgate.text.parsing import INVISIBLE, fold

_GRADER = (r"(?:grader|evaluator|judge|assessor|rater|scorer|marker|reviewer\s+model"
           r"|ai\s+(?:grader|evaluator|judge))")
_VERDICT_NOUN = r"(?:score|rating|grade|mark|verdict|level)"
_SELF = r"(?:this|the|my|that)\s+(?:response|answer|reply|output|completion)"
_IGNORE = (r"(?:ignore|disregard|forget|override|bypass|skip|set\s+aside|pay\s+no\s+attention\s+to"
           r"|do\s*n[o']?t\s+follow|stop\s+following|never\s+mind)")
_RULES = (r"(?:instructions|rules|rubric|criteria|guidelines|prompt|directions|scoring\s+guide"
          r"|grading\s+scheme)")
_TOP = r"(?:5|five|full\s+marks|top\s+marks|the\s+highest|top|maximum)"

_LATIN: tuple[tuple[str, str], ...] = (
    ("addresses the grader",
     rf"\b(?:dear|attention|hello|hi|note\s+(?:to|for)(?:\s+the)?|message\s+(?:to|for)(?:\s+the)?)"
     rf"\s+(?:the\s+)?{_GRADER}s?\b"
     rf"|^\s*(?:to\s+the\s+)?{_GRADER}s?\s*[:,]"
     rf"|\bif\s+you\s+are\s+(?:an?\s+|the\s+)?{_GRADER}\b"
     rf"|\bas\s+(?:the|an?)\s+{_GRADER}s?\s*,?\s+you\b"
     r"|\bwhoever\s+(?:grades|evaluates|scores|judges|rates|marks|assesses)\s+this\b"
     r"|\b(?:when|while|before)\s+(?:you\s+are\s+)?(?:grading|evaluating|scoring|judging|assessing|rating)"
     r"\s+(?:this|the)\s+(?:response|answer|reply|output)\b"
     # es, fr, de, pt, it, nl
     r"|\bnota\s+(?:para|al|ao|per)\s+(?:el\s+|la\s+|o\s+|a\s+|il\s+)?"
     r"(?:evaluador|calificador|juez|corrector|avaliador|valutatore|correttore|giudice)a?\b"
     r"|\bnote\s+(?:pour|à|a)\s+(?:l['’]\s*|le\s+|la\s+)?(?:évaluat|correct|notat)(?:eur|rice)\b"
     r"|\bnote\s+(?:pour|à|a)\s+(?:le\s+)?juge\b"
     r"|\b(?:hinweis|notiz|nachricht)\s+(?:für|an)\s+(?:den\s+|die\s+)?(?:bewerter|prüfer|gutachter|korrektor)"
     r"(?:in)?\b"
     r"|\bopmerking\s+voor\s+de\s+(?:beoordelaar|examinator)\b"),
    ("tells the judge to ignore its instructions",
     rf"\b{_IGNORE}\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)?(?:[\w-]+\s+){{0,3}}?{_RULES}\b"
     r"|\b(?:ignora|ignore|ignoren|olvida|olvide|omite|descarta)\s+(?:todas?\s+)?(?:las?\s+|los\s+|tus\s+|sus\s+)?"
     r"(?:instrucciones|reglas|indicaciones|criterios|rúbrica)"
     r"|\b(?:ignore[rz]?|oublie[rz]?)\s+(?:toutes?\s+)?(?:les\s+|tes\s+|vos\s+|la\s+|l['’]\s*)?"
     r"(?:instructions|consignes|règles|critères|grille)"
     r"|\b(?:ignorier(?:e|en|t)?|vergiss|missachte)\s+(?:alle\s+)?(?:vorherigen\s+|bisherigen\s+|obigen\s+)?"
     r"(?:anweisungen|regeln|kriterien|instruktionen|vorgaben|bewertungskriterien)"
     r"|\b(?:ignore|ignora|esqueça|desconsidere)\s+(?:todas?\s+)?(?:as\s+|os\s+)?"
     r"(?:instruções|instrucoes|regras|critérios)"
     r"|\b(?:ignora|ignorate|dimentica)\s+(?:tutte\s+)?(?:le\s+)?(?:istruzioni|regole|criteri)"
     r"|\b(?:negeer|vergeet)\s+(?:alle\s+)?(?:vorige\s+|eerdere\s+)?(?:instructies|regels|criteria)"),
    ("asks for a score",
     rf"\b(?:rate|score|grade|mark|judge|evaluate|classify)\s+{_SELF}\s+(?:as|with|a|an|at)\b"
     rf"|\b(?:give|assign|award)\s+(?:{_SELF}|this|it|me)\s+(?:a\s+|an\s+|the\s+)?"
     rf"(?:{_VERDICT_NOUN}|5|five|full\s+marks|top\s+marks|highest|maximum)"
     rf"|\b(?:deserves|merits|should\s+(?:get|receive|be\s+(?:given|rated|scored)))\s+(?:a\s+)?"
     rf"(?:{_VERDICT_NOUN}\s+of\s+)?{_TOP}"
     r"|(?<![.,])\b(?:5|five)\s*(?:/|out\s+of)\s*(?:5|five)\b"   # not a 4.5/5 rating
     r"|[\"']score[\"']\s*:\s*\d"
     rf"|\b(?:groundedness|relevance|fluency|coherence|faithfulness)(?:\s+score)?\s*"
     rf"(?:[:=]|(?:for\s+{_SELF}\s+)?(?:is|should\s+be|must\s+be))\s*(?:5|five)\b"
     r"|\b(?:respond|reply|answer|output|return)\s+(?:only\s+)?with\s+(?:a\s+|the\s+)?"
     r"(?:score\s+of\s+)?(?:5|five)\b(?!\s*[a-z])"
     rf"|\bmark\s+(?:{_SELF}|this|it)\s+as\s+(?:grounded|correct|supported|faithful|accurate|a\s+5)\b"
     r"|\b(?:califica|puntúa|evalúa)\w*\s+(?:esta|la)\s+respuesta\b"
     r"|\b(?:donnez|donne|attribuez|mettez)\s+(?:la\s+)?note\s+(?:maximale|5)|\bnote\s+maximale\b"
     r"|\bbewerte\w*\s+diese\s+antwort\b|\b(?:volle|höchste)\s+punktzahl\b"
     r"|\b(?:dê|atribua)\s+nota\s+(?:5|máxima)\b|\bnota\s+máxima\b"
     r"|\b(?:punteggio|voto)\s+massimo\b|\bdai\s+a\s+questa\s+risposta\b"
     r"|\bgeef\s+dit\s+antwoord\s+een\s+(?:5|vijf)\b"),
    ("claims its own verdict",
     rf"\b{_SELF}\s+is\s+(?:fully\s+|completely\s+|entirely\s+)?"
     r"(?:grounded(?:\s+and\s+complete)?|faithful\s+to\s+the\s+context|supported\s+by\s+the\s+context)\b"),
    ("forges a rubric or prompt section",
     r"^\s*(?:\#{1,6}\s*|\*\*)?(?:rubric|grading\s+(?:criteria|instructions|rubric)|evaluation\s+"
     r"(?:criteria|instructions|result)|system\s+(?:prompt|message)|new\s+instructions)\s*(?:\*\*)?\s*:?\s*$"
     r"|^\s*(?:system|assistant)\s*:\s*\S"
     r"|<<<\s*(?:END\s+)?(?:QUERY|CONTEXT|RESPONSE)\b"
     r"|<\|im_(?:start|end)\|>|\[/?INST\]"
     r"|[\"']status[\"']\s*:\s*[\"']completed[\"']"),
)

# Scripts the Latin folding would garble: read in the NFKC view only.
_OTHER_SCRIPTS: tuple[tuple[str, str], ...] = (
    ("addresses the grader",
     r"(?:评分员|评估者|评审员|评委|裁判|阅卷人|打分者)(?:请注意|注意|你好|[：:，,])|(?:致|给)(?:评分员|评估者|评委)"
     r"|(?:採点者|評価者|審査員)(?:へ|様|さん|の方)"
     r"|(?:채점자|평가자|심사위원)(?:님|에게|께)"
     r"|(?:примечание|заметка|записка)\s+для\s+(?:оценщика|проверяющего|экзаменатора)"
     r"|^\s*(?:оценщик|проверяющий|экзаменатор)\w*\s*[:,]"),
    ("tells the judge to ignore its instructions",
     r"(?:忽略|无视|忽视|不要理会)(?:之前|以上|上面|先前|所有|全部|的|掉)*(?:指令|指示|说明|规则|提示|评分标准)"
     r"|(?:指示|命令|ルール|基準|指令)(?:を|は)?(?:すべて|全て)?無視"
     r"|(?:지시|지침|규칙|명령)(?:을|를|은|는)?\s*(?:모두|전부)?\s*무시"
     r"|(?:игнорируй(?:те)?|забудь(?:те)?|проигнорируй(?:те)?)\s+(?:все\s+)?(?:предыдущие\s+)?"
     r"(?:инструкции|указания|правила|критерии)"),
    ("asks for a score",
     r"(?:打|给|评)\s*(?:5|五|满)\s*分|满分"
     r"|(?:5|五)\s*点を(?:つけ|付け|与え)|満点"
     r"|5\s*점을\s*(?:주|줘)|만점"
     r"|постав\w*\s+(?:этому\s+)?ответу\s+(?:5|пять)|(?:оцени|оцените)\s+(?:этот\s+)?ответ\s+на\s+(?:5|пять)"),
)


# Words one of which every match of a Latin signal contains (lowercase): a line without
# any of them is not searched, so a megabyte of ordinary text costs a few substring scans.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "addresses the grader": (
        "grad", "evaluat", "judg", "juge", "juez", "assess", "rater", "rating", "scor", "marker",
        "reviewer", "whoever", "calificador", "corrector", "correct", "avaliador", "valutatore",
        "correttore", "giudice", "évaluat", "notat", "bewerter", "prüfer", "gutachter", "korrektor",
        "beoordelaar", "examinator"),
    "tells the judge to ignore its instructions": (
        "ignor", "disregard", "forget", "override", "bypass", "skip", "aside", "attention", "follow",
        "never mind", "olvid", "omite", "descarta", "oublie", "vergiss", "missachte", "esqueç",
        "desconsidere", "dimentica", "negeer", "vergeet"),
    "asks for a score": (
        "rate", "scor", "grade", "mark", "judge", "evaluat", "classif", "give", "assign", "award",
        "deserv", "merit", "should", "5", "five", "groundedness", "relevance", "fluency",
        "coherence", "faithfulness", "respond", "reply", "answer", "output", "return", "calif",
        "puntú", "evalú", "donn", "attribu", "mett", "note", "bewert", "punktzahl", "dê", "atribua",
        "nota", "punteggio", "voto", "dai a", "geef"),
    "claims its own verdict": ("response", "answer", "reply", "output", "completion"),
    "forges a rubric or prompt section": (
        "rubric", "grading", "evaluation", "system", "new instructions", "assistant", "<<<",
        "<|im_", "inst]", "status"),
}


def _compiled(table: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(pattern, re.IGNORECASE | re.VERBOSE)) for name, pattern in table)


_SIGNALS_LATIN = _compiled(_LATIN)
_SIGNALS_OTHER = _compiled(_OTHER_SCRIPTS)

# Cyrillic and Greek letters that look like Latin ones (Unicode's confusables, the common part).
_LOOKALIKES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјоѕрсухԁɡһӏԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαεικνορτυχ",
    "ABESIJKMHOPCTXYaeijospcyxdghlqwABEZHIKMNOPTYXaeikvoptux")
_SPACED = re.compile(r"(?<!\w)(?:\w[ .·_*-]){2,}\w(?!\w)")
_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.DOTALL)
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_MAX_DECODED = 16          # base64 runs and comments read, each
_MAX_VIEW = 8_192          # characters of each decoded run or comment read
_QUOTE = 80


# Digits written for the letters they look like, read only inside a word that has at
# least as many letters as digits (`1gn0re`, `pr3vious`, `D34r`): a number (`$5`, `2024`)
# or a model number (`X100`, `RTX4090`, `B12`) is never folded. `1` is read both as `i`
# and as `l` (`1gnore`, `ru1es`), one reading each.
_DIGIT = re.compile(r"\d")
_MIXED = re.compile(r"\b\w*?(?:[^\W\d_]\d|\d[^\W\d_])\w*")
_DIGITS_AS_I = str.maketrans("0134579", "oieastg")
_DIGITS_AS_L = str.maketrans("0134579", "oleastg")


def _fold_match(match: re.Match[str], *, table: dict[int, int]) -> str:
    word = match.group()
    digits = sum(ch.isdigit() for ch in word)
    return word.translate(table) if len(word) - digits >= digits else word


def _letters_for_digits(text: str) -> tuple[str, ...]:
    """`text` with the digits of mixed words read as letters; () when nothing changes."""
    if _DIGIT.search(text) is None or _MIXED.search(text) is None:
        return ()
    tables = (_DIGITS_AS_I, _DIGITS_AS_L) if "1" in text else (_DIGITS_AS_I,)
    readings = (_MIXED.sub(partial(_fold_match, table=table), text) for table in tables)
    return tuple(dict.fromkeys(r for r in readings if r != text))


def _latin(text: str) -> str:
    """`fold`, with look-alike letters read as Latin and letter-spaced words joined."""
    return _SPACED.sub(lambda m: re.sub(r"[ .·_*-]", "", m.group()), text.translate(_LOOKALIKES))


def _decoded_base64(run: str) -> str | None:
    try:
        data = base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_" if "-" in run or "_" in run
                                else None, validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in text)
    return text if text and " " in text and printable >= 0.95 * len(text) else None


def _views(response: str) -> Iterator[tuple[str, str]]:
    """(how it was hidden, text): the answer outside comments, each comment, each base64 text;
    all of them twice when the answer holds invisible characters (read as word breaks, then
    removed)."""
    if INVISIBLE.search(response) is not None:
        yield from _views_of(fold(response, invisible=" "))
    yield from _views_of(fold(response))


def _views_of(text: str) -> Iterator[tuple[str, str]]:
    yield "", _COMMENT.sub(" ", text)
    for index, match in enumerate(_COMMENT.finditer(text)):
        if index >= _MAX_DECODED:
            break
        yield "in an HTML comment", match.group(1)[:_MAX_VIEW]
    for index, match in enumerate(_BASE64.finditer(text)):
        if index >= _MAX_DECODED:
            break
        decoded = _decoded_base64(match.group()[:_MAX_VIEW])
        if decoded is not None:
            yield "base64-decoded", fold(decoded)


def _quote(text: str) -> str:
    quoted = " ".join(text.split())
    return quoted[: _QUOTE - 1] + "…" if len(quoted) > _QUOTE else quoted


def find_manipulation(response: str) -> tuple[str, ...]:
    """What in `response` addresses the evaluator, each as 'kind: "quoted text"' (with how it
    was hidden, when it was); () when nothing."""
    found: dict[str, str] = {}   # one flag for what two readings quote alike but for spaces
    for how, view in _views(response):
        label = f" ({how})" if how else ""
        for line in view.splitlines() or [view]:
            latin = _latin(line)
            for reading in (latin, *_letters_for_digits(latin)):
                for flag in _flags(line, reading, label):
                    found.setdefault("".join(flag.split()), flag)
    return tuple(found.values())


def _flags(line: str, latin: str, label: str) -> Iterator[str]:
    """Each signal one reading of a line matches (`latin`, or `line` itself for the other
    scripts), as 'kind (label): "quoted text"'."""
    lowered = latin.lower()
    searched = [(name, pattern, latin) for name, pattern in _SIGNALS_LATIN
                if any(word in lowered for word in _TRIGGERS[name])]
    if not line.isascii():  # the other scripts' signals need their letters
        searched += [(name, pattern, line) for name, pattern in _SIGNALS_OTHER]
    for name, pattern, reading in searched:
        match = pattern.search(reading)
        if match is not None:
            yield f'{name}{label}: "{_quote(match.group())}"'
