"""Token counts for budgets. No tokenizer ships offline, so we approximate.

The approximation is Memento's: about four characters per token for English text
(cl100k_base averages 3.8-4.2 on prose). It is stored per memory at write time, so a
budget is a sum over stored integers, never a tokenizer call at read time.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN)) if text else 0
