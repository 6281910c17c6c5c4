"""comment.md: what it says for each outcome, in what order, and that it always fits."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from jinja2.exceptions import SecurityError, UndefinedError

from flipgate.model import Conclusion
from flipgate.output.comment import (
    GITHUB_COMMENT_LIMIT,
    MARKER,
    STEP_SUMMARY_LIMIT,
    environment,
    render_comment,
    render_summary,
    templates_dir,
)

from support.factories import fluency, make_change, make_judge, make_report, make_row, one_of_each
from support.gfm import consistent_tables, details_text, read

CHANGE = make_change()


def h2(markdown: str) -> str:
    headings = [text for tag, text in read(markdown).headings if tag == "h2"]
    assert len(headings) == 1
    return headings[0]


@pytest.mark.parametrize("rows, conclusion, heading, sentence", [
    ([make_row("same", before=5, after=5)], None,
     "✅ flipgate passed", "No answer in a blocking category newly makes claims"),
    ([make_row("fee", category="policy", before=5, after=2, rescore=2)], None,
     "❌ flipgate blocked this change: 1 blocking regression", "should not merge"),
    ([make_row(f"fee-{n}", before=5, after=1, rescore=1) for n in range(3)], None,
     "❌ flipgate blocked this change: 3 blocking regressions", "a second scoring confirmed it"),
    ([make_row("broken", before=5, after=None)], None,
     "⚠️ flipgate could not finish: judge errors on 1 row", "re-run once the judge is reachable"),
    ([make_row("broken", before=None, after=5), make_row("fee", before=5, after=2, rescore=1)],
     None, "⚠️ flipgate could not finish: judge errors on 1 row",
     "Even so, it confirmed 1 blocking regression"),
    ([], Conclusion.SKIPPED,
     "⏭️ flipgate skipped: no prompt or model change", "no model was called"),
])
def test_every_conclusion_leads_with_its_heading_and_meaning(rows, conclusion, heading, sentence):
    comment = render_comment(make_report(rows, conclusion=conclusion))
    assert comment.splitlines()[0] == MARKER
    assert h2(comment) == heading
    assert sentence in comment


def test_a_pass_with_rows_to_read_says_they_do_not_block() -> None:
    rows = [make_row("chat", category="smalltalk", before=5, after=2, rescore=2)]
    comment = render_comment(make_report(rows))
    assert h2(comment) == "✅ flipgate passed"
    assert "do not block, but a reviewer should read them" in comment


def test_a_skipped_run_shows_no_counts_and_no_judge() -> None:
    page = read(render_comment(make_report([], conclusion=Conclusion.SKIPPED, head_sha="abc1234")))
    assert page.tables == []
    assert "Judge" not in page.text
    assert "Evaluated commit: abc1234" in page.text


@pytest.mark.parametrize("judge, present, absent", [
    (make_judge("offline", "lexical"),
     ["offline lexical judge", "It is not an LLM"], ["Embeddings"]),
    (make_judge("openai", "gpt-4.1-mini"),
     ["Judge: openai · gpt-4.1-mini", "Embeddings: text-embedding-3-small"], ["lexical"]),
    (make_judge("azure", "judge-deployment", engine="azure-ai-evaluation", embedding_model=None),
     ["Judge: azure · judge-deployment via azure-ai-evaluation"], ["Embeddings", "lexical"]),
])
def test_the_pinned_judge_is_named(judge, present, absent) -> None:
    text = read(render_comment(make_report([make_row(before=5, after=5)], judge=judge))).text
    for phrase in present:
        assert phrase in text
    for phrase in absent:
        assert phrase not in text


def test_the_counts_are_one_sentence_with_every_count_that_is_not_zero() -> None:
    report = make_report(one_of_each())
    page = read(render_comment(report))
    [sentence] = [line for line in page.text.splitlines() if line.startswith("9 cases:")]
    assert sentence == ("9 cases: 1 blocking regression, 1 judge error, 1 to review, "
                        "1 new non-answer, 1 unstable, 1 relevance drop, 1 moved, "
                        "1 still ungrounded.")
    assert page.tables[0][0][0] == "id"  # the first table is a table of rows, not of counts
    quiet = make_report([make_row("same", before=5, after=5)])
    assert "1 case: no row changed bucket." in read(render_comment(quiet)).text
    stopped = make_report([], conclusion=Conclusion.ERROR)
    stopped.counts.cases = 3
    assert "3 cases: none was scored." in read(render_comment(stopped)).text


def test_tables_come_in_order_each_with_its_own_rows() -> None:
    page = read(render_comment(make_report(one_of_each(), fluency=fluency())))
    titles = [text for tag, text in page.headings if tag == "h3"]
    assert titles == ["❌ Blocking regressions (1)", "⚠️ Judge errors (1)",
                      "🔎 Regressions to review (1)", "🤐 New non-answers (1)", "🎲 Unstable rows (1)",
                      "↘️ Relevance drops (1)", "Fluency (a tie-breaker, never a vote)"]
    expected_ids = {"Blocking": "blocking", "Regressions to review": "review",
                    "New non-answers": "non-answer", "Unstable": "unstable",
                    "Relevance drops": "relevance", "Judge errors": "error",
                    "Moved": "moved", "Still ungrounded": "still"}
    for heading, row_id in expected_ids.items():
        assert [row[0] for row in page.table_after(heading)[1:]] == [row_id]
    evidence = [summary for summary in page.summaries if ": the query" in summary]
    assert [summary.split(":", 1)[0] for summary in evidence] == [
        "blocking", "review", "non-answer", "unstable"]
    contexts = [summary for summary in page.summaries if summary.startswith("The whole context")]
    assert len(contexts) == 4  # each row with evidence carries its whole context
    assert [s for s in page.summaries if s not in evidence + contexts] == [
        "Moved: changed bucket, up or down (1)",
        "Still ungrounded: ungrounded in both versions, not caused by this change (1)"]
    assert page.count("details") == page.count("/details") == 10
    assert "unchanged" not in page.text


def test_only_non_empty_tables_appear() -> None:
    page = read(render_comment(make_report([make_row("fee", before=5, after=2, rescore=1)])))
    assert [text for tag, text in page.headings if tag == "h3"] == ["❌ Blocking regressions (1)"]
    assert page.summaries == ["fee: the query, the answers and the context",
                              "The whole context (1 passage marked)"]


def test_a_flip_row_is_one_line_and_its_evidence_is_in_a_collapsed_block() -> None:
    row = make_row("fee", before=5, after=2, rescore=1, reason="Invents a $12 fee.",
                   figures=("$12",), statements=("A $12 fee applies.",),
                   answer="Replacement cards arrive in a week. A $12 fee applies.",
                   baseline_answer="Replacement cards are free.",
                   context="They arrive in a week. The fee for a new card is waived.",
                   query="Do replacement cards cost anything?")
    comment = render_comment(make_report([row]))
    header, cells = read(comment).table_after("Blocking")
    assert dict(zip(header, cells, strict=True)) == {
        "id": "fee", "category": "policy",
        "baseline → candidate": "grounded (5) → ungrounded (2; re-score 1)",
        "not in the context": "$12",
    }
    block = details_text(comment, "fee:")
    assert "Query (fee): Do replacement cards cost anything?" in block
    assert "Candidate answer: Replacement cards arrive in a week. A $12 fee applies." in block
    assert "`A $12 fee applies.`" in comment  # the claim, marked
    assert "Baseline answer: Replacement cards are free." in block
    assert "Closest in the context: 🟡“The fee for a new card is waived.”" in block
    assert "Judge: Invents a $12 fee." in block


def test_unstable_rows_show_the_disagreeing_rescore() -> None:
    row = make_row("wobble", before=5, after=2, rescore=4)
    cells = read(render_comment(make_report([row]))).table_after("Unstable")[1]
    assert cells[2] == "grounded (5) → ungrounded (2; re-score 4)"


def test_judge_errors_table_lists_the_errors() -> None:
    row = make_row("broken", before=5, after=None, error="reply was not JSON")
    header, cells = read(render_comment(make_report([row]))).table_after("Judge errors")
    shown = dict(zip(header, cells, strict=True))
    assert shown["what failed"] == "candidate: reply was not JSON"
    assert shown["baseline → candidate"] == "grounded (5) → no score"


def test_relevance_drops_show_scores_and_invented_questions() -> None:
    row = make_row("drift", before=5, after=5, relevance=(0.91, 0.42),
                   questions=("What is a debit card?", "How do cards work?"))
    header, cells = read(render_comment(make_report([row]))).table_after("Relevance drops")
    assert dict(zip(header, cells, strict=True))["relevance"] == "0.91 → 0.42"
    assert dict(zip(header, cells, strict=True))["questions the answer addresses"] == (
        "What is a debit card?; How do cards work?")


@pytest.mark.parametrize("finish_reason, flagged",
                         [("length", True), ("stop", False), (None, False)])
def test_answers_cut_off_at_max_tokens_are_flagged(finish_reason, flagged) -> None:
    row = make_row("cut", before=5, after=2, rescore=1, finish_reason=finish_reason)
    block = details_text(render_comment(make_report([row])), "cut:")
    assert ("The candidate answer was cut off at max tokens" in block) is flagged


def test_an_empty_answer_is_shown_as_empty() -> None:
    row = make_row("blank", before=5, after=3, answer="   \n ")
    block = details_text(render_comment(make_report([row])), "blank:")
    assert "Candidate answer: (empty)" in block


def test_notes_are_listed() -> None:
    notes = ["this PR changes .flipgate.yml; the base's configuration was used",
             "no configuration on the base; the head's was used"]
    comment = render_comment(make_report([make_row(before=5, after=5)], notes=notes))
    for note in notes:
        assert f"\n- {note}\n" in comment.replace("\\_", "_")


def test_the_change_description() -> None:
    comment = render_comment(make_report([make_row(before=5, after=5)], change=CHANGE))
    page = read(comment)
    assert ("h3", "What changed") in page.headings
    for line in ["Generator: prompts/answer.prompty",
                 "Files compared: prompts/answer.prompty, prompts/partials/tone.md",
                 "Model: gpt-4o-mini → gpt-4.1",
                 "Parameter temperature: 0.2 → 0.7",
                 "Parameter max_tokens: (unset) → 400"]:
        assert line in page.text
    assert page.summaries == ["Prompt template diff"]
    assert page.pre == [CHANGE.template_diff + "\n"]  # exactly the diff: it copies out whole
    assert "configuration" not in page.text and "frozen cases" not in page.text


def test_configuration_and_case_changes_are_said_and_shown() -> None:
    change = replace(CHANGE, config_diff="-  threshold: 0.7\n+  threshold: 0.1",
                     cases_diff="+{\"id\": \"new\"}")
    page = read(render_comment(make_report([make_row(before=5, after=5)], change=change)))
    assert "also changes the gate's configuration file" in page.text
    assert "also changes the frozen cases" in page.text
    assert page.summaries == ["Prompt template diff", "Configuration diff", "Cases diff"]
    assert page.pre[1] == change.config_diff + "\n"


@pytest.mark.parametrize("change, expected", [
    (make_change(parameters=(), template_diff=""), "What changed"),
    (make_change(model=("gpt-4.1", "gpt-4.1")), "Model: gpt-4.1 (unchanged)"),
    (make_change(model=(None, "gpt-4.1")), "Model: (unset) → gpt-4.1"),
    (make_change(files=("prompts/one.md",)), "Files compared: prompts/one.md"),
    (make_change(parameters=(("top_p", 1, 0.5),)), "Parameter top_p: 1 → 0.5"),
    (make_change(parameters=(("stop", ["a"], None),)), 'Parameter stop: ["a"] → (unset)'),
    (make_change(template_diff="", config_diff=None), "What changed"),
])
def test_a_partial_change_description_still_renders(change, expected) -> None:
    text = read(render_comment(make_report([make_row(before=5, after=5)], change=change))).text
    assert expected in text


def test_fluency_comes_last_as_a_tie_breaker() -> None:
    comment = render_comment(make_report(one_of_each(), fluency=fluency(rows=7, mean_delta=-0.333)))
    page = read(comment)
    assert page.headings[-1] == ("h3", "Fluency (a tie-breaker, never a vote)")
    assert comment.index("Fluency") > comment.index("Still ungrounded")
    assert ("Mean fluency change on 7 tied rows (partial or grounded in both versions): -0.33."
            in page.text)
    assert "never changes a verdict" in page.text


@pytest.mark.parametrize("summary, expected", [
    (fluency(rows=0, mean_delta=None), "No tied row got a fluency score."),
    (fluency(rows=5, mean_delta=0.5, failed=1), "1 tied row had no fluency score and was left out"),
    (fluency(rows=5, mean_delta=0.5, failed=2),
     "2 tied rows had no fluency score and were left out"),
    (fluency(rows=0, mean_delta=None, skipped=3),
     "Not asked: the gate blocked on a groundedness regression, so fluency could not change the "
     "outcome; the 3 tied rows (partial or grounded in both versions) were not scored for fluency."),
])
def test_fluency_without_scores_says_so(summary, expected) -> None:
    assert expected in read(render_comment(make_report([], fluency=summary))).text


def test_usage_and_cache_statistics() -> None:
    usage = {"judge": {"requests": 1200, "prompt_tokens": 5, "completion_tokens": 6},
             "baseline": {"requests": 40}}
    page = read(render_comment(make_report([], usage=usage, cache={"hits": 7, "misses": 3})))
    assert page.headings[-1] == ("h3", "Usage")
    assert page.tables[-1] == [["", "requests", "prompt tokens", "completion tokens"],
                               ["judge", "1,200", "5", "6"], ["baseline", "40", "", ""]]
    assert "Cache: 7 hits, 3 misses." in page.text


@pytest.mark.parametrize("source", [
    "{{ rows.append(1) }}",                      # the immutable sandbox: no mutation
    "{{ ''.__class__.__mro__ }}",                # no reaching into Python's internals
    "{{ report.__init__.__globals__ }}",
])
def test_the_comment_environment_refuses_what_the_sandbox_forbids(source: str) -> None:
    with pytest.raises(SecurityError):
        environment().from_string(source).render(rows=[], report=make_report([]))


def test_the_comment_environment_fails_on_an_undefined_name_and_leaves_escaping_to_filters() -> None:
    with pytest.raises(UndefinedError):
        environment().from_string("{{ no_such_name }}").render()
    # Markdown, not HTML: nothing is HTML-escaped behind the filters' back.
    assert environment().from_string("{{ x }}|{{ x|cell(20) }}").render(x="<b>") == "<b>|&lt;b&gt;"


def test_the_templates_live_inside_the_package() -> None:
    import flipgate

    assert templates_dir() == Path(flipgate.__file__).resolve().parent / "output" / "templates"
    assert sorted(p.name for p in templates_dir().glob("*.j2")) == [
        "_tables.md.j2", "calibration.md.j2", "comment.md.j2", "report.html.j2"]
    # report.html's style and script, inlined into the page
    assert {p.name for p in templates_dir().glob("report.*")} >= {"report.css", "report.js"}


# ---------------------------------------------------------------- size budget

LONG = "The replacement card costs | `$12` <b>and</b> @someone. " * 40


def many_rows(blocking: int = 0, review: int = 0, moved: int = 0, still: int = 0,
              non_answers: int = 0, errors: int = 0):
    rows = []
    for n in range(blocking):
        rows.append(make_row(f"blocking-{n}", before=5, after=2, rescore=1, answer=f"{n} {LONG}",
                             reason=LONG, figures=("$12",) * 9, statements=(LONG,) * 9))
    for n in range(review):
        rows.append(make_row(f"review-{n}", category="chat", before=5, after=1, rescore=1,
                             answer=f"{n} {LONG}", reason=LONG))
    for n in range(moved):
        rows.append(make_row(f"moved-{n}", before=4, after=5, answer=f"{n} {LONG}", reason=LONG))
    for n in range(still):
        rows.append(make_row(f"still-{n}", before=2, after=1, answer=f"{n} {LONG}", reason=LONG))
    for n in range(non_answers):
        rows.append(make_row(f"quiet-{n}", before=5, after=3, answer=f"{n} {LONG}"))
    for n in range(errors):
        rows.append(make_row(f"broken-{n}", before=5, after=None, error=LONG))
    return rows


ROW_ID = re.compile(r"^\| (?:blocking|review|moved|still|quiet|broken)-\d+ \|", re.MULTILINE)


def sections_add_up(comment: str) -> None:
    """Each table's shown rows plus what it says it left out equal its heading's count."""
    page = read(comment)
    for tag, title in page.headings + [("summary", s) for s in page.summaries]:
        match = re.search(r"(.*) \(([\d,]+)\)$", title)
        if not match or tag == "h2":
            continue
        name, total = match.group(1), int(match.group(2).replace(",", ""))
        noun = {"❌ Blocking regressions": "blocking regressions",
                "🔎 Regressions to review": "regressions to review",
                "🤐 New non-answers": "new non-answers", "⚠️ Judge errors": "rows with judge errors",
                "Moved: changed bucket, up or down": "moved rows",
                "Still ungrounded: ungrounded in both versions, not caused by this change":
                    "still-ungrounded rows"}[name]
        more = re.search(rf"… and ([\d,]+) more {re.escape(noun)}(?:; see report.html|, not shown)",
                         comment)
        left_out = int(more.group(1).replace(",", "")) if more else 0
        if f"{total:,} {noun} not listed here" in comment:
            left_out = total
        shown = max(len(page.table_after(name)) - 1, 0)
        assert shown + left_out == total, name


@pytest.fixture(scope="module")
def huge_report():
    return make_report(many_rows(blocking=1000, review=1000, moved=1000, still=1000,
                                 non_answers=500, errors=500), change=replace(
        CHANGE, template_diff="\n".join(f"+line {n} ```` @x" for n in range(50_000))))


def test_thousands_of_rows_fit_in_one_comment(huge_report) -> None:
    comment = render_comment(huge_report)
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    assert comment.count(MARKER) == 1
    page = read(comment)
    assert consistent_tables(page)
    assert page.count("details") == page.count("/details")
    assert page.count("pre") == page.count("/pre")
    # The blocking table is the one that survives; it says how much it left out.
    assert len(page.table_after("Blocking")) > 1
    # The blocking rows left out are named, with where to read them.
    assert re.search(r"… and [\d,]+ more blocking regressions, not shown to fit GitHub's size "
                     r"limit: blocking-\d+, .*\. Every row, with its context, is in report.html", comment)
    for left_out in ["1,000 regressions to review not listed", "1,000 moved rows not listed",
                     "500 rows with judge errors not listed",
                     "Prompt template diff left out to fit GitHub's size limit"]:
        assert left_out in comment
    sections_add_up(comment)


def test_the_step_summary_keeps_more_within_its_mebibyte(huge_report) -> None:
    comment, summary = render_comment(huge_report), render_summary(huge_report)
    assert len(summary.encode("utf-8")) <= STEP_SUMMARY_LIMIT
    assert read(summary).tables and consistent_tables(read(summary))
    assert summary.count("<tr>") == 0  # Markdown, not HTML
    def rows_shown(markdown: str) -> int:
        return len(ROW_ID.findall(markdown))

    # The comment keeps its blocking rows on compact lines; the summary keeps all of
    # them with their evidence blocks.
    assert rows_shown(summary) > 2 * rows_shown(comment)
    assert summary.count("<details><summary>blocking-") == 1000
    sections_add_up(summary)


def test_blocking_rows_are_the_last_to_go() -> None:
    rows = many_rows(blocking=10, review=800, moved=2000, still=2000, non_answers=300)
    comment = render_comment(make_report(rows))
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    page = read(comment)
    blocking_ids = [row[0] for row in page.table_after("Blocking")[1:]]
    assert blocking_ids == [f"blocking-{n}" for n in range(10)]
    assert "more blocking regressions" not in comment
    # The moved rows make room: some shown, the rest counted, none silently lost.
    moved_shown = len(re.findall(r"^\| moved-\d+ \|", comment, re.MULTILINE))
    assert 0 < moved_shown < 2000
    assert f"… and {2000 - moved_shown:,} more moved rows; see report.html" in comment
    sections_add_up(comment)


def test_a_summary_that_fits_leaves_nothing_out() -> None:
    report = make_report(many_rows(blocking=50, review=200, moved=200, still=200))
    summary = render_summary(report)
    assert "see report.html" not in summary
    assert len(read(summary).table_after("Moved")) == 201
    assert "see report.html" in render_comment(report)


@pytest.mark.parametrize("max_chars", [6_000, 12_000, 30_000, GITHUB_COMMENT_LIMIT])
def test_any_reasonable_budget_is_respected(max_chars, huge_report) -> None:
    comment = render_comment(huge_report, max_chars=max_chars)
    assert len(comment.encode("utf-8")) <= max_chars
    page = read(comment)
    assert consistent_tables(page) and comment.count(MARKER) == 1
    assert h2(comment).startswith("⚠️ flipgate could not finish")


def test_a_budget_below_the_shortest_comment_is_refused(huge_report) -> None:
    with pytest.raises(ValueError, match="too small"):
        render_comment(huge_report, max_chars=300)


def test_one_huge_answer_is_shortened_not_dropped() -> None:
    row = make_row("essay", before=5, after=2, rescore=1, answer="word " * 1_000_000)
    comment = render_comment(make_report([row]))
    block = details_text(comment, "essay:")
    answer = block.split("Candidate answer: ", 1)[1].split("\n", 1)[0]
    assert answer.endswith("…") and len(answer) <= 1_200
    assert "see report.json" not in comment


def test_a_column_no_row_fills_is_left_out() -> None:
    rows = [make_row("drop", before=5, after=5, relevance=(0.9, 0.3), questions=()),
            make_row("up", before=4, after=5, reason="")]
    page = read(render_comment(make_report(rows)))
    assert page.table_after("Relevance drops")[0] == ["id", "category", "relevance",
                                                      "candidate answer"]
    assert page.table_after("Moved")[0] == ["id", "category", "baseline → candidate",
                                            "candidate answer"]
