"""The offline extractor: deterministic, no model needed (the default without an LLM).

Sentences of the user's messages are split, questions and chit-chat dropped, and first-person
statements rewritten in the third person ("I live in Berlin" → "User lives in Berlin",
"My name is Bob" → "User's name is Bob"). A third-person statement is kept when it is about
someone named ("Alice works at Google"; "She uses Kubernetes" after it becomes "Alice uses
Kubernetes": `clauses.named_subject`), as is one already written about the user ("User
likes Python", as mem0's facts read); any other statement without a first-person subject
only when the user asked to remember it ("Remember that the deploy is on Fridays"). A clause
that only announces a change ("I moved") is no fact; the fact is what follows it ("I live in
Berlin now" → "User lives in Berlin": a memory is dated, "now" adds nothing).
"""

from __future__ import annotations

import re
from typing import Protocol

from platformcore.lib.text.clauses import named_subject, verb_of
from platformcore.lib.text.gazetteer import name_kind, words
from platformcore.lib.text.lexicon import MODALS, STATEMENT_VERBS


class Message(Protocol):
    """One message of a conversation (memories' `Message` is one)."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|when|where|why|how|which|is|are|am|was|were|do|does|did|can|"
    r"could|would|will|should|shall|may|might|have|has)\b",
    re.IGNORECASE,
)
_CHITCHAT = re.compile(
    r"^(?:hi|hello|hey|yo|thanks|thank you|thx|ok|okay|cool|great|nice|sure|yes|no|yep|nope|"
    r"bye|goodbye|good (?:morning|afternoon|evening|night)|see you|lol|hmm+|wow|awesome|"
    r"sounds good|got it|no problem|you're welcome|i see|alright|perfect|welcome)"
    r"(?:[\s,!.]+(?:there|again|so much|a lot|man|buddy|everyone|all|you))*[\s!.]*$",
    re.IGNORECASE,
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget)(?:\s+that)?[\s:,]+",
    re.IGNORECASE,
)
_CLAUSES = re.compile(
    r",?\s+(?:and|but|so|while|whereas)\s+(?=I\b|I'm\b|I've\b|my\b)|;\s+|,\s+(?=I\b|I'm\b|I've\b)"
)
# ", and Bob works at Meta": a clause of its own when a verb follows the name
_NAMED_CLAUSE = re.compile(
    r",?\s+(?:and|but|while|whereas)\s+(?=[A-Z][\w'-]{0,40}\s+([a-z']{1,20}))"
)
# announces a change without saying what it is: the next clause says it
_CHANGE_ONLY = re.compile(
    r"^(?:I|User)\s+(?:have\s+|has\s+|just\s+|recently\s+|finally\s+)*(?:moved|relocated|"
    r"changed jobs|switched jobs|changed teams|moved house|moved out)$|^things (?:have )?changed$",
    re.IGNORECASE,
)
_NOW = re.compile(
    r"\s+(?:now|nowadays|these days|at the moment|right now|currently)$"
    r"|(?<=^User)\s+(?:now|currently)(?=\s)",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"^(?:he|she)\b", re.IGNORECASE)
# "User likes Python", "The user's name is Bob": a fact already written about the user
_ABOUT_USER = re.compile(r"^(?:the\s+)?user(?='s\s|\s+([a-z']+)(?:\s+([a-z']+))?)", re.IGNORECASE)
_USER_AUXILIARIES = words(
    """is was has had does did am are doesn't isn't hasn't wasn't didn't never always also
    really now just still often usually recently currently no"""
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|myself)\b", re.IGNORECASE)

# verbs that do not take an -s in the third person, and irregular forms
_IRREGULAR = {
    "am": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "was": "was",
    "can": "can",
    "could": "could",
    "will": "will",
    "would": "would",
    "should": "should",
    "shall": "shall",
    "may": "may",
    "might": "might",
    "must": "must",
    "don't": "doesn't",
    "dont": "doesn't",
    "can't": "can't",
    "won't": "won't",
    "didn't": "didn't",
    "wasn't": "wasn't",
    "haven't": "hasn't",
    "am not": "is not",
}
_CONTRACTIONS = [
    (re.compile(r"\bI'm\b", re.IGNORECASE), "I am"),
    (re.compile(r"\bI've\b", re.IGNORECASE), "I have"),
    (re.compile(r"\bI'd\b", re.IGNORECASE), "I would"),
    (re.compile(r"\bI'll\b", re.IGNORECASE), "I will"),
]
_ADVERBS = (
    r"(?:(?:really|also|usually|always|never|just|now|still|often|mostly|actually|"
    r"currently|recently|definitely|absolutely|strongly|sometimes|no longer|even)\s+)*"
)
_SUBJECT_VERB = re.compile(rf"^I\s+({_ADVERBS})([A-Za-z']+)(.*)$", re.DOTALL)
_LEADING = re.compile(
    r"^(?:(?:well|so|also|oh|btw|by the way|actually|and|but|anyway|fyi|honestly|ok|okay|"
    r"yeah|yes|no|hi|hello|hey)[\s,]+)+",
    re.IGNORECASE,
)
_PAST_OR_MODAL = re.compile(r"(?:ed|'t)$")
# irregular past tenses: "I went" is "User went", not "User wents"
_PAST_TENSES = (
    "ate became began bought brought built came caught chose did drank drove fell felt flew "
    "forgot found gave got grew had heard held kept knew left lent lost made met paid ran "
    "rode sang sat saw sent shot slept sold spent spoke stood stole swam took taught "
    "thought told threw understood went woke won wore wrote"
)
_IRREGULAR_PAST = frozenset(_PAST_TENSES.split())


def _third_person(verb: str) -> str:
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    third_person = lower.endswith("s") and not lower.endswith("ss")
    if lower in _IRREGULAR_PAST or _PAST_OR_MODAL.search(lower) or third_person:
        return verb  # "moved", "didn't", already inflected
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


def rewrite_first_person(sentence: str) -> str:
    """ "I love my dog" → "User loves their dog"; "My name is Bob" → "User's name is Bob"."""
    text = sentence
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    match = _SUBJECT_VERB.match(text)
    if match:
        adverbs, verb, rest = match.groups()
        if verb.lower() == "am" and rest.lower().startswith(" not"):
            text = f"User {adverbs}is{rest}"
        else:
            text = f"User {adverbs}{_third_person(verb)}{rest}"
    text = re.sub(r"^My\b", "User's", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:I am)\b", "User is", text)
    text = re.sub(r"\bI\b", "User", text)
    if not text.startswith("User"):  # "Sarah is my manager": "their" would be Sarah's
        text = re.sub(r"\bmy\b", "User's", text, flags=re.IGNORECASE)
        return re.sub(r"\bme\b", "User", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmine\b", "theirs", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmy\b", "their", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", "them", text, flags=re.IGNORECASE)
    return text


def _clean(sentence: str) -> str:
    sentence = _LEADING.sub("", sentence.strip().strip("\"'")).strip()
    sentence = re.sub(r"\s+", " ", sentence).rstrip(".!;,: ").strip()
    return sentence[:1].upper() + sentence[1:] if sentence else sentence


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence.strip()))


def sentence_to_fact(sentence: str, last_person: str | None = None) -> str | None:
    """The fact a sentence or clause states, or None. `last_person` is who "he"/"she" is."""
    raw = sentence.strip()
    if not raw or _is_question(raw) or _CHITCHAT.match(raw):
        return None
    remembered = _REMEMBER.match(raw)
    text = _clean(raw[remembered.end() :] if remembered else raw)
    if not text or _CHITCHAT.match(text) or len(text.split()) < 2 or _CHANGE_ONLY.match(text):
        return None
    if last_person and _PRONOUN.match(text):
        text = _PRONOUN.sub(last_person, text)
    if _FIRST_PERSON.search(text):
        return _NOW.sub("", rewrite_first_person(text))
    if _about_user(text):
        return _NOW.sub("", _ABOUT_USER.sub("User", text, count=1))
    if remembered or named_subject(text, kind_of=name_kind):
        return _NOW.sub("", text)
    return None


def _about_user(text: str) -> bool:
    """ "User likes Python" is about the user; "User interface is slow" is not."""
    match = _ABOUT_USER.match(text)
    if match is None:
        return False
    word = (match.group(1) or "'s").casefold()
    if word == "'s" or word in _USER_AUXILIARIES or word in STATEMENT_VERBS or word in MODALS:
        return True
    if word.endswith("ed") or verb_of(word) is not None:
        return True
    plural_noun = (match.group(2) or "").casefold() in ("are", "were", "have", "do")
    return word.endswith("s") and not word.endswith("ss") and not plural_noun


def _inflected(word: str) -> bool:
    """A verb with a third-person or past ending ("works", "moved"): "and Bob works at" is a
    clause of its own, "Ahmed and Ali work at" is one subject."""
    verb = verb_of(word)
    return verb is not None and (verb.past or word.casefold() != verb.lemma)


def _clauses(sentence: str) -> list[str]:
    """First-person clauses, then clauses that open with a name and a verb."""
    clauses = []
    for clause in _CLAUSES.split(sentence):
        start = 0
        for match in _NAMED_CLAUSE.finditer(clause):
            if _inflected(match.group(1)):
                clauses.append(clause[start : match.start()])
                start = match.end()
        clauses.append(clause[start:])
    return _merged([clause for clause in clauses if clause and clause.strip()])


def _merged(clauses: list[str]) -> list[str]:
    """ "Jane and I work together": a part without a verb is the start of the next one."""
    out: list[str] = []
    pending = ""
    for clause in clauses:
        words = clause.split()
        if len(words) <= 2 and not any(verb_of(word) for word in words):
            pending += clause + " and "
            continue
        out.append(pending + clause.lstrip() if pending else clause)
        pending = ""
    return out + ([pending.removesuffix(" and ")] if pending else [])


REPLY_CONTEXT_CHARS = 300


def extract_facts_offline(messages: list[Message]) -> dict[str, str]:
    """{fact: what it replied to} for the facts stated by the user, in order, without
    repeats. What it replied to is the message before the one the fact came from, as
    `role: content` cut at REPLY_CONTEXT_CHARS ('' for an opening message): it becomes the
    memory's context, which keyword search reads and the embedding does not, so "I went
    there yesterday" after "Did you visit the Louvre?" is found by "Louvre" (an answer often
    lacks the words of its question: on LoCoMo, the previous turn in the context took
    keyword recall@10 from 0.641 to 0.709; docs/benchmarks.md)."""
    facts: dict[str, str] = {}
    seen: set[str] = set()
    previous: Message | None = None
    for message in messages:
        if message.role == "user":
            context = _reply_context(previous)
            last_person: str | None = None
            for sentence in _SENTENCES.split(message.content):
                # one space between words: the clause patterns then never rescan a long run
                for clause in _clauses(" ".join(sentence.split())):
                    fact = sentence_to_fact(clause, last_person)
                    if fact is None:
                        continue
                    last_person = _person_of(fact) or last_person
                    if fact.casefold() not in seen:
                        seen.add(fact.casefold())
                        facts[fact] = context
        if message.content.strip():
            previous = message
    return facts


def _person_of(fact: str) -> str | None:
    """Who a third-person fact is about, if a person ("he"/"she" next refers to them)."""
    if fact.startswith("User"):
        return None
    name = named_subject(fact, kind_of=name_kind)
    return name if name and name_kind(name) in (None, "person") else None


def _reply_context(message: Message | None) -> str:
    if message is None:
        return ""
    text = " ".join(message.content.split())
    if len(text) > REPLY_CONTEXT_CHARS:
        text = text[: REPLY_CONTEXT_CHARS - 1].rstrip() + "…"
    return f"{message.role}: {text}"


_TYPE_CUES = [
    ("preference", r"\b(?:prefers?|likes?|loves?|enjoys?|hates?|dislikes?|favou?rite|wants?)\b"),
    ("error", r"\b(?:error|exception|bug|crash(?:es|ed)?|fail(?:s|ed|ure)?|broke|traceback)\b"),
    ("decision", r"\b(?:decided|chose|chosen|will use|going to use|agreed|settled on)\b"),
    ("procedure", r"\b(?:to \w+ (?:run|use|do)|first\b.*\bthen\b|steps?|run `|workflow)\b"),
]


def infer_memory_type(fact: str) -> str:
    for memory_type, pattern in _TYPE_CUES:
        if re.search(pattern, fact, re.IGNORECASE):
            return memory_type
    return "fact"
