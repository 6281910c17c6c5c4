"""ARCHITECTURE.md stays true: its layer table is the import-linter contract, and every
module or package it names exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "flipgate"
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    assert layers["containers"] == ["flipgate"]
    return [{name.strip() for name in re.split(r"[|:]", row)} for row in layers["layers"]]


def table_layers() -> list[set[str]]:
    table = TEXT.split("<!-- layers: begin -->")[1].split("<!-- layers: end -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    return [set(re.findall(r"`([^`]+)`", row.split("|")[2])) for row in rows]


def test_the_layer_table_is_the_import_linter_contract() -> None:
    assert table_layers() == contract_layers()


def test_every_top_level_module_and_package_has_a_layer() -> None:
    placed = set().union(*contract_layers())
    present = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert present == placed


def test_every_file_the_architecture_names_exists() -> None:
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)", TEXT))
    assert named, "the page names no module"
    missing = sorted(path for path in named
                     if not (ROOT / path if path.startswith("tests/") else PACKAGE / path).exists())
    assert missing == []


def test_the_page_stays_short() -> None:
    assert len(TEXT.splitlines()) <= 120


def test_the_top_stays_shallow_and_no_two_modules_share_a_name() -> None:
    assert len([p for p in PACKAGE.glob("*.py")]) <= 12
    seen: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py") or path.parent.name == "commands":
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]} share a name"
        seen[path.name] = path


def test_every_package_says_what_it_owns() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        text = init.read_text(encoding="utf-8").strip()
        assert text.startswith('"""'), f"{init} has no docstring"


def test_no_module_grows_past_800_lines() -> None:
    # A newcomer reads a module whole; past this, split it by job (CONTRIBUTING.md).
    long = {str(path.relative_to(PACKAGE)): lines for path in PACKAGE.rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}
