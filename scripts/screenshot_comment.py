"""Screenshot flipgate's comment as a reviewer sees it: cmark-gfm's HTML in headless Chromium.

    .venv/bin/python scripts/screenshot_comment.py [COMMENT.md] [--out DIR] [--width 900] [--safe]

Without COMMENT.md it runs the bundled example (examples/cards, offline
judge) first. It writes two PNGs to DIR (default `flipgate-out/screenshots`):
`comment.png` as the comment opens (evidence blocks collapsed) and
`comment-open.png` with every `<details>` open, and prints the page's width
and height. It exits 1 when the page, or any table in it, is wider than the
window: something in the comment does not fit GitHub's comment width (GitHub
cuts a wide table off and scrolls it sideways). With `--safe` it renders as a
renderer that drops raw HTML does (cmark-gfm's safe mode), into `comment-safe.png`.

Needs the test extra (`cmarkgfm`, GitHub's Markdown engine) and Chromium
(Debian: `apt-get install -y chromium`). The CSS below is a small
approximation of GitHub's own; the HTML is cmark-gfm's, with GitHub's
extensions, exactly as the tests render it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTENSIONS = ["table", "autolink", "strikethrough", "tasklist"]

CSS = """
body { margin: 0; background: #fff; }
.comment { box-sizing: border-box; width: 100%; padding: 16px; border: 1px solid #d0d7de;
  border-radius: 6px; }
.markdown-body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans",
  Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5; color: #1f2328;
  word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; font-weight: 600; padding-bottom: .3em;
  border-bottom: 1px solid #d1d9e0b3; margin: 0 0 16px; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body table, .markdown-body details,
.markdown-body pre { margin: 0 0 16px; }
.markdown-body ul { padding-left: 2em; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body summary { cursor: pointer; }
.markdown-body details > :not(summary) { margin-left: 4px; }
.markdown-body code, .markdown-body pre { font-family: ui-monospace, SFMono-Regular,
  "SF Mono", Menlo, Consolas, monospace; font-size: 85%; background: #818b981f;
  border-radius: 6px; }
.markdown-body pre { padding: 16px; overflow: auto; }
.markdown-body del { color: #8c959f; }
.markdown-body ins { text-decoration: underline; text-decoration-color: #1a7f37; }
.markdown-body sub { color: #59636e; }
"""

# After load, the page writes its size, and how many tables are cut off at its width
# (GitHub scrolls those sideways), into its title, which --dump-dom prints.
MEASURE = ("<script>addEventListener('load', () => { const e = document.documentElement; "
           "const cut = [...document.querySelectorAll('table')]"
           ".filter(t => t.scrollWidth > t.clientWidth + 1).length; "
           "document.title = `size:${e.scrollWidth}x${e.scrollHeight}:cut:${cut}`; });</script>")


def render_example(out: Path) -> Path:
    """The bundled example's comment.md, written by the real CLI (offline judge)."""
    command = [sys.executable, "-m", "flipgate", "gate",
               "--cases", str(ROOT / "examples/cards/cases.jsonl"),
               "--baseline", str(ROOT / "examples/cards/baseline.jsonl"),
               "--candidate", str(ROOT / "examples/cards/candidate.jsonl"),
               "--config", str(ROOT / "examples/cards/.flipgate.yml"),
               "--judge", "offline", "--no-cache", "--out", str(out)]
    subprocess.run(command, check=False, capture_output=True, text=True)
    comment = out / "comment.md"
    if not comment.is_file():
        raise SystemExit("the example run wrote no comment.md")
    return comment


def page(markdown: str, *, open_details: bool, safe: bool = False) -> str:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    body = cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=0 if safe else Options.CMARK_OPT_UNSAFE, extensions=EXTENSIONS)
    if open_details:
        body = body.replace("<details>", "<details open>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>comment</title>"
            f"<style>{CSS}</style>{MEASURE}</head><body><div class='comment markdown-body'>"
            f"{body}</div></body></html>")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    raise SystemExit("Chromium not found (Debian: apt-get install -y chromium)")


def run_chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--hide-scrollbars", f"--user-data-dir={profile}"]
    return subprocess.run([chromium(), *flags, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def measure(html_file: Path, width: int, profile: Path) -> tuple[int, int, int]:
    """(page width, page height, tables cut off at the width)."""
    done = run_chromium([f"--window-size={width},800", "--dump-dom", html_file.as_uri()], profile)
    found = re.search(r"<title>size:(\d+)x(\d+):cut:(\d+)</title>", done.stdout)
    if not found:
        raise SystemExit(f"Chromium did not report the page size:\n{done.stderr[-2000:]}")
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def screenshot(html_file: Path, png: Path, width: int, profile: Path) -> tuple[int, int, int]:
    page_width, height, cut = measure(html_file, width, profile)
    run_chromium([f"--window-size={width},{height}", f"--screenshot={png}",
                  html_file.as_uri()], profile)
    if not png.is_file():
        raise SystemExit(f"Chromium wrote no {png}")
    return page_width, height, cut


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("comment", nargs="?", type=Path, help="a comment.md (default: the example's)")
    parser.add_argument("--out", type=Path, default=ROOT / "flipgate-out" / "screenshots")
    parser.add_argument("--width", type=int, default=900, help="window width in CSS pixels")
    parser.add_argument("--safe", action="store_true",
                        help="also render with raw HTML dropped (cmark-gfm's safe mode)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flipgate-shot-") as tmp:
        work = Path(tmp)
        comment = args.comment or render_example(work / "example")
        markdown = comment.read_text(encoding="utf-8")
        too_wide = False
        shots = [("comment", False, False), ("comment-open", True, False)]
        for name, open_details, safe in shots + ([("comment-safe", False, True)] if args.safe else []):
            html_file = work / f"{name}.html"
            html_file.write_text(page(markdown, open_details=open_details, safe=safe),
                                 encoding="utf-8")
            png = args.out / f"{name}.png"
            page_width, height, cut = screenshot(html_file, png, args.width, work / "profile")
            print(f"{png}: {page_width}x{height} px (window {args.width} px wide), "
                  f"{cut} tables cut off")
            too_wide |= page_width > args.width or cut > 0
    if too_wide:
        print("something is wider than the window (the page, or a table GitHub would "
              "scroll sideways)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
