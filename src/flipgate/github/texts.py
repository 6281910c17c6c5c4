"""The texts flipgate writes itself in GitHub mode: replies, notices, status descriptions.

Pure functions of their arguments. Anything a user or a model wrote is shown
only inside a code span or a fenced block sized to its content, where
Markdown, HTML and @-mentions are inert. Replies never start with
`/flipgate`, so one can never be read as a command.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from flipgate.github.bases import SETTING, Refused
from flipgate.github.event import PullRequest
from flipgate.github.labels import ARTIFACT_NAME, LABELS_FILE
from flipgate.model import Conclusion, Report
from flipgate.text.escaping import escape_md, fence, inline_code, plural, short, shorten
from flipgate.verdict import gate

STATUS_LIMIT = 140  # GitHub refuses a longer commit status description
_CODE_BLOCK_LIMIT = 50_000  # of a comment's 65,536 characters
NO_CHANGE = "no prompt or model change"
WAITING_FOR_COMMAND = "waiting for a maintainer's `/flipgate run`"
AWAITING_REVIEW = "awaiting review"  # how a pending status held for a person begins

USAGE = """\
**flipgate** answers these commands, each on a line of its own in a pull request comment
by someone with write access to the repository (not in a quote, a list, code or HTML; one
comment may hold up to 50 `/flipgate label` lines, answered together):

| command | what it does |
|---|---|
| `/flipgate run` | run the check on the pull request's head, if it is still the head you saw \
when you wrote the command |
| `/flipgate run SHA` | run the check on that commit, which must be the pull request's head (7 or more \
hex digits) |
| `/flipgate label ID [baseline\\|candidate] LABEL` | record your label on an answer (LABEL: ungrounded, \
non_answer, partial or grounded; the candidate's answer unless you name the side) |
| `/flipgate accept` | with `gate.review: required`, clear every held-back flip still undecided on \
the head you saw (a label on a held-back row decides that row: `ungrounded` blocks, `grounded` \
clears it) |
| `/flipgate help` | show this message |

A push after your command is not evaluated under it; comment again for newer commits.
"""


def code_block(text: str) -> str:
    """`text` as a fenced block that nothing inside it can close (the comment's own
    `fence` filter: a fence longer than any backtick run, every line break a LF)."""
    return fence(text, limit=_CODE_BLOCK_LIMIT, info="text")


# -- commit status -----------------------------------------------------------

def status_description(report: Report) -> str:
    """One line, at most 140 characters, that says what the counts say."""
    if report.conclusion is Conclusion.SKIPPED:
        return NO_CHANGE
    counts = report.counts
    if report.conclusion is Conclusion.AWAITING_REVIEW:
        # `gate.review: required`: pending until a maintainer decides (github/awaiting.py).
        lead = f"{gate.headline_mark(report)} {AWAITING_REVIEW}: "
        held = gate.held_back_sentence(report, limit=STATUS_LIMIT - len(lead))
        return shorten(lead + (held or ""), STATUS_LIMIT)
    if report.conclusion is Conclusion.SUCCESS and gate.held_back_sentence(report):
        # A pass that held flips back (or set answers aside) says so first, after a warning
        # mark, never a tick.
        lead = f"{gate.headline_mark(report)} passed, but "
        held = gate.held_back_sentence(report, limit=STATUS_LIMIT - len(lead))
        return shorten(lead + (held or ""), STATUS_LIMIT)
    lead = {Conclusion.SUCCESS: "passed", Conclusion.FAILURE: "blocked",
            Conclusion.ERROR: "could not finish"}[report.conclusion]
    details = [kind.status.of(counts[kind.count_field]) for kind in gate.KINDS
               if counts[kind.count_field]]
    if not details:
        details = ["see the comment" if report.conclusion is Conclusion.ERROR else "no regressions"]
    return shorten(f"{lead}: {plural(counts.cases, 'case')}; " + ", ".join(details), STATUS_LIMIT)


# Each pending status flipgate sets names its pull request: GitHub's stamp on it then
# records that commit as that PR's head at that moment (pinning.py reads it back).
_RECORDED_PULL = re.compile(r"^#(\d+): ")


_BASE_NAMED = 60  # a longer base name is left out of the record (the description has 140)


def _recording(pull: PullRequest, records_head: bool) -> str:
    """`#N: ` and, when it fits, `base NAME: `: the record of the head and the base it was
    judged against."""
    if not records_head:
        return ""
    base = f"base {pull.base_ref}: " if 0 < len(pull.base_ref) <= _BASE_NAMED else ""
    return f"#{pull.number}: {base}"


def pending_description(pull: PullRequest, *, records_head: bool = True) -> str:
    return f"{_recording(pull, records_head)}evaluating {short(pull.head_sha)}…"


def waiting_description(pull: PullRequest, *, records_head: bool = True) -> str:
    return f"{_recording(pull, records_head)}{WAITING_FOR_COMMAND}"


def recorded_pull(description: str | None) -> int | None:
    """The pull request a pending status of flipgate's names, if it names one."""
    found = _RECORDED_PULL.match(description or "")
    return int(found.group(1)) if found else None


def cancelled_description(signal_name: str) -> str:
    return shorten(f"cancelled ({signal_name}) before a verdict; rerun the job", STATUS_LIMIT)


def cancelled_summary(pull: PullRequest, signal_name: str) -> str:
    """The step summary of a run that was cancelled mid-way."""
    return (f"## ⚠️ flipgate was cancelled\n\nThe run on {inline_code(pull.head_sha)} received "
            f"{signal_name} before it reached a verdict, so its status is `error`, not "
            "`pending`. Rerun the job to evaluate the pull request; replies already cached "
            "are not asked again.\n")


def failure_description(kind: str) -> str:
    return shorten(f"could not run: {kind}; see the workflow run", STATUS_LIMIT)


_RATE_LIMIT = re.compile(r"GitHub's (?:primary |secondary )?rate limit")


def github_failure_description(error: str) -> str:
    """The status of a run GitHub stopped: the rate limit first, when it was one."""
    limit = _RATE_LIMIT.search(error)
    if limit:
        return shorten(f"could not finish: {limit[0]}; see the workflow run", STATUS_LIMIT)
    return shorten(f"could not finish: GitHub API: {error}", STATUS_LIMIT)


def refused_base_description(refused: Refused) -> str:
    why = "has no configuration" if refused.unconfigured else f"is not in {SETTING}"
    return shorten(f"no verdict: base {refused.base} {why}; see the comment", STATUS_LIMIT)


def head_code_refused_description() -> str:
    return shorten("no verdict: the head's code was not run (a fork's head needs a maintainer's "
                   "/flipgate run); see the comment", STATUS_LIMIT)


def base_moved_description(judged: str, now: str) -> str:
    return shorten(f"no verdict: the base changed ({judged} → {now}) during the run; see the "
                   "new base's run", STATUS_LIMIT)


# -- comments ----------------------------------------------------------------

def base_moved_comment(*, head_sha: str, judged: str, now: str) -> str:
    """The sticky comment of a run whose pull request moved to another base meanwhile."""
    return (f"### flipgate has no verdict for this base\n\n"
            f"{inline_code(short(head_sha))} was judged against {inline_code(judged)}, but the "
            f"pull request now targets {inline_code(now)}: a verdict about a base that is gone "
            "is not kept, and the commit status says `error`. The run for the new base "
            "decides (or comment `/flipgate run`).\n")


def head_code_refused_comment(*, head_sha: str, why: str) -> str:
    """The sticky comment of a head whose own code (`generator.command`) may not run."""
    return ("### flipgate did not run this pull request's code\n\n"
            f"The generator is the application's own code, and {inline_code(short(head_sha))} "
            f"was not run: {escape_md(why)}. Nothing was started, no model was called, and the "
            "commit status says `error` (docs/security.md, \"The application's own code\").\n")


def refused_base_comment(*, head_sha: str, refused: Refused) -> str:
    """The sticky comment of a pull request whose base the repository does not trust."""
    return (f"### flipgate did not judge this pull request\n\n"
            f"The base {inline_code(refused.base)} was refused for {inline_code(short(head_sha))}: "
            f"{escape_md(refused.why)}. Nothing was "
            f"gated, no model was called, and the commit status says `error`.\n\n"
            + ("A maintainer can commit a configuration to that base (if "
               f"{inline_code(SETTING)} names it), or retarget the pull request to a configured "
               "trusted base" if refused.unconfigured else
               f"Retarget the pull request to a trusted base, or have a maintainer name this "
               f"base in {inline_code(SETTING)} of the default branch's configuration")
            + " (docs/security.md).\n")



def could_not_run_comment(*, head_sha: str, kind: str, detail: str) -> str:
    """The sticky comment's body when the check failed before it had a report."""
    return (f"### flipgate could not run\n\n"
            f"The check of {inline_code(short(head_sha))} stopped: {kind}. "
            f"Nothing was gated, and the commit status says `error`.\n\n"
            f"{code_block(detail)}\n\n"
            f"Fix the problem and push, or ask a maintainer for `/flipgate run`.\n")


def page_note(path: str) -> str:
    """The job summary's pointer to the page with every row (the workflow uploads it)."""
    return (f"\n\n---\n\n📄 **Every row**, with its query, the whole context, both answers and "
            f"the judge's output, is in `{path}`, in the artifact `{ARTIFACT_NAME}` the "
            "workflow uploads (docs/reviewing.md).\n")


def download_commands(*, repository: str, run_id: str | None, labels: bool) -> str:
    """The one download of this run's artifact, and (with labels) the one calibrate on it."""
    commands = [f"gh run download {run_id or 'RUN_ID'} -R {repository} -n {ARTIFACT_NAME} "
                f"-D {ARTIFACT_NAME}"]
    if labels:
        commands.append(f"flipgate calibrate --labels {ARTIFACT_NAME}/{LABELS_FILE}")
    return fence("\n".join(commands), 2_000, "sh")


def download_note(*, repository: str, run_id: str | None, labels: bool) -> str:
    """The job summary's last words after a check: how to get the whole review."""
    what = ("report.json, report.html, comment.md, answers.jsonl and labels.jsonl" if labels
            else "report.json, report.html, comment.md and answers.jsonl")
    then = (" and calibrate the judge against the labels given so far" if labels
            else "; `/flipgate label` lines add labels.jsonl for `flipgate calibrate`")
    return (f"\n\n📦 **The whole review** ({what}) is this run's artifact `{ARTIFACT_NAME}`. "
            f"Download it{then} (docs/labelling.md):\n\n"
            + download_commands(repository=repository, run_id=run_id, labels=labels) + "\n")


def labels_summary(*, recorded: int, kept: int, repository: str, run_id: str | None) -> str:
    """The job summary of a label command: what it recorded, and the one download and the
    one calibrate of its artifact (labels.jsonl with the judge's reading of each answer)."""
    return (f"🏷️ **{plural(recorded, 'label')} recorded**; the pull request keeps "
            f"{plural(kept, 'label')}, all in `{LABELS_FILE}` of this run's artifact "
            f"`{ARTIFACT_NAME}`, with the judge's reading of each answer the comment's run has. "
            "Calibrate the judge on them (docs/labelling.md):\n\n"
            + download_commands(repository=repository, run_id=run_id, labels=True) + "\n")


def usage_reply(unknown: str | None) -> str:
    lead = f"I did not understand {inline_code('/flipgate ' + unknown)}.\n\n" if unknown else ""
    return lead + USAGE


def refusal_reply(*, author: str, permission: str, command: str = "run") -> str:
    done = "Nothing was run." if command == "run" else "Nothing was recorded."
    return (f"Sorry, {inline_code(author)} has {inline_code(permission)} access to this "
            f"repository; `/flipgate {command}` needs `write`, `maintain` or `admin`. "
            f"{done}\n")


def label_mistake_reply(why: str) -> str:
    """`why` is built by github/labels.py from checked words (code spans, no backticks)."""
    return f"Nothing was recorded: {why}.\n"


def label_batch_reply(*, recorded: Sequence[str], refused: Sequence[tuple[str, str]],
                      unread: int, set_aside: Sequence[str], limit: int) -> str:
    """The one reply to a comment of label lines: what was recorded (each `labelled LABEL
    by @USER` with its row), what was refused and why, and what was not read. Every piece
    was made safe for a code span by github/labels.py (`shown`)."""
    given = len(recorded) + len(refused) + unread
    parts = [f"Recorded {len(recorded):,} of the {given:,} labels in this comment"
             + (":" if recorded else ".")]
    parts += [f"- {text}" for text in recorded]
    if refused:
        parts += ["", "Not recorded:"]
        parts += [f"- `{line}`: {why}" for line, why in refused]
    if unread:
        parts += ["", f"{unread:,} more label lines were not read: a comment records at most "
                      f"{limit} labels; put the rest in another comment."]
    if set_aside:
        parts += ["", "Not obeyed, as a comment with labels records labels only: "
                      + ", ".join(f"`{line}`" for line in set_aside)
                      + " (post it in a comment of its own)."]
    return "\n".join(parts) + "\n"


def label_no_comment_reply() -> str:
    return ("Nothing was recorded: this pull request has no flipgate comment yet to keep "
            "labels in. Run the check first (push, or `/flipgate run`), then label its rows.\n")


def label_full_reply() -> str:
    return ("Nothing was recorded: the comment holds as many labels as it has room for. "
            "Collect `labels.jsonl` from the last run's outputs into the repository's labels "
            "file (see docs/labelling.md).\n")


def pinned_reply(*, evaluated: str, by: str, current_head: str) -> str:
    """The reply when the commit evaluated is not the PR's head now."""
    return (f"Evaluating {inline_code(evaluated)} ({by}). The pull request's head is now "
            f"{inline_code(current_head)}; commits pushed after the command are not evaluated "
            f"under it and keep their own status. For those, comment `/flipgate run` again, "
            f"or `/flipgate run {short(current_head)}` to name one.\n")


def unpinned_reply(why: str) -> str:
    """The reply when no commit may be evaluated under the command."""
    return (f"Nothing was run: {why}. Comment `/flipgate run` again once you have reviewed "
            f"the head as it is now, or name that head in full: `/flipgate run SHA`.\n")


def fork_cannot_run(pull: PullRequest) -> str:
    """Why a `pull_request` run from a fork does nothing (log and step summary)."""
    return (f"flipgate did not evaluate pull request #{pull.number}: its head comes from a "
            f"fork, and GitHub gives `pull_request` runs from forks neither secrets (no model "
            f"key) nor a token that may post comments or statuses. Use the "
            f"`pull_request_target` workflow from flipgate's guide, or have a maintainer "
            f"comment `/flipgate run` (handled by the `issue_comment` workflow).")


def await_command(pull: PullRequest, context: str) -> str:
    return (f"flipgate is waiting on pull request #{pull.number}: it comes from a fork and "
            f"`fork-policy` is `require-command`, so it is evaluated only when a maintainer "
            f"comments `/flipgate run`. The `{context}` status stays pending until then.")


# -- what the sticky comment says, in short ---------------------------------------

# Appended to "flipgate: comment <published>" in the log, where the word alone is unclear.
PUBLISHED_NOTES = {
    "same-verdicts": " (comment: on-change, and the verdicts are those the comment shows)",
    "disabled": " (comment: never; the step summary has the report)",
    "migrated": " (an older flipgate's comment, now marked with this gate's status context)",
    "not-created": " (nothing to gate, and no comment to update)",
}


def verdicts_fingerprint(report: Report, *, message: str | None = None) -> str:
    """A short hash of what a reviewer would call "the verdicts": the conclusion, every
    row's verdict, blocking flag and relevance drop, and why a run stopped. Scores,
    reasons and usage may change between runs without the verdicts changing."""
    rows = sorted((row.id, row.verdict.value, row.blocking, row.relevance_drop)
                  for row in report.rows if gate.kind_of(row) is not None)
    return _digest(json.dumps([report.conclusion.value, message or "", rows]))


def fingerprint_of_text(text: str) -> str:
    return _digest(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
