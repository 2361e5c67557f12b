"""Extraction quality: facts, typed entities and relations from sentences written for it.

benchmarks/data/extraction_dev.jsonl (patterns were written looking at it) and
benchmarks/data/extraction_heldout.jsonl (written after the patterns were frozen, never
tuned on) hold sentences in the first and third person, with varied phrasing, negations
("no longer works at"), changes of state and distractors (questions, chit-chat, opinions),
each with the facts, entities (name, type) and relations (source, type, target, and
`true` when the sentence says the relation ended) a careful reader writes down.

Offline (default): the sentence goes through the product's offline path as one user
message: `extract_facts_offline` gives the facts, and each fact goes through the graph's
offline extractor (`extract_offline`, as `add` does for every stored memory); the user is
"User". `--llm`: the same sentences through the LLM path (`extract_facts_llm`,
`extract_with_llm`) against the local fake OpenAI server (tests/fakes/openai_server.py),
which replays recorded answers: an item's `llm` object ({facts, entities, relations}) when it
has one, else its expected annotations. Those answers were written by hand in a model's
place, so the LLM table measures the path (prompt, JSON and tool-call parsing, type and
relation normalisation), not a model.

Scoring, per item then summed: a relation matches on (source, type, target, ended), names
casefolded; an entity on (name, type), the user excluded (it is implicit); a fact when its
words (casefolded, punctuation dropped) overlap an expected fact's with F1 >= 0.8, each
expected fact matched once.

    python -m benchmarks.extraction
    python -m benchmarks.extraction --llm
    python -m benchmarks.extraction --errors relations   # list what was missed or wrong
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
PARTS = {"dev": DATA / "extraction_dev.jsonl", "held-out": DATA / "extraction_heldout.jsonl"}
KINDS = ("facts", "entities", "relations")
FACT_F1 = 0.8
SELF = "user"


@dataclass
class Score:
    produced: int = 0
    expected: int = 0
    matched: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, produced: int, expected: int, matched: int) -> None:
        self.produced += produced
        self.expected += expected
        self.matched += matched

    @property
    def precision(self) -> float:
        return self.matched / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0


@dataclass
class Output:
    facts: list[str]
    entities: set[tuple[str, str]]
    relations: set[tuple[str, str, str, bool]]


def load(path: Path) -> list[dict[str, Any]]:
    with path.open() as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9+#']+", text.casefold().replace("'s", ""))


def _fact_f1(a: str, b: str) -> float:
    left, right = _words(a), _words(b)
    common = sum(min(left.count(w), right.count(w)) for w in set(left))
    if not common:
        return 0.0
    precision, recall = common / len(left), common / len(right)
    return 2 * precision * recall / (precision + recall)


def _entity_set(items: Any) -> set[tuple[str, str]]:
    return {(str(n).casefold(), str(t)) for n, t in items if str(n).casefold() != SELF}


def _relation_set(items: Any) -> set[tuple[str, str, str, bool]]:
    out = set()
    for item in items:
        source, relation, target = (str(value).casefold() for value in item[:3])
        out.add((source, relation, target, bool(item[3]) if len(item) > 3 else False))
    return out


def expected_of(item: dict[str, Any]) -> Output:
    return Output(item["facts"], _entity_set(item["entities"]), _relation_set(item["relations"]))


def score(item: dict[str, Any], got: Output, scores: dict[str, Score]) -> None:
    want = expected_of(item)
    unmatched = list(want.facts)
    for fact in got.facts:
        best = max(unmatched, key=lambda expected: _fact_f1(fact, expected), default=None)
        if best is not None and _fact_f1(fact, best) >= FACT_F1:
            unmatched.remove(best)
        else:
            scores["facts"].errors.append(f"{item['id']} extra fact: {fact!r}")
    scores["facts"].errors += [f"{item['id']} missed fact: {fact!r}" for fact in unmatched]
    scores["facts"].add(len(got.facts), len(want.facts), len(want.facts) - len(unmatched))
    for kind in ("entities", "relations"):
        wanted, produced = getattr(want, kind), getattr(got, kind)
        scores[kind].add(len(produced), len(wanted), len(wanted & produced))
        scores[kind].errors += [f"{item['id']} extra: {x}" for x in sorted(produced - wanted)]
        scores[kind].errors += [f"{item['id']} missed: {x}" for x in sorted(wanted - produced)]


# --- extractors -----------------------------------------------------------------------------


def offline(item: dict[str, Any]) -> Output:
    from entities.services.graph_extraction import extract_offline
    from memories.services.fact_extraction.messages import Message
    from platformcore.lib.text.offline_facts import extract_facts_offline

    facts = list(extract_facts_offline([Message("user", item["text"])]))
    entities: set[tuple[str, str]] = set()
    relations: set[tuple[str, str, str, bool]] = set()
    for fact in facts:
        extraction = extract_offline(fact)
        entities |= _entity_set((e.name, str(e.entity_type)) for e in extraction.entities)
        relations |= _relation_set(
            (r.source, r.relation_type, r.target, r.retracted) for r in extraction.relations
        )
    return Output(facts, entities, relations)


def llm_extractor() -> tuple[Callable[[dict[str, Any]], Output], Any]:
    """The LLM path against the fake server; returns the extractor and the server to close."""
    from entities.services.graph_extraction import extract_with_llm
    from memories.services.fact_extraction.llm import extract_facts_llm
    from platformcore.llm.openai_chat import OpenAIChat
    from tests.fakes.openai_server import FakeOpenAI, tool_calls

    fake = FakeOpenAI().__enter__()
    chat = OpenAIChat(
        base_url=fake.base_url, api_key="fake", model="fake", timeout=10.0, max_retries=0
    )

    def run(item: dict[str, Any]) -> Output:
        answer = item.get("llm") or item
        fake.reply({"facts": answer["facts"]})
        facts = extract_facts_llm(chat, conversation=f"user: {item['text']}", prompt=None)
        entities = [{"name": n, "type": t} for n, t in answer["entities"]]
        relations = [
            {"source": r[0], "relation": r[1], "target": r[2], "retracted": len(r) > 3 and r[3]}
            for r in answer["relations"]
        ]
        fake.reply(
            tool_calls(
                [
                    ("extract_entities", {"entities": entities}),
                    ("extract_relations", {"relations": relations}),
                ]
            )
        )
        extraction = extract_with_llm(chat, item["text"])
        return Output(
            facts,
            _entity_set((e.name, str(e.entity_type)) for e in extraction.entities),
            _relation_set(
                (r.source, r.relation_type, r.target, r.retracted) for r in extraction.relations
            ),
        )

    return run, fake


# --- report ---------------------------------------------------------------------------------


def evaluate(extractor: Callable[[dict[str, Any]], Output], items: list[dict[str, Any]]) -> dict:
    scores = {kind: Score() for kind in KINDS}
    for item in items:
        score(item, extractor(item), scores)
    return scores


def table(title: str, results: dict[str, dict[str, Score]], sizes: dict[str, int]) -> str:
    lines = [title, f"{'part':<10} {'n':>4}  " + "  ".join(f"{k + ' P/R':>17}" for k in KINDS)]
    for part, scores in results.items():
        cells = "  ".join(f"{s.precision:>8.3f}/{s.recall:<8.3f}" for s in scores.values())
        lines.append(f"{part:<10} {sizes[part]:>4}  {cells}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", action="store_true", help="the LLM path on the fake server")
    parser.add_argument("--errors", choices=KINDS, help="list the misses and extras of a kind")
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")
    import django

    django.setup()
    parts = {name: load(path) for name, path in PARTS.items() if path.exists()}
    if args.part != "all":
        parts = {args.part: parts[args.part]}
    parts["all"] = [item for items in parts.values() for item in items]
    server = None
    extractor: Callable[[dict[str, Any]], Output] = offline
    if args.llm:
        extractor, server = llm_extractor()
    try:
        results = {name: evaluate(extractor, items) for name, items in parts.items()}
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    title = "LLM path (fake server, recorded answers)" if args.llm else "offline"
    print(table(title, results, {name: len(items) for name, items in parts.items()}))
    if args.errors:
        for name, scores in results.items():
            if name != "all":
                print(f"\n{name}:\n" + "\n".join(scores[args.errors].errors))
    if args.json:
        figures = {
            part: {k: {"precision": s.precision, "recall": s.recall} for k, s in scores.items()}
            for part, scores in results.items()
        }
        args.json.write_text(json.dumps({"mode": title, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
