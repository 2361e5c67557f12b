"""Single-valued attributes of a fact ("where the user lives", "the user's name"...).

Two facts about the same slot with different values cannot both be true now: the newer one
updates the older (offline decisions) or the pair is a contradiction candidate. Multi-valued
statements ("User likes Python", "User likes Go") deliberately have no slot. A fact about
someone named has the same slots, per person: "Bob works at Meta" updates "Bob works at
Google" (slot `employer@bob`), "Carlos lives in Madrid" leaves "Laura lives in Madrid" alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from platformcore.lib.text.clauses import named_subject
from platformcore.lib.text.gazetteer import name_kind

_SUBJECT = r"(?:user|the user|i)"
_SLOT_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "location",
        re.compile(
            rf"^{_SUBJECT}(?: has| have| just| recently)? (?:lives?|living|resides?|is based|"
            r"am based|is located|moved|relocated|is moving|am moving|has moved|is now living|"
            r"now lives?) (?:in|to|at) (?P<value>.+)$"
        ),
    ),
    (
        "employer",
        re.compile(
            rf"^{_SUBJECT}(?: now| currently)? (?:works?|is working|am working|started working|"
            r"joined|is employed|am employed)(?: (?:at|for|in|with|as))? (?P<value>.+)$"
        ),
    ),
    ("name", re.compile(rf"^(?:{_SUBJECT}'s|my) name is (?P<value>.+)$")),
    ("name", re.compile(rf"^{_SUBJECT} (?:is called|am called|goes by|go by) (?P<value>.+)$")),
    ("age", re.compile(rf"^{_SUBJECT} (?:is|am|turned) (?P<value>\d+)(?: years old)?$")),
    (
        "favourite",
        re.compile(
            rf"^(?:{_SUBJECT}'s|my) favou?rite (?P<key>[\w\s-]+?) (?:is|are) (?P<value>.+)$"
        ),
    ),
    (
        "attribute",
        re.compile(r"^(?P<key>(?:user's|my|our|the) [\w\s-]+?) (?:is|are) (?:now )?(?P<value>.+)$"),
    ),
]


@dataclass(frozen=True)
class Slot:
    name: str
    value: str


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().rstrip(".!").strip()).casefold()


def fact_slot(text: str) -> Slot | None:
    clean = normalise(text)
    slot = _user_slot(clean)
    if slot is not None or clean.startswith(("user", "i ", "my ", "the user")):
        return slot
    subject = named_subject(text.strip(), kind_of=name_kind)
    prefix = subject.casefold() + " " if subject else ""
    if not prefix or not clean.startswith(prefix):
        return None
    slot = _user_slot("user " + clean[len(prefix) :])
    if slot is None or slot.name.startswith("attribute"):
        return None
    return Slot(f"{slot.name}@{subject.casefold()}", slot.value)


def _user_slot(clean: str) -> Slot | None:
    for name, pattern in _SLOT_PATTERNS:
        match = pattern.match(clean)
        if match is None:
            continue
        groups = match.groupdict()
        key = groups.get("key")
        if key and key.startswith(("my ", "user's ")):
            key = key.split(" ", 1)[1]
        slot_name = f"{name}:{key.strip()}" if key else name
        return Slot(slot_name, groups["value"].strip())
    return None
