"""Every built-in PII pattern reads a quarter of a megabyte of hostile text in one pass.

A backtracking pattern is quadratic on these inputs: 64 kB already cost the old email pattern
2 s, so 256 kB takes it half a minute or more per case, and a pathological pattern hangs this
test instead of finishing in a fraction of a second. No timing
is asserted (the machine's load is not ours); the figures are in docs/security.md."""

from __future__ import annotations

import pytest

from memories.services.pii import BUILTIN_PATTERNS, _compile, _masker

SIZE = 256_000


def _fill(unit: str) -> str:
    return unit * (SIZE // len(unit))


# Runs of each pattern's characters without the thing that would end a match, and many
# starts of a match that never completes.
HOSTILE = {
    "word run": _fill("a"),
    "dash run": _fill("-a"),
    "at signs": _fill("a@"),
    "dots then at": _fill("x.") + "@",
    "jwt starts": _fill("-eyJ"),
    "jwt segments": _fill("eyJa."),
    "key prefixes": _fill("sk-"),
    "platform key prefixes": _fill("mp_1234abcd_"),
    "pairs": _fill("a="),
    "secret pairs": _fill("token="),
    "open quotes": 'token="' + _fill("b="),
    "spaces after a key": "password" + _fill(" "),
    "bearers": _fill("bearer "),
    "plus signs": _fill("+1 "),
    "digits": _fill("1"),
    "zero width": _fill("a\u200b"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILTIN_PATTERNS))
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_pattern_reads_a_quarter_megabyte_of_hostile_text_in_one_pass(name, kind):
    pattern, replacement = BUILTIN_PATTERNS[name]
    compiled = _compile(pattern)
    assert compiled is not None
    masked = _masker(compiled, replacement)(HOSTILE[kind])
    assert isinstance(masked, str)


def test_hostile_text_passes_every_pattern_at_once():
    # the quick run's share of the check above: one input through the whole chain
    for pattern, replacement in BUILTIN_PATTERNS.values():
        compiled = _compile(pattern)
        assert compiled is not None
        _masker(compiled, replacement)(HOSTILE["open quotes"])
