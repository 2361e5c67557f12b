"""Entity and relation extraction from a memory's text.

With an LLM configured: the seed's `extract_entities` / `extract_relations` tool calls. Offline
(or when the LLM fails): a deterministic extractor - the clause reader of
`platformcore.lib.text.clauses` ("X works at Y", "I no longer live in Z", "my manager
Sarah"), small gazetteers for types, and capitalised spans for the other names. It is meant
to get plain statements right, not to parse English (figures: docs/intelligence.md)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from entities.models import ENTITY_TYPE_PATTERN, EntityType
from platformcore.lib.errors import ProviderError
from platformcore.lib.text.clauses import SELF, read_statements, tokens_of
from platformcore.lib.text.gazetteer import (
    COMMON_WORD_TECHNOLOGIES,
    FIRST_NAMES,
    GROUP_KINDS,
    LOCATIONS,
    NATIONALITIES,
    ORG_SUFFIXES,
    ORGANIZATIONS,
    TECHNOLOGIES,
    name_kind,
)
from platformcore.llm import DATA_RULE, answer_bool, data_block, get_llm

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    entity_type: str = EntityType.UNKNOWN
    description: str = ""


@dataclass(frozen=True)
class ExtractedRelation:
    source: str
    relation_type: str
    target: str
    retracted: bool = False  # "no longer", "left": closes the relation instead of adding it


@dataclass
class Extraction:
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    extractor: str = "offline"


# --- offline -----------------------------------------------------------------------------

# Capitalised words that start sentences or name times, not things.
STOPWORDS = {
    "the", "a", "an", "i", "we", "you", "he", "she", "they", "it", "this", "that", "these",
    "those", "my", "our", "your", "his", "her", "their", "its", "user", "users", "today",
    "yesterday", "tomorrow", "when", "where", "what", "why", "how", "who", "which", "if",
    "but", "and", "or", "so", "also", "then", "after", "before", "always", "never", "please",
    "use", "do", "does", "did", "don't", "yes", "no", "ok", "okay", "hi", "hello", "thanks",
    "mr", "mrs", "ms", "dr", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "there", "here", "in", "on",
    "at", "for", "with", "from", "to", "of", "by", "as", "is", "was", "not", "all", "some",
    "every", "each", "any", "none", "note", "remember", "fixed", "error", "bug", "todo",
    "let", "let's", "maybe", "now", "once", "since", "until", "while", "because", "however",
    "both", "just", "only", "one", "two", "last", "next", "first", "sure", "great",
    "mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays", "sundays",
    "actually", "she's", "he's", "i'm", "it's", "we're", "they're", "anyway", "btw",
}  # fmt: skip

_WORD = r"[A-Z][\w+#&'-]*(?:\.\w+)*"
_NAME = rf"{_WORD}(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?{_WORD})*"
_SPAN_TECH = sorted(TECHNOLOGIES - COMMON_WORD_TECHNOLOGIES, key=len, reverse=True)
_TECH = "|".join(re.escape(name) for name in _SPAN_TECH)
# "Caroline: I went..." - a speaker label at the start of a line is a person
_LINE_NAME = rf"{_WORD}(?:[ \t]+{_WORD}){{0,4}}"  # a name within one line
_SPEAKER = re.compile(rf"(?m)^[ \t]*({_LINE_NAME})[ \t]*:")
_SPAN = re.compile(rf"(?<![\w])(?:{_NAME}|(?i:{_TECH})(?![\w+#]))")


MAX_NAME_WORDS = 8  # a longer run of capitalised words is a heading or noise, not a name


def _clean_span(span: str) -> str:
    words = span.strip(" .,;:!?'\"").split()
    start, end = 0, len(words)
    while start < end and words[start].casefold().strip(".,'") in STOPWORDS:
        start += 1
    while end > start and words[end - 1].casefold().strip(".,'") in STOPWORDS:
        end -= 1
    return " ".join(words[start:end]).strip(" .,;:!?'\"").removesuffix("'s")


def _gazetteer_type(name: str) -> str | None:
    key = name.casefold()
    if key in TECHNOLOGIES:
        return EntityType.TECHNOLOGY
    if key in ORGANIZATIONS or key.rsplit(" ", 1)[-1].strip(".") in ORG_SUFFIXES:
        return EntityType.ORGANIZATION
    if key in LOCATIONS:
        return EntityType.LOCATION
    return None


def _name_type(name: str) -> str | None:
    """The type a name has whatever the sentence says: gazetteers, given names, and the
    last word of a group's name ("Platform team")."""
    return name_kind(name)


def _canonical(name: str) -> str:
    """Known technologies keep one spelling whatever the case they were written in."""
    return name if name[:1].isupper() or name.casefold() not in TECHNOLOGIES else name.title()


class _Collector:
    def __init__(self, self_name: str) -> None:
        self.self_name = self_name
        self.types: dict[str, str] = {}
        self.names: dict[str, str] = {}

    def add(self, name: str, role: str | None) -> str | None:
        if name == SELF:
            return self._put(self.self_name, EntityType.PERSON)
        name = _canonical(_clean_span(name))
        if len(name) < 2 or name.casefold() in STOPWORDS:
            return None
        # a name that is also a word ("Jordan", "Ruby"): the sentence's role decides
        ambiguous = name.casefold() in COMMON_WORD_TECHNOLOGIES or (
            name.casefold() in FIRST_NAMES and _gazetteer_type(name) is not None
        )
        known = _name_type(name)
        if role == EntityType.ORGANIZATION and known == EntityType.TECHNOLOGY:
            known = None  # "works at GitLab": the company, not its product
        found = (role if ambiguous else None) or known or role
        return self._put(name, found or EntityType.UNKNOWN)

    def _put(self, name: str, found: str) -> str:
        key = name.casefold()
        self.names.setdefault(key, name)
        if self.types.get(key, EntityType.UNKNOWN) == EntityType.UNKNOWN:
            self.types[key] = found
        return self.names[key]

    def entities(self) -> list[ExtractedEntity]:
        return [ExtractedEntity(self.names[key], self.types[key]) for key in self.names]


_MASKED = re.compile(r"\[REDACTED_[A-Z0-9_]{1,40}\]")  # what PII masking left: not a name


def extract_offline(text: str, *, self_name: str = SELF) -> Extraction:
    """Relations from the clause reader (`platformcore.lib.text.clauses`), then the
    names no relation took: speaker labels (persons), "X at Y" (works_at) and capitalised
    spans. The user ("I", "User") is `self_name`, a person."""
    text = _MASKED.sub(" ", text)
    collector = _Collector(self_name)
    relations: list[ExtractedRelation] = []
    for statement in read_statements(text, kind_of=_name_type):
        source = collector.add(statement.source, statement.source_role)
        target = collector.add(statement.target, statement.target_role)
        if source and target and source.casefold() != target.casefold():
            relations.append(
                ExtractedRelation(source, statement.relation, target, statement.retracted)
            )
    for match in _SPEAKER.finditer(text):
        collector.add(match.group(1), EntityType.PERSON)
    if not relations:
        relations += _shorthand(text, collector)
    stated = {name.casefold() for name in collector.names.values()}
    for match in _SPAN.finditer(text):
        span = match.group(0)
        span += "" if span.endswith("'s") else _group_noun_after(text, match.end())
        clean = _clean_span(span)
        if len(clean.split(maxsplit=MAX_NAME_WORDS)) > MAX_NAME_WORDS:
            continue
        if clean.casefold() in NATIONALITIES or _holds_another(clean.casefold(), stated):
            continue
        at_start = _opens_sentence(text, match.start())
        known = _name_type(clean) and clean.casefold() not in COMMON_WORD_TECHNOLOGIES
        # a lone capitalised word opening a sentence is usually just a word ("Deploy failed")
        if at_start and " " not in clean and not known:
            continue
        collector.add(span, None)
    return Extraction(collector.entities(), _dedupe(relations), extractor="offline")


def _opens_sentence(text: str, start: int) -> bool:
    """Nothing but white space since the start of the text or a sentence mark."""
    before = start - 1
    while before >= 0 and text[before] in " \t\r":
        before -= 1
    return before < 0 or text[before] in ".!?:;\n\"'("


def _holds_another(span: str, names: set[str]) -> bool:
    """ "CTO of Acme Corp" when a relation named "Acme Corp": the longer span is no name.
    (Only its last few words are looked at: a hostile run of capitals stays linear.)"""
    words = span.split()
    return any(" ".join(words[-k:]) in names for k in range(1, min(len(words), 7)))


_GROUP_NOUN = re.compile(r"\s([a-z]{2,12})\b")


def _group_noun_after(text: str, end: int) -> str:
    """ "the Platform team": the group noun after a capitalised span is part of its name."""
    match = _GROUP_NOUN.match(text, end)
    return match.group(0) if match and match.group(1) in GROUP_KINDS else ""


def _shorthand(text: str, collector: _Collector) -> list[ExtractedRelation]:
    """ "Alice at Google": a person and where they work, in a text with no clause. Read on
    tokens around each "at" (a pattern would backtrack over long runs of capitals)."""
    tokens = tokens_of(text)
    relations = []
    for index, token in enumerate(tokens):
        if token not in ("at", "@"):
            continue
        source, target = _capitals(tokens, index - 1, -1), _capitals(tokens, index + 1, 1)
        if not source or not target or _gazetteer_type(_clean_span(source)):
            continue
        source = collector.add(source, EntityType.PERSON)
        target = collector.add(target, EntityType.ORGANIZATION)
        if source and target and source != target:
            relations.append(ExtractedRelation(source, "works_at", target))
    return relations


def _capitals(tokens: list[str], start: int, step: int) -> str:
    """The run of up to 4 capitalised tokens from `start` going `step` (±1)."""
    run: list[str] = []
    index = start
    while 0 <= index < len(tokens) and len(run) < 4 and tokens[index][:1].isupper():
        run.append(tokens[index])
        index += step
    return " ".join(run if step > 0 else reversed(run))


def _dedupe(relations: list[ExtractedRelation]) -> list[ExtractedRelation]:
    return list(dict.fromkeys(relations))


# --- LLM -------------------------------------------------------------------------------

ENTITY_TYPES_FOR_LLM = [t for t in EntityType.values if t != EntityType.UNKNOWN]
EXTRACT_ENTITIES_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "extract_entities",
        "description": "Extract entities (people, organizations, concepts, locations, events) "
        "from the conversation",
        "parameters": {
            "type": "object",
            "properties": {
                "entities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {
                                "type": "string",
                                "description": "Entity name (normalized, title case)",
                            },
                            "type": {
                                "type": "string",
                                "description": "One of "
                                + ", ".join(ENTITY_TYPES_FOR_LLM)
                                + "; or another lower-case snake_case type when none fits",
                            },
                            "description": {
                                "type": "string",
                                "description": "Brief description of the entity",
                            },
                        },
                        "required": ["name", "type"],
                    },
                }
            },
        },
    },
}
EXTRACT_RELATIONS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "extract_relations",
        "description": "Extract relationships between entities",
        "parameters": {
            "type": "object",
            "properties": {
                "relations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "source": {"type": "string", "description": "Source entity name"},
                            "relation": {
                                "type": "string",
                                "description": "Relationship type in active voice snake_case "
                                "(e.g., works_at, located_in, uses, knows)",
                            },
                            "target": {"type": "string", "description": "Target entity name"},
                            "retracted": {
                                "type": "boolean",
                                "description": "true when the text says this relationship "
                                "no longer holds",
                            },
                        },
                        "required": ["source", "relation", "target"],
                    },
                }
            },
        },
    },
}
SYSTEM_PROMPT = (
    "You build a knowledge graph from short memories. Call extract_entities with every "
    "person, organization, project, concept, location, technology, event or product the text "
    "names, then call extract_relations with the relationships the text states between them, "
    "in active voice snake_case (works_at, manages, reports_to, collaborates_with, uses, "
    "implements, depends_on, related_to, located_in, part_of, created_by). Mark a "
    "relationship retracted when the text says it ended. Do not invent facts. The memory is "
    "a JSON string in a <<<MEMORY block.\n\n" + DATA_RULE
)
MAX_LLM_ITEMS = 50  # entities, and relations, kept from one answer


def extract_with_llm(llm: Any, text: str) -> Extraction:
    """Raises ProviderError when the LLM fails; the caller falls back to offline."""
    calls = llm.call_tools(
        system=SYSTEM_PROMPT,
        user=data_block("MEMORY", text),
        tools=[EXTRACT_ENTITIES_TOOL, EXTRACT_RELATIONS_TOOL],
        tool_choice="auto",
    )
    extraction = Extraction(extractor="llm")
    for call in calls:
        if call.name == "extract_entities":
            extraction.entities += _llm_entities(call.arguments.get("entities"))
        elif call.name == "extract_relations":
            extraction.relations += _llm_relations(call.arguments.get("relations"))
    extraction.entities = extraction.entities[:MAX_LLM_ITEMS]
    extraction.relations = extraction.relations[:MAX_LLM_ITEMS]
    return extraction


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _llm_entities(items: Any) -> list[ExtractedEntity]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not _text(item.get("name")):
            continue
        kind = _text(item.get("type")).casefold()
        out.append(
            ExtractedEntity(
                name=_text(item["name"])[:255],
                entity_type=_llm_entity_type(kind),
                description=_text(item.get("description")),
            )
        )
    return out


def _llm_entity_type(kind: str) -> str:
    """Entity types are open: a model's own type is kept when it is a clean identifier."""
    cleaned = re.sub(r"[\s\-]+", "_", kind)
    return cleaned if re.fullmatch(ENTITY_TYPE_PATTERN, cleaned) else EntityType.UNKNOWN


# what models often answer for our relation types: mapped, so that a change of state
# ("works_for" a new employer) ends the relation it replaces as the offline path's does
RELATION_SYNONYMS = {
    "works_for": "works_at",
    "employed_by": "works_at",
    "employed_at": "works_at",
    "lives_in": "located_in",
    "lives_at": "located_in",
    "resides_in": "located_in",
    "based_in": "located_in",
    "moved_to": "located_in",
    "reports_into": "reports_to",
    "member_of": "part_of",
    "belongs_to": "part_of",
}


def _llm_relations(items: Any) -> list[ExtractedRelation]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        source, target = _text(item.get("source"))[:255], _text(item.get("target"))[:255]
        relation = re.sub(r"[^a-z0-9_]+", "_", _text(item.get("relation")).casefold()).strip("_")
        relation = RELATION_SYNONYMS.get(relation, relation)
        if source and target and relation and source.casefold() != target.casefold():
            out.append(
                ExtractedRelation(
                    source, relation[:100], target, answer_bool(item.get("retracted"))
                )
            )
    return out


def extract(text: str, *, self_name: str = SELF) -> Extraction:
    """LLM extraction when one is configured and answers; the offline extractor otherwise.
    Facts name the user "User": that entity is `self_name` (the memory's user id, so two
    users of a project are two people in its graph)."""
    llm = get_llm()
    if llm is not None:
        try:
            return _named_self(extract_with_llm(llm, text), self_name)
        except ProviderError as exc:
            logger.warning("LLM entity extraction failed, using the offline extractor: %s", exc)
    return extract_offline(text, self_name=self_name)


def _named_self(extraction: Extraction, self_name: str) -> Extraction:
    def rename(name: str) -> str:
        return self_name if name.casefold() in ("user", "the user") else name

    extraction.entities = [
        ExtractedEntity(rename(e.name), e.entity_type, e.description) for e in extraction.entities
    ]
    extraction.relations = [
        ExtractedRelation(rename(r.source), r.relation_type, rename(r.target), r.retracted)
        for r in extraction.relations
    ]
    named = {e.name for e in extraction.entities}
    if self_name not in named and any(
        self_name in (r.source, r.target) for r in extraction.relations
    ):
        extraction.entities.append(ExtractedEntity(self_name, EntityType.PERSON))
    return extraction
