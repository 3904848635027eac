"""Step extraction and alignment. Similarity matrices are built by hand from step labels, so every
expected count below is worked out on paper, independent of any embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from nbeval.evaluators.embedding.steps import Alignment, align_steps, extract_steps

# -- extraction --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. Open the lid.\n2. Pour water.\n3) Close it.", ["Open the lid.", "Pour water.", "Close it."]),
        ("(1) Open the lid\n(2) Pour water", ["Open the lid", "Pour water"]),
        (
            "Step 1: Unplug the router.\nStep 2: Wait ten seconds.\nStep 3 - Plug it back in.",
            ["Unplug the router.", "Wait ten seconds.", "Plug it back in."],
        ),
        ("**Step 1:** Open the app\n**Step 2:** Tap Settings", ["Open the app", "Tap Settings"]),
        ("## 1. Install\n## 2. Configure", ["Install", "Configure"]),
        ("- Open the lid\n* Pour water\n• Close it", ["Open the lid", "Pour water", "Close it"]),
        # continuation lines and nested bullets belong to their step; text after a blank line does not
        (
            "Do this:\n1. Open the lid.\n   Make sure it is cool.\n2. Pour water.\n   - slowly\n\nEnjoy.",
            ["Open the lid. Make sure it is cool.", "Pour water. slowly"],
        ),
        # numbered items win over bullets at the margin
        ("1. Boil water\n- use a kettle\n2. Add tea", ["Boil water use a kettle", "Add tea"]),
        ("1.\nPreheat the oven\n2.\nMix the flour", ["Preheat the oven", "Mix the flour"]),
        (
            "To reset it: 1. Unplug it. 2. Wait ten seconds. 3. Plug it in.",
            ["Unplug it.", "Wait ten seconds.", "Plug it in."],
        ),
        ("Step 1: unplug it Step 2: wait Step 3: plug it in", ["unplug it", "wait", "plug it in"]),
        (
            (
                "First, preheat the oven. Then mix the flour and sugar. Add the eggs. Next, pour it into a tin. "
                "Finally, bake for 30 minutes. Enjoy!"
            ),
            [
                "preheat the oven.",
                "mix the flour and sugar. Add the eggs.",
                "pour it into a tin.",
                "bake for 30 minutes.",
            ],
        ),
        (
            "First preheat the oven, then mix the flour, and finally bake it.",
            ["preheat the oven", "mix the flour", "bake it."],
        ),
        (
            "Firstly, log in. Secondly, open the report. Lastly, export it.",
            ["log in.", "open the report.", "export it."],
        ),
    ],
)
def test_extract(text: str, expected: list[str]) -> None:
    assert extract_steps(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        None,
        "No procedure here. Just prose.",
        "Then he left. Next day he came back.",
        "It costs 1.5 dollars and weighs 2.3 kg.",
    ],
)
def test_extract_nothing(text: str | None) -> None:
    assert extract_steps(text) == []


def test_single_numbered_step_is_kept() -> None:
    assert extract_steps("1. Just one thing to do") == ["Just one thing to do"]


# -- alignment ---------------------------------------------------------------------------------

HIGH, REWORDED, LOW = 1.0, 0.8, 0.1


def sim_from_labels(
    context: list[str], answer: list[str], reworded: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset()
) -> np.ndarray:
    """1.0 for the same label, 0.8 for a declared rewording, 0.1 otherwise."""
    sim = np.full((len(context), len(answer)), LOW)
    for i, c in enumerate(context):
        for j, a in enumerate(answer):
            if c == a:
                sim[i, j] = HIGH
            elif (c, a) in reworded:
                sim[i, j] = REWORDED
    return sim


def counts(al: Alignment) -> tuple[int, int, int, int]:
    return al.edits, al.insertions, al.deletions, al.mismatches


CTX = ["A", "B", "C", "D"]


@pytest.mark.parametrize(
    ("answer", "reworded", "cutoff", "expected"),
    [
        # (edits, insertions = context steps missing, deletions = extra answer steps, mismatches)
        (["A", "B", "C", "D"], set(), 0.7, (0, 0, 0, 0)),  # identical
        (["A", "B", "D"], set(), 0.7, (1, 1, 0, 0)),  # skips C
        (["A", "C"], set(), 0.7, (2, 2, 0, 0)),  # skips B and D
        (["A", "B", "X", "C", "D"], set(), 0.7, (1, 0, 1, 0)),  # adds X
        # swaps A and B: keep B, C, D matched, drop the answer's A, insert the context's A
        (["B", "A", "C", "D"], set(), 0.7, (2, 1, 1, 0)),
        (["A", "b", "C", "D"], {("B", "b")}, 0.7, (0, 0, 0, 0)),  # B reworded, above the cut-off
        (["A", "b", "C", "D"], {("B", "b")}, 0.9, (1, 0, 0, 1)),  # same rewording, stricter cut-off
        (["A", "X", "C", "D"], set(), 0.7, (1, 0, 0, 1)),  # B replaced by an unrelated step
        # reversed: at most one pair can match (say C). Around it, context [A B] vs answer [D] costs
        # a mismatch and an insertion, context [D] vs answer [B A] a mismatch and a deletion: 4 edits,
        # the same as four mismatches, and the tie goes to the alignment that keeps a match
        (["D", "C", "B", "A"], set(), 0.7, (4, 1, 1, 2)),
        ([], set(), 0.7, (4, 4, 0, 0)),  # an answer without steps
    ],
)
def test_alignment_counts(answer: list[str], reworded: set, cutoff: float, expected: tuple) -> None:
    al = align_steps(sim_from_labels(CTX, answer, reworded), cutoff)
    assert counts(al) == expected


def test_combined_edits() -> None:
    """Context A B C D E; answer A X C E F: X replaces B (mismatch), D is skipped (insertion),
    F is extra (deletion): three edits; A, C, E match."""
    ctx, ans = list("ABCDE"), list("AXCEF")
    al = align_steps(sim_from_labels(ctx, ans), 0.7)
    assert counts(al) == (3, 1, 1, 1)
    assert al.matches == 3
    assert [op for op, *_ in al.ops] == ["match", "mismatch", "match", "insertion", "match", "deletion"]


def test_prefers_a_match_over_a_mismatch_at_equal_cost() -> None:
    """Context A B, answer B: 'insert A, match B' and 'mismatch A/B, insert B' both cost one edit;
    the one that keeps a match is chosen."""
    al = align_steps(sim_from_labels(["A", "B"], ["B"]), 0.7)
    assert al.ops == [("insertion", 0, None, None), ("match", 1, 0, 1.0)]


def test_empty_context() -> None:
    al = align_steps(np.zeros((0, 3)), 0.5)
    assert counts(al) == (3, 0, 3, 0)
    assert align_steps(np.zeros((0, 0)), 0.5).ops == []


def test_cutoff_is_inclusive() -> None:
    assert align_steps(np.array([[0.7]]), 0.7).matches == 1


def test_rejects_bad_matrix() -> None:
    with pytest.raises(ValueError, match="2-D"):
        align_steps(np.zeros(3), 0.5)


def test_describe_and_details() -> None:
    ctx = ["Open the lid", "Pour water", "Close it", "Wait"]
    ans = ["Open the lid", "Add sugar", "Close it"]
    sim = np.array([[1.0, 0.1, 0.1], [0.1, 0.3, 0.1], [0.1, 0.1, 0.95], [0.1, 0.1, 0.2]])
    al = align_steps(sim, 0.7)
    assert counts(al) == (2, 1, 0, 1)
    text = al.describe(ctx, ans)
    assert text.splitlines()[0].startswith("2 edit(s): 1 insertion(s), 0 deletion(s), 1 mismatch(es)")
    assert "context 2 vs answer 2 (0.30): Pour water / Add sugar" in text
    assert "context 4 missing from the answer: Wait" in text
    ops = al.to_dict()["ops"]
    assert isinstance(ops, list) and ops[0] == ["match", 0, 0, 1.0]


def test_describe_deletion_and_truncation() -> None:
    al = align_steps(np.zeros((0, 1)), 0.5)
    text = al.describe([], ["x" * 200], width=20)
    assert "answer 1 not in the context: " + "x" * 19 + "…" in text


def test_extracted_procedures_aligned_end_to_end() -> None:
    """Context as a numbered list, answer as prose that rewords one step, skips one and adds one."""
    context = "1. Unplug the router.\n2. Wait thirty seconds.\n3. Plug the router in.\n4. Check the lights."
    answer = "First, unplug the router. Then wait half a minute. Next, plug the router in. Finally, call support."
    c, a = extract_steps(context), extract_steps(answer)
    assert c == ["Unplug the router.", "Wait thirty seconds.", "Plug the router in.", "Check the lights."]
    assert a == ["unplug the router.", "wait half a minute.", "plug the router in.", "call support."]
    labels_c = ["unplug", "wait", "plug", "check"]
    labels_a = ["unplug", "wait~", "plug", "call"]
    sim = sim_from_labels(labels_c, labels_a, {("wait", "wait~")})
    al = align_steps(sim, 0.7)
    # unplug, wait~, plug match; 'check' vs 'call' is one substitution
    assert counts(al) == (1, 0, 0, 1)


# -- ties (issue 25): a rule, never float noise, picks between equally good pairings ------------


@pytest.mark.parametrize("noise", [0.0, 1e-7, -1e-7])
def test_a_repeated_answer_step_pairs_the_first(noise: float) -> None:
    # context [A], answer [A, A]: both answer steps match A; the earliest answer step is paired and
    # the second is the deletion, whichever of the two similarities float noise makes larger.
    sim = np.array([[1.0, 1.0 + noise]])
    al = align_steps(sim, 0.8)
    assert [(op, i, j) for op, i, j, _ in al.ops] == [("match", 0, 0), ("deletion", None, 1)]


@pytest.mark.parametrize("noise", [0.0, 1e-7, -1e-7])
def test_a_repeated_context_step_pairs_the_first(noise: float) -> None:
    # context [A, A], answer [A]: context step 1 is matched, context step 2 is missing.
    sim = np.array([[0.97], [0.97 + noise]])
    al = align_steps(sim, 0.8)
    assert [(op, i, j) for op, i, j, _ in al.ops] == [("match", 0, 0), ("insertion", 1, None)]


@pytest.mark.parametrize("noise", [0.0, 3e-7, -3e-7])
def test_ties_inside_a_longer_alignment(noise: float) -> None:
    # context [A, B, A], answer [A, B, A, B]: all three context steps match in order (0-0, 1-1,
    # 2-2), the answer's last B is the deletion. A second A at the same similarity does not move
    # the third match; a clearly better similarity (beyond the tolerance) still wins.
    a, b = 0.9, 0.3
    sim = np.array([[a, b, a + noise, b], [b, a, b, a + noise], [a + noise, b, a, b]])
    ops = [(op, i, j) for op, i, j, _ in align_steps(sim, 0.8).ops]
    assert ops == [("match", 0, 0), ("match", 1, 1), ("match", 2, 2), ("deletion", None, 3)]


def test_a_real_difference_beyond_the_tolerance_still_decides() -> None:
    # context [A], answer [A', A]: the second answer step is closer by 0.01, far beyond noise.
    al = align_steps(np.array([[0.90, 0.91]]), 0.8)
    assert [(op, i, j) for op, i, j, _ in al.ops] == [("deletion", None, 0), ("match", 0, 1)]
