"""The offline extractor: deterministic, no model needed (the default without an LLM).

Sentences of the user's messages are split, questions and chit-chat dropped, and first-person
statements rewritten in the third person ("I live in Berlin" → "User lives in Berlin",
"My name is Bob" → "User's name is Bob"). Statements without a first-person subject are kept
only when the user asked to remember them ("Remember that the deploy is on Fridays").
"""

from __future__ import annotations

import re

from memories.services.extraction.messages import Message

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
_CLAUSES = re.compile(r",?\s+(?:and|but|so)\s+(?=I\b|I'm\b|I've\b|my\b)|;\s+")
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


def sentence_to_fact(sentence: str) -> str | None:
    raw = sentence.strip()
    if not raw or _is_question(raw) or _CHITCHAT.match(raw):
        return None
    remembered = _REMEMBER.match(raw)
    text = _clean(raw[remembered.end() :] if remembered else raw)
    if not text or _CHITCHAT.match(text) or len(text.split()) < 2:
        return None
    if _FIRST_PERSON.search(text):
        return rewrite_first_person(text)
    return text if remembered else None


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
            for sentence in _SENTENCES.split(message.content):
                for clause in _CLAUSES.split(sentence):
                    fact = sentence_to_fact(clause)
                    if fact and fact.casefold() not in seen:
                        seen.add(fact.casefold())
                        facts[fact] = context
        if message.content.strip():
            previous = message
    return facts


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
