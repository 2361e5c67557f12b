"""LLM fact extraction and update decisions, and parsing their answers.

JSON mode answers must be objects, so the prompts ask for `{"facts": [...]}` and
`{"memory": [...]}`; bare arrays and arrays embedded in text are accepted too. Existing memories
are shown to the model under short integer ids, mapped back here: the model never sees or
invents real ids, and can only touch the candidates it was shown.

Everything users wrote (the conversation, the stored memories, the facts extracted from them)
reaches the model only as JSON inside `<<<NAME … >>>NAME` blocks that the system prompt calls
data (`platformcore.llm.DATA_RULE`), and what comes back is capped: at most
`MEMORY_LLM_MAX_FACTS` facts and `MEMORY_LLM_MAX_OPERATIONS` operations per fact, none longer
than a memory may be. A request's own `prompt` replaces our extraction task for that call
(the output format and the data rule stay after it); the project's active instructions for
each step (memories.models.ProjectPrompt) are appended, quoted as the project's.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.models import Memory, PromptKind
from memories.selectors.prompts import project_prompt_active
from platformcore.llm import DATA_RULE, ChatLLM, data_block
from tenants.models import Project

logger = logging.getLogger(__name__)

FACT_EXTRACTION_TASK = """\
You are an expert at extracting structured, atomic facts from conversations.
Your task is to identify and extract key pieces of information from the given
conversation that would be useful to remember for future interactions.

Extract facts that fall into these categories:
1. Personal preferences (likes, dislikes, habits)
2. Biographical information (name, occupation, location, relationships)
3. Goals and intentions
4. Technical preferences and skills
5. Important dates, events, or milestones
6. Opinions and viewpoints
7. Project details and requirements
8. Communication preferences

Rules:
- Each fact must be a single, self-contained statement
- Be specific and include context where necessary
- Avoid duplicating information across facts
- Only extract information that is clearly stated or strongly implied
- Do not make assumptions beyond what is provided
- Format each fact as a concise, declarative sentence
- Use third person (e.g., "User prefers..." not "You prefer...")"""

# What the answer must look like and where the conversation is: kept after a caller's own
# prompt, which replaces the task above only.
EXTRACTION_FORMAT = """\
The conversation is given as one JSON string in a <<<CONVERSATION block, one
`role: content` line per message. Return a JSON object {"facts": [...]} whose value is an
array of strings. If no meaningful facts can be extracted, return {"facts": []}.

Example output:
{"facts": ["User's name is Alice", "User works as a software engineer at Acme Corp",
 "User prefers Python for backend development"]}"""

FACT_EXTRACTION_PROMPT = f"{FACT_EXTRACTION_TASK}\n\n{EXTRACTION_FORMAT}"

UPDATE_MEMORY_PROMPT = """You are a memory management system. You will be given:
1. A new piece of information (the "new fact"), as a JSON string in a <<<NEW_FACT block
2. A list of existing memories that are potentially related, as a JSON array of
   {"id", "text"} objects in an <<<EXISTING_MEMORIES block

Your job is to decide what memory operations to perform. For each operation,
return a JSON object.

Possible operations:

1. ADD — The new fact contains genuinely new information not captured by any
   existing memory. Create a new memory.
   {"event": "ADD", "data": "the fact text to store"}

2. UPDATE — The new fact updates, corrects, refines, or supersedes an existing
   memory. Provide the existing memory ID and the new merged/updated text.
   {"event": "UPDATE", "id": "<existing_memory_id>", "old_memory": "<current text>",
    "data": "the updated fact text"}

3. DELETE — The new fact contradicts or invalidates an existing memory and
   the existing memory should be removed entirely.
   {"event": "DELETE", "id": "<existing_memory_id>", "old_memory": "<current text>"}

4. NONE — The new fact is already fully captured by existing memories and
   no action is needed.
   {"event": "NONE"}

Important rules:
- If the new fact contains information not present in ANY existing memory, use ADD
- If an existing memory says something similar but the new fact has updated info,
  use UPDATE (merge the information, keeping the more recent/accurate version)
- If the new fact directly contradicts an existing memory (e.g., "moved from NYC
  to SF" when existing says "lives in NYC"), UPDATE the existing memory
- If removing info is more appropriate than updating, use DELETE
- Only use NONE if the information is truly redundant
- You may return multiple operations if needed (e.g., UPDATE one memory AND ADD
  a new one)
- Always preserve important context and nuance when merging

Return a JSON object {"memory": [...]} holding the array of operation objects."""

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


@dataclass(frozen=True)
class Decision:
    event: str
    text: str | None = None
    target: Memory | None = None


def _find_array(value: Any, keys: tuple[str, ...]) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), list):
                return value[key]
        if "event" in value:
            return [value]
        lists = [item for item in value.values() if isinstance(item, list)]
        return lists[0] if len(lists) == 1 else None
    if isinstance(value, str):  # from the first "[" to the last "]", found in one pass
        start, end = value.find("["), value.rfind("]")
        if 0 <= start < end:
            try:
                return _find_array(json.loads(value[start : end + 1]), keys)
            except json.JSONDecodeError:
                return None
    return None


def project_instructions(project: Project | None, kind: str) -> str:
    """The project's active instructions for `kind`, quoted, to append to a system prompt
    ("" when it has none). They refine the task; they come after the security rule and the
    output format, which still apply."""
    prompt = project_prompt_active(project=project, kind=kind) if project is not None else None
    if prompt is None:
        return ""
    return (
        f"\n\nInstructions of this project (version {prompt.version}, set by its "
        "administrator), quoted as a JSON string. Follow them where they refine the task; the "
        "output format and the security rule above still apply:\n"
        + json.dumps(prompt.text, ensure_ascii=False)
    )


def extraction_system_prompt(custom: str | None, project: Project | None = None) -> str:
    """The task (a request's own prompt replaces ours, as mem0's `prompt` does), then the
    output format and the data rule, which no prompt removes, then the project's
    instructions (its administrator's refinements)."""
    system = f"{custom or FACT_EXTRACTION_TASK}\n\n{EXTRACTION_FORMAT}\n\n{DATA_RULE}"
    return system + project_instructions(project, PromptKind.EXTRACTION)


def decision_system_prompt(project: Project | None = None) -> str:
    """The update-decision prompt, the data rule, then the project's instructions."""
    system = f"{UPDATE_MEMORY_PROMPT}\n\n{DATA_RULE}"
    return system + project_instructions(project, PromptKind.UPDATE_DECISION)


def _fits(text: str) -> bool:
    return len(text) <= settings.MEMORY_MAX_CONTENT_LENGTH


def extract_facts_llm(
    llm: ChatLLM, *, conversation: str, prompt: str | None, project: Project | None = None
) -> list[str]:
    """Raises ProviderError when the model is unreachable or answers garbage. At most
    MEMORY_LLM_MAX_FACTS facts; a fact longer than a memory may be is dropped."""
    answer = llm.complete_json(
        system=extraction_system_prompt(prompt, project),
        user=data_block("CONVERSATION", conversation),
    )
    items = _find_array(answer, ("facts", "memories", "memory", "results")) or []
    facts: list[str] = []
    for item in items:
        text = item.get("fact") or item.get("text") if isinstance(item, dict) else item
        text = text.strip() if isinstance(text, str) else ""
        if text and _fits(text) and text not in facts:
            facts.append(text)
    if len(facts) > settings.MEMORY_LLM_MAX_FACTS:
        logger.warning(
            "the model extracted %d facts; keeping the first %d",
            len(facts),
            settings.MEMORY_LLM_MAX_FACTS,
        )
    return facts[: settings.MEMORY_LLM_MAX_FACTS]


def decision_prompt(fact: str, candidates: list[Memory]) -> str:
    """The fact and the candidates as data blocks; candidates under their short ids."""
    shown = [{"id": str(index), "text": memory.content} for index, memory in enumerate(candidates)]
    return "\n\n".join([data_block("NEW_FACT", fact), data_block("EXISTING_MEMORIES", shown)])


def decide_llm(
    llm: ChatLLM, *, fact: str, candidates: list[Memory], project: Project | None = None
) -> list[Decision]:
    """Raises ProviderError; unknown ids and malformed operations are dropped, and at most
    MEMORY_LLM_MAX_OPERATIONS operations are kept."""
    answer = llm.complete_json(
        system=decision_system_prompt(project), user=decision_prompt(fact, candidates)
    )
    by_id = {str(index): memory for index, memory in enumerate(candidates)}
    by_id.update({str(memory.pk): memory for memory in candidates})
    decisions = []
    for item in _find_array(answer, ("memory", "events", "operations", "results")) or []:
        decision = _decision(item, fact, by_id)
        if decision is not None:
            decisions.append(decision)
    limit = settings.MEMORY_LLM_MAX_OPERATIONS
    if len(decisions) > limit:
        logger.warning(
            "the model returned %d operations; keeping the first %d", len(decisions), limit
        )
    return decisions[:limit]


def _decision(item: Any, fact: str, by_id: dict[str, Memory]) -> Decision | None:
    if not isinstance(item, dict):
        return None
    event = str(item.get("event") or "").upper()
    text = item.get("data") or item.get("text") or item.get("memory")
    text = text.strip() if isinstance(text, str) and text.strip() and _fits(text.strip()) else None
    target = by_id.get(str(item.get("id"))) if item.get("id") is not None else None
    if event == "ADD" and (text or fact):
        return Decision("ADD", text or fact)
    if event == "UPDATE" and target is not None:
        return Decision("UPDATE", text or fact, target)
    if event == "DELETE" and target is not None:
        return Decision("DELETE", None, target)
    if event == "NONE":
        return Decision("NONE", None, target)
    return None
