"""The image's locks stay in step with pyproject.toml, and the Dockerfile installs from them.

A dependency added to pyproject.toml without `scripts/lock-image` would only fail in the
image build; these tests say so in the test suite, naming the package.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "requirements"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def pins(lock: str) -> dict[str, str]:
    """Package name -> version; every pin must carry at least one sha256 hash."""
    found: dict[str, str] = {}
    text = (LOCKS / lock).read_text()
    for entry in re.split(r"\n(?=\S)", text):  # a pin and its indented hash lines
        pin = _PIN.match(entry)
        if pin is None:
            continue
        assert _HASH.search(entry), f"{lock}: {pin['name']} has no hash"
        found[canonicalize_name(pin["name"])] = pin["version"]
    return found


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def unmet(requirements: list[str], locked: dict[str, str]) -> list[str]:
    problems = []
    for text in requirements:
        requirement = Requirement(text)
        version = locked.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name}: not locked")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}: locked {version}, wants {requirement.specifier}")
    return problems


@pytest.mark.parametrize("lock, requirements", [
    ("image.txt", lambda p: p["project"]["dependencies"]),
    ("image-azure.txt", lambda p: p["project"]["dependencies"]
     + p["project"]["optional-dependencies"]["azure"]),
    ("build.txt", lambda p: p["build-system"]["requires"]),
], ids=["image", "image-azure", "build"])
def test_every_requirement_is_locked_at_a_version_it_allows(lock, requirements) -> None:
    assert unmet(requirements(pyproject()), pins(lock)) == [], "run scripts/lock-image"


def test_the_azure_lock_keeps_the_plain_locks_pins() -> None:
    plain, azure = pins("image.txt"), pins("image-azure.txt")
    assert {name: azure.get(name) for name in plain} == plain


def test_the_dockerfile_pins_its_base_and_installs_only_from_the_locks() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.M)
    assert base and re.fullmatch(r"\S+:3\.12-slim-bookworm@sha256:[0-9a-f]{64}", base[1])
    assert dockerfile.count("FROM ${BASE_IMAGE}") == 2
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert installs and all("--require-hashes" in line or "--no-index" in line
                            for line in installs)
    # The variants share every layer up to the azure one.
    shared = dockerfile.index("-r /tmp/requirements/image.txt")
    assert shared < dockerfile.index("ARG WITH_AZURE") < dockerfile.index("image-azure.txt")
