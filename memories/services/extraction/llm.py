"""LLM fact extraction and update decisions, and parsing their answers.

JSON mode answers must be objects, so the prompts ask for `{"facts": [...]}` and
`{"memory": [...]}`; bare arrays and arrays embedded in text are accepted too. Existing memories
are shown to the model under short integer ids, mapped back here: the model never sees or
invents real ids, and can only touch the candidates it was shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memories.models import Memory
from memoryplatform.llm import ChatLLM

FACT_EXTRACTION_PROMPT = """\
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
- Use third person (e.g., "User prefers..." not "You prefer...")

Return a JSON object {"facts": [...]} whose value is an array of strings. If no meaningful
facts can be extracted, return {"facts": []}.

Example output:
{"facts": ["User's name is Alice", "User works as a software engineer at Acme Corp",
 "User prefers Python for backend development"]}"""

UPDATE_MEMORY_PROMPT = """You are a memory management system. You will be given:
1. A new piece of information (the "new fact")
2. A list of existing memories that are potentially related

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
    if isinstance(value, str):
        match = re.search(r"\[.*\]", value, re.DOTALL)
        if match:
            try:
                return _find_array(json.loads(match.group(0)), keys)
            except json.JSONDecodeError:
                return None
    return None


def extract_facts_llm(llm: ChatLLM, *, conversation: str, prompt: str | None) -> list[str]:
    """Raises ProviderError when the model is unreachable or answers garbage."""
    answer = llm.complete_json(system=prompt or FACT_EXTRACTION_PROMPT, user=conversation)
    items = _find_array(answer, ("facts", "memories", "memory", "results")) or []
    facts = []
    for item in items:
        text = item.get("fact") or item.get("text") if isinstance(item, dict) else item
        if isinstance(text, str) and text.strip() and text.strip() not in facts:
            facts.append(text.strip())
    return facts


def decision_prompt(fact: str, candidates: list[Memory]) -> str:
    lines = [f"New fact: {fact}", "", "Existing memories:"]
    lines += [f"  - ID: {index}, Text: {memory.content}" for index, memory in enumerate(candidates)]
    if not candidates:
        lines.append("  No existing memories found.")
    return "\n".join(lines)


def decide_llm(llm: ChatLLM, *, fact: str, candidates: list[Memory]) -> list[Decision]:
    """Raises ProviderError; unknown ids and malformed operations are dropped."""
    answer = llm.complete_json(system=UPDATE_MEMORY_PROMPT, user=decision_prompt(fact, candidates))
    by_id = {str(index): memory for index, memory in enumerate(candidates)}
    by_id.update({str(memory.pk): memory for memory in candidates})
    decisions = []
    for item in _find_array(answer, ("memory", "events", "operations", "results")) or []:
        if not isinstance(item, dict):
            continue
        event = str(item.get("event") or "").upper()
        text = item.get("data") or item.get("text") or item.get("memory")
        text = text.strip() if isinstance(text, str) and text.strip() else None
        target = by_id.get(str(item.get("id"))) if item.get("id") is not None else None
        if event == "ADD" and (text or fact):
            decisions.append(Decision("ADD", text or fact))
        elif event == "UPDATE" and target is not None:
            decisions.append(Decision("UPDATE", text or fact, target))
        elif event == "DELETE" and target is not None:
            decisions.append(Decision("DELETE", None, target))
        elif event == "NONE":
            decisions.append(Decision("NONE", None, target))
    return decisions
