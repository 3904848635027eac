"""Cut both texts of a pair to a few tokens past the model's window before the pair is encoded.

A fast (Rust) tokenizer asked to truncate a *pair* keeps every combination of both texts'
overflow windows, so two 100 KB texts took 4.4 GB and two 1 MB texts over 23 GB. The model only
ever sees the first window's worth of each text, so each text is cut first, on its own (memory
linear in its length), at a word boundary a few tokens past the window; the pair encoding of the
cut texts then truncates to the same tokens the whole texts would have given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["MARGIN_TOKENS", "cut_pairs"]

#: Tokens kept past the window on each side, so the pair's own truncation (longest first) still
#: decides the split exactly as it would on the whole texts.
MARGIN_TOKENS = 16


def cut_pairs(tokenizer: Any, pairs: Sequence[tuple[str, str]], window: int) -> list[tuple[str, str]]:
    """``pairs`` with every text longer than ``window + MARGIN_TOKENS`` tokens cut there.

    Only fast tokenizers are asked (slow, pure-Python ones truncate pairs in linear memory); a
    text short enough in characters to be short in tokens is never tokenised here. When both
    texts of a pair are cut, the longer one keeps more tokens, so the pair's longest-first
    truncation trims the same side it would have trimmed on the whole texts.
    """
    if not getattr(tokenizer, "is_fast", False):
        return list(pairs)
    limit = window + MARGIN_TOKENS
    # a token covers at least one character, but a character may be up to 4 byte-level tokens
    texts = list(dict.fromkeys(t for pair in pairs for t in pair if len(t) > limit // 4))
    if not texts:
        return list(pairs)
    enc = tokenizer(texts, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False)
    lengths = {t: len(ids) for t, ids in zip(texts, enc["input_ids"], strict=True)}
    offsets = dict(zip(texts, enc["offset_mapping"], strict=True))

    def cut(text: str, keep: int) -> tuple[str, int]:
        """``text`` cut before the first word starting at token ``keep`` or later, and the tokens kept."""
        n = lengths.get(text, 0)
        if n <= keep:
            return text, n
        spans = offsets[text]
        for k in range(keep, n):
            start = spans[k][0]
            if start > 0 and (text[start - 1].isspace() or start > spans[k - 1][1]):
                return text[:start].rstrip(), k
        return text, n

    out = []
    for a, b in pairs:
        la, lb = lengths.get(a, 0), lengths.get(b, 0)
        if la > lb:  # the shorter side first; the longer keeps more tokens than it, as on the whole texts
            cb, kb = cut(b, limit)
            ca, _ = cut(a, max(limit, kb + 1))
        else:
            ca, ka = cut(a, limit)
            cb, _ = cut(b, max(limit, ka + 1) if lb > la else limit)
        out.append((ca, cb))
    return out
