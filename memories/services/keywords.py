"""Keywords of a text when its writer gives none: the most frequent content words.

Term frequency over lowercased words of three letters or more, without English stopwords;
ties go to the word seen first. Memento extracts a fragment's keywords this way (its top
five), and recall by keyword matches these, not only the text.
"""

from __future__ import annotations

import re
from collections import Counter

STOPWORDS = frozenset(  # a word list reads better as prose than as a list of strings
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves user users uses use used using one every get got new""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]{3,}", re.UNICODE)


def extract_keywords(text: str, limit: int = 5) -> list[str]:
    """Up to `limit` keywords of `text`, most frequent first."""
    words = [w.lower() for w in _WORD.findall(text)]
    counts = Counter(w for w in words if len(w) >= 3 and w not in STOPWORDS)
    first = {word: index for index, word in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda word: (-counts[word], first[word]))
    return ranked[:limit]
