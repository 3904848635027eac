"""``%nbeval generate``: a word that names no variable is a path, and a missing one is an error
naming it, never a one-line document whose text is the word."""

from __future__ import annotations

from typing import Any

from tests.generation.corpus import LEAVE


def test_the_magic_refuses_a_document_that_is_neither_a_variable_nor_a_file(shell: Any) -> None:
    ran = shell.cell("%nbeval generate handbook -n 2 --dry-run")
    assert not ran.success
    assert "handbook: no such file or folder" in ran.stdout + ran.stderr
    shell.ns["handbook"] = [{"content": LEAVE, "doc_uri": "leave.md"}]
    ran = shell.cell("%nbeval generate handbook -n 2 --dry-run")
    assert ran.success and "generate 2 test cases" in ran.stdout, ran.stdout + ran.stderr
