"""Offline: does a new fact explicitly end a state an older memory states?

Read conservatively, for the offline `add` to delete the older memory (docs/intelligence.md):

- an **ending** ("no longer", "not ... anymore", "stopped", "quit", "gave up", "used to") and
  every content word of the older memory in the new fact: "User no longer lives in Berlin"
  ends "User lives in Berlin", "User stopped drinking coffee" ends "User drinks coffee";
- a **change** ("started", "began", "became", "switched", "now", "again") to the opposite of
  a word of the older memory, whose other content words are all in the new fact: "User
  started eating meat again" ends "User is vegetarian".

Both need the same subject (the user, or the same name), and an older memory that is itself
negated is never ended. Anything weaker (a plain "does not like") stays a contradiction for
review: a heuristic should not remove what it only suspects is outdated.
"""

from __future__ import annotations

import re

from memories.services.contradictions import contradiction_cues
from memories.services.keywords import STOPWORDS
from platformcore.lib.text.clauses import named_subject
from platformcore.lib.text.gazetteer import name_kind, words
from platformcore.lib.text.slots import normalise

_ENDING = re.compile(
    r"\b(?:no longer|not any ?more|no more|any ?more|stopped|quit|quitted|gave up|given up|"
    r"used to)\b"
)
_CHANGE = re.compile(
    r"\b(?:started|starts|began|begun|became|becomes|switched|turned|now|again|anymore)\b"
)
_NEGATED = re.compile(r"\b(?:not|never|no|no longer|stopped|quit|used to)\b|n't\b")
_MARKER_WORDS = words(
    """longer anymore stopped quit quitted gave given started starts began begun became
    becomes switched turned again"""
)
_WORD = re.compile(r"[^\W\d_][\w-]*")
_SUFFIXES = ("ing", "es", "ed", "s", "e")


def ends_state(*, older: str, newer: str) -> bool:
    """Whether `newer` explicitly ends what `older` states (the rules above)."""
    old, new = normalise(older), normalise(newer)
    if _NEGATED.search(old) or not _same_subject(older, newer):
        return False
    old_words, new_words = _content(old), _content(new)
    if _ENDING.search(new) and old_words and old_words <= new_words:
        return True
    if not _CHANGE.search(new):
        return False
    opposed = {
        _stem(word)
        for cue in contradiction_cues(older, newer)
        if cue.startswith("antonym:")
        for word in cue.removeprefix("antonym:").split("/")
    }
    return bool(opposed & old_words) and (old_words - opposed) <= new_words


def _same_subject(a: str, b: str) -> bool:
    subject_a, subject_b = _subject(a), _subject(b)
    return subject_a is not None and subject_a == subject_b


def _subject(text: str) -> str | None:
    clean = normalise(text)
    if clean.startswith(("user ", "user's ", "the user ", "i ", "i'm ", "my ")):
        return "user"
    name = named_subject(text.strip(), kind_of=name_kind)
    return name.casefold() if name else None


def _content(text: str) -> set[str]:
    """The stems of a statement's content words: no stop words, no subject, no markers."""
    found = [word.removesuffix("'s") for word in _WORD.findall(text) if "n't" not in word]
    return {
        _stem(word)
        for word in found
        if word not in STOPWORDS and word not in _MARKER_WORDS and len(word) > 1
    }


def _stem(word: str) -> str:
    """A crude stem, enough to match "lives" / "living" / "live", "drinks" / "drinking"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
