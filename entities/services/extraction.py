"""Entity and relation extraction from a memory's text.

With an LLM configured: the seed's `extract_entities` / `extract_relations` tool calls. Offline
(or when the LLM fails): a deterministic extractor - capitalised spans, small gazetteers and
a handful of active-voice patterns ("X works at Y", "X uses Y", "X no longer works at Y").
It is meant to get plain statements right, not to parse English."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from entities.models import EntityType
from memoryplatform.lib.errors import ProviderError
from memoryplatform.llm import DATA_RULE, answer_bool, data_block

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

TECHNOLOGIES = {
    "python", "django", "postgresql", "postgres", "pgvector", "mysql", "sqlite", "redis",
    "mongodb", "react", "vue", "angular", "svelte", "javascript", "typescript", "node.js",
    "nodejs", "java", "kotlin", "swift", "rust", "golang", "c++", "c#", "ruby", "rails", "php",
    "docker", "kubernetes", "terraform", "ansible", "aws", "gcp", "azure", "linux", "git",
    "github", "gitlab", "graphql", "fastapi", "flask", "celery", "kafka", "rabbitmq", "nginx",
    "elasticsearch", "pytorch", "tensorflow", "numpy", "pandas", "vim", "emacs", "vscode",
    "neovim", "bash", "zsh", "macos", "windows", "ios", "android", "tailwind", "webpack",
    "vite", "jest", "pytest", "llama", "chatgpt", "claude", "grpc", "html", "css",
}  # fmt: skip
ORGANIZATIONS = {
    "google", "microsoft", "apple", "amazon", "meta", "facebook", "netflix", "ibm", "intel",
    "nvidia", "oracle", "salesforce", "adobe", "uber", "airbnb", "spotify", "stripe", "openai",
    "anthropic", "tesla", "twitter", "linkedin", "mozilla", "samsung", "sony", "acme",
    "acme corp", "deepmind", "shopify", "atlassian", "slack", "dropbox", "github", "gitlab",
}  # fmt: skip
LOCATIONS = {
    "paris", "london", "berlin", "tokyo", "new york", "san francisco", "seattle", "boston",
    "chicago", "austin", "toronto", "sydney", "madrid", "rome", "amsterdam", "dublin",
    "lisbon", "munich", "zurich", "singapore", "beijing", "shanghai", "mumbai", "bangalore",
    "france", "germany", "spain", "italy", "japan", "china", "india", "canada", "usa",
    "united states", "uk", "united kingdom", "europe", "brazil", "mexico", "australia",
    "california", "texas", "sweden", "norway", "poland", "ireland", "portugal", "netherlands",
}  # fmt: skip
ORG_SUFFIXES = ("inc", "corp", "corporation", "ltd", "llc", "gmbh", "labs", "university",
                "bank", "company", "foundation", "institute", "group", "technologies")  # fmt: skip
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
    "both", "just", "only", "one", "two", "new", "last", "next", "first", "sure", "great",
}  # fmt: skip

_WORD = r"[A-Z][\w+#&'-]*(?:\.\w+)*"
_NAME = rf"{_WORD}(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?{_WORD})*"
_TECH = "|".join(re.escape(name) for name in sorted(TECHNOLOGIES, key=len, reverse=True))
_THING = rf"(?:{_NAME}|(?i:{_TECH})(?![\w+#]))"

# (pattern, relation, source role, target role, swap, retracted)
_RULES: list[tuple[str, str, str | None, str | None, bool, bool]] = [
    (r"(?:no longer|doesn't|does not|stopped)\s+works?(?:ing)?\s+(?:at|for)", "works_at",
     "person", "organization", False, True),
    (r"(?:left|quit|resigned from)", "works_at", "person", "organization", False, True),
    (r"(?:now\s+)?(?:works?|worked|is working|started working)\s+(?:at|for)|"
     r"is employed (?:at|by)|joined|is an? \w+ at|is at", "works_at", "person",
     "organization", False, False),
    (r"(?:no longer|doesn't|does not|stopped)\s+us(?:es|e|ing)", "uses", None, "technology",
     False, True),
    (r"(?:uses|is using|used|prefers|likes using|codes in|writes)", "uses", None, "technology",
     False, False),
    (r"(?:manages|leads|is the manager of|runs)", "manages", "person", None, False, False),
    (r"reports to", "reports_to", "person", "person", False, False),
    (r"(?:collaborates with|works with|worked with|partners with|pairs with)",
     "collaborates_with", None, None, False, False),
    (r"implements", "implements", None, "technology", False, False),
    (r"(?:depends on|relies on|requires)", "depends_on", None, None, False, False),
    (r"(?:no longer lives in|moved (?:away )?from)", "located_in", None, "location", False,
     True),
    (r"(?:lives in|is based in|is located in|moved to|resides in|is from)", "located_in",
     None, "location", False, False),
    (r"(?:is part of|belongs to|is a member of)", "part_of", None, "organization", False,
     False),
    (r"(?:created|built|founded|wrote|developed|designed)", "created_by", "person", None, True,
     False),
    (r"(?:is related to|relates to|is connected to)", "related_to", None, None, False, False),
]  # fmt: skip
_ARTICLE = r"(?:(?:the|a|an|his|her|their)\s+)?"
_LIST_TAIL = rf"((?:\s*(?:,\s*and|,|and|&)\s+{_ARTICLE}{_THING})*)"
# Each rule with its verbs alone: the clause pattern scans from every position of the text
# (its subject alternation is long), so it runs only on texts where its verbs occur at all
# (the gate is a necessary condition of the clause: same verbs, whitespace on both sides).
# Scale-benchmark texts and LoCoMo turns (6,435): 598 -> 107 us a text, same output.
_COMPILED = [
    (
        re.compile(rf"\s(?:{verbs})\s"),
        re.compile(rf"(?<![\w])({_THING})\s+(?:{verbs})\s+{_ARTICLE}({_THING}){_LIST_TAIL}"),
        relation,
        source_role,
        target_role,
        swap,
        retracted,
    )
    for verbs, relation, source_role, target_role, swap, retracted in _RULES
]
_LIST_ITEM = re.compile(_THING)
# "Caroline: I went..." - a speaker label at the start of a line is a person
_SPEAKER = re.compile(rf"(?m)^\s*({_NAME})\s*:")
# The seed's shorthand: "Alice at Google" / "Alice from Acme Corp".
_AT = re.compile(rf"(?<![\w])({_NAME})\s+(?:at|@)\s+({_NAME})")
_SPAN = re.compile(rf"(?<![\w])(?:{_NAME}|(?i:{_TECH})(?![\w+#]))")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"'(]\s*)$")


def _clean_span(span: str) -> str:
    words = span.strip(" .,;:!?'\"").split()
    while words and words[0].casefold().strip(".,'") in STOPWORDS:
        words = words[1:]
    while words and words[-1].casefold().strip(".,'") in STOPWORDS:
        words = words[:-1]
    return " ".join(words).strip(" .,;:!?'\"").removesuffix("'s")


def _gazetteer_type(name: str) -> str | None:
    key = name.casefold()
    if key in TECHNOLOGIES:
        return EntityType.TECHNOLOGY
    if key in ORGANIZATIONS or key.rsplit(" ", 1)[-1].strip(".") in ORG_SUFFIXES:
        return EntityType.ORGANIZATION
    if key in LOCATIONS:
        return EntityType.LOCATION
    return None


def _canonical(name: str) -> str:
    """Known technologies keep one spelling whatever the case they were written in."""
    return name if name[:1].isupper() or name.casefold() not in TECHNOLOGIES else name.title()


class _Collector:
    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self.names: dict[str, str] = {}

    def add(self, name: str, role: str | None) -> str | None:
        name = _canonical(_clean_span(name))
        if len(name) < 2 or name.casefold() in STOPWORDS:
            return None
        key = name.casefold()
        self.names.setdefault(key, name)
        found = _gazetteer_type(name) or role or EntityType.UNKNOWN
        if self.types.get(key, EntityType.UNKNOWN) == EntityType.UNKNOWN:
            self.types[key] = found
        return self.names[key]

    def entities(self) -> list[ExtractedEntity]:
        return [ExtractedEntity(self.names[key], self.types[key]) for key in self.names]


_MASKED = re.compile(r"\[REDACTED_[A-Z0-9_]{1,40}\]")  # what PII masking left: not a name


def extract_offline(text: str) -> Extraction:
    text = _MASKED.sub(" ", text)
    collector = _Collector()
    relations: list[ExtractedRelation] = []
    claimed: list[tuple[int, int]] = []
    for gate, pattern, relation, source_role, target_role, swap, retracted in _COMPILED:
        if not gate.search(text):
            continue
        for match in pattern.finditer(text):
            if any(start <= match.start() < end for start, end in claimed):
                continue  # a retraction already explained this clause
            claimed.append(match.span())
            source = collector.add(match.group(1), source_role)
            targets = [match.group(2), *_LIST_ITEM.findall(match.group(3) or "")]
            for raw_target in targets:
                target = collector.add(raw_target, target_role)
                if source and target and source != target:
                    pair = (target, source) if swap else (source, target)
                    relations.append(ExtractedRelation(pair[0], relation, pair[1], retracted))
    for match in _SPEAKER.finditer(text):
        collector.add(match.group(1), EntityType.PERSON)
    for match in _AT.finditer(text):
        known = _gazetteer_type(_clean_span(match.group(1)))
        if not known and not any(start <= match.start() < end for start, end in claimed):
            source = collector.add(match.group(1), EntityType.PERSON)
            target = collector.add(match.group(2), EntityType.ORGANIZATION)
            if source and target and source != target:
                relations.append(ExtractedRelation(source, "works_at", target))
    for match in _SPAN.finditer(text):
        span = match.group(0)
        at_start = bool(_SENTENCE_START.search(text[: match.start()]))
        known = _gazetteer_type(_clean_span(span))
        # a lone capitalised word opening a sentence is usually just a word ("Deploy failed")
        if at_start and " " not in _clean_span(span) and not known:
            continue
        collector.add(span, None)
    return Extraction(collector.entities(), _dedupe(relations), extractor="offline")


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
                            "type": {"type": "string", "enum": ENTITY_TYPES_FOR_LLM},
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
                entity_type=kind if kind in EntityType.values else EntityType.UNKNOWN,
                description=_text(item.get("description")),
            )
        )
    return out


def _llm_relations(items: Any) -> list[ExtractedRelation]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        source, target = _text(item.get("source"))[:255], _text(item.get("target"))[:255]
        relation = re.sub(r"[^a-z0-9_]+", "_", _text(item.get("relation")).casefold()).strip("_")
        if source and target and relation and source.casefold() != target.casefold():
            out.append(
                ExtractedRelation(
                    source, relation[:100], target, answer_bool(item.get("retracted"))
                )
            )
    return out


def extract(text: str) -> Extraction:
    """LLM extraction when one is configured and answers; the offline extractor otherwise."""
    from memoryplatform.llm import get_llm

    llm = get_llm()
    if llm is not None:
        try:
            return extract_with_llm(llm, text)
        except ProviderError as exc:
            logger.warning("LLM entity extraction failed, using the offline extractor: %s", exc)
    return extract_offline(text)
