"""The way in: the README stays short, its two commands stay true, and every link between
the README and docs/ lands on a file and a heading that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "tests" / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def sh_blocks(page: Path) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def test_the_readme_is_at_most_20_kb() -> None:
    assert len(README.read_bytes()) <= 20 * 1024


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {target.split("#")[0] for target in links(README)}
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert pages and pages <= linked, f"not linked from README.md: {sorted(pages - linked)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_lands_on_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    assert broken == []


def test_the_first_command_is_the_offline_demo() -> None:
    first = sh_blocks(README)[0].strip()
    install, _, demo = first.rpartition(" && ")
    assert install == "python3 -m venv .venv && .venv/bin/pip install -q -e ."
    args = shlex.split(demo)
    assert args[0] == ".venv/bin/flipgate" and args[1] == "gate"
    assert args[args.index("--judge") + 1] == "offline"
    for flag in ("--cases", "--baseline", "--candidate", "--config"):
        assert (ROOT / args[args.index(flag) + 1]).is_file(), flag


def test_the_second_command_is_what_ci_runs() -> None:
    """Every step of the README's test command is a command `.ci/run` runs, in the same
    order (it may check more between them: the layer contract, the types)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_steps = [step.strip() for line in ci.splitlines() if line.strip() and not line.startswith("#")
                for step in line.split(" && ")]
    readme_steps = [step.strip() for step in sh_blocks(README)[1].strip().split(" && ")]
    assert readme_steps[-1] == ".venv/bin/pytest -q"
    positions = [ci_steps.index(step) if step in ci_steps else -1 for step in readme_steps]
    assert -1 not in positions and positions == sorted(positions), (readme_steps, ci_steps)
