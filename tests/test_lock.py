"""The lock the README's two commands install from (requirements/lock.txt, issue 25).

pyproject.toml keeps open ranges for library users; scripts/demo.sh and scripts/test.sh install
under the lock so a fresh clone gets the versions the suite passed with. These tests catch a lock
that has drifted from pyproject (a new dependency not pinned, a pin outside its range) and a
script that stopped using it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for n, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        assert m, f"requirements/lock.txt line {n}: not an exact pin: {line!r}"
        name = canonicalize_name(m.group(1))
        assert name not in pins, f"requirements/lock.txt line {n}: {name} pinned twice"
        pins[name] = Version(m.group(2))
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if canonicalize_name(r.name) != "nbeval"]


@pytest.mark.parametrize("req", _declared(), ids=str)
def test_every_declared_dependency_is_pinned_inside_its_range(req: Requirement) -> None:
    pins = _pins()
    name = canonicalize_name(req.name)
    assert name in pins, f"{req.name} is in pyproject.toml but not in requirements/lock.txt: run scripts/lock.sh"
    assert req.specifier.contains(pins[name], prereleases=True), (
        f"requirements/lock.txt pins {req.name}=={pins[name]}, outside pyproject's {req.specifier}: run scripts/lock.sh"
    )


def test_torch_is_the_cpu_build_on_disk() -> None:
    # an open or other pin would pull a multi-GB CUDA build on the CI machine
    assert _pins()["torch"] == Version("2.13.0")


@pytest.mark.parametrize("script", ["scripts/demo.sh", "scripts/test.sh"])
def test_the_readme_commands_install_under_the_lock(script: str) -> None:
    installs = [
        line
        for line in (ROOT / script).read_text(encoding="utf-8").splitlines()
        if re.search(r"\bpip install\b", line) and not line.lstrip().startswith("#")
    ]
    assert installs, f"{script} installs nothing"
    for line in installs:
        assert "-c requirements/lock.txt" in line, f"{script} installs without the lock: {line.strip()}"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci
    assert "./scripts/test.sh" in readme
