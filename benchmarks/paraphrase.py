"""Paraphrase retrieval: is a memory found when the question shares none of its words?

benchmarks/data/paraphrases.jsonl holds question/memory pairs written for this benchmark
(preferences, facts, procedures, errors, decisions: "User prefers dark mode" / "what theme
does alice like"), each marked `shares_keywords` (does the question share a content word with
the memory), and distractors: memories of the same users that answer none of the questions.
Every memory and distractor is stored for one user (`alice`) in a fresh project through
`memories_create_bulk`; each question is searched for that user through the same selector
the API uses, 5 hits, and hit@k is the fraction of questions whose memory is in the top k
(hit@1: first), MRR the mean of 1/its rank (0 past the fifth).
Reported overall, by `shares_keywords` and by memory type, for the product defaults (no
floor, fusion or alpha given: the MEMORY_SEARCH_* settings) and for every config of
`--configs` (mode[:fusion[:alpha]], as in benchmarks/locomo.py) at every semantic floor of
`--floors` (`SearchQuery.min_similarity`). The labels are checked against the keyword
index's own stemming (PostgreSQL's english lexemes): disagreements are printed.

benchmarks/data/paraphrases_common_word.jsonl (`--data`) holds 50 questions that each share
one common word ("team", "call", "work", "day", "meeting"...) with their memory and with
other memories and distractors: where min-max fusion crowned a one-word keyword match.

    MEMORY_EMBEDDED_DB_NAME=bench_paraphrase python -m benchmarks.paraphrase
    python -m benchmarks.paraphrase --data benchmarks/data/paraphrases_common_word.jsonl
    python -m benchmarks.paraphrase --configs "hybrid:minmax:0.5,hybrid:rrf:0.5" --floors 0,0.3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import Timer, add_model_argument, setup_django, table, write_results
from benchmarks.locomo import parse_config as locomo_config

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "paraphrases.jsonl"
DEFAULT_CONFIGS = (
    "keyword,semantic,hybrid:calibrated:0.6,hybrid:calibrated:0.75,hybrid:minmax:0.5,"
    "hybrid:minmax:0.3,hybrid:rrf:0.5"
)
DEFAULT_FLOORS = "0,0.2,0.3,0.4,0.5"
TYPES = ("preference", "fact", "procedure", "error", "decision")
USER = "alice"
LIMIT = 5
KS = (1, 5)
PROJECT_SLUG = "paraphrase"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help="comma list of mode[:fusion[:alpha]], e.g. semantic,hybrid:rrf:0.5",
    )
    parser.add_argument(
        "--floors", default=DEFAULT_FLOORS, help="comma list of semantic floors (0 = off)"
    )
    parser.add_argument("--misses", action="store_true", help="print every config's misses")
    add_model_argument(parser)
    return parser.parse_args(argv)


def load(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    pairs, distractors = [], []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if "distractor" in row:
            distractors.append(row["distractor"])
            continue
        if row["memory_type"] not in TYPES or not isinstance(row["shares_keywords"], bool):
            raise ValueError(f"{path}:{number}: bad memory_type or shares_keywords")
        pairs.append(row)
    contents = [pair["memory"] for pair in pairs] + distractors
    if len(set(contents)) != len(contents):
        raise ValueError(f"{path}: memories and distractors must be distinct")
    return pairs, distractors


def ingest(pairs: list[dict[str, Any]], distractors: list[str]) -> tuple[Any, dict[str, Any]]:
    """A fresh project holding every memory and distractor for USER; each pair gets the id
    of its memory (`memory_id`)."""
    from memories.services.bulk import memories_create_bulk
    from memories.services.memories import MemoryInput
    from platformcore.lib.actor import command
    from tenants.models import Project
    from tenants.services import project_create

    Project.objects.filter(slug=PROJECT_SLUG).delete()
    project = project_create(slug=PROJECT_SLUG)
    items = [
        MemoryInput(content=pair["memory"], memory_type=pair["memory_type"], user_id=USER)
        for pair in pairs
    ] + [MemoryInput(content=text, memory_type="fact", user_id=USER) for text in distractors]
    with Timer() as timer:
        results = memories_create_bulk(project=project, items=items, actor=command("bench"))
    for pair, result in zip(pairs, results, strict=False):
        pair["memory_id"] = result.memory.pk
    outcomes = zip(items, results, strict=True)
    merged = [item.content for item, result in outcomes if not result.created]
    if merged:
        raise RuntimeError(f"merged into other memories (make them less alike): {merged}")
    return project, {"memories": len(results), "seconds": round(timer.seconds, 2)}


def check_labels(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs whose label disagrees with PostgreSQL's lexemes (the keyword index's stemming),
    with the lexemes they share."""
    from django.db import connection

    from memories.models import TEXT_SEARCH_CONFIG

    disagreements = []
    with connection.cursor() as cursor:
        for pair in pairs:
            cursor.execute(
                "SELECT ARRAY(SELECT unnest(tsvector_to_array(to_tsvector(%s::regconfig, %s)))"
                " INTERSECT SELECT unnest(tsvector_to_array(to_tsvector(%s::regconfig, %s))))",
                [TEXT_SEARCH_CONFIG, pair["memory"], TEXT_SEARCH_CONFIG, pair["question"]],
            )
            shared = sorted(cursor.fetchone()[0])
            pair["shared_lexemes"] = shared
            if bool(shared) != pair["shares_keywords"]:
                disagreements.append(
                    {"question": pair["question"], "memory": pair["memory"], "shared": shared}
                )
    return disagreements


def parse_config(text: str) -> dict[str, Any]:
    """`mode[:fusion[:alpha]]` as LoCoMo's benchmark reads it, or `defaults`."""
    if text == "defaults":
        return {"label": "defaults", "mode": "hybrid", "options": {}}
    return locomo_config(text)


def evaluate(
    project: Any, pairs: list[dict[str, Any]], config: dict[str, Any], floor: float | None
) -> tuple[list[dict[str, Any]], list[float]]:
    """Per pair: the rank of its memory in the top LIMIT (None: missed) and the top hit."""
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    outcomes, latencies = [], []
    for pair in pairs:
        query = SearchQuery(
            text=pair["question"],
            mode=config["mode"],
            filters=MemoryFilters(user_id=USER),
            limit=LIMIT,
            min_similarity=floor,
            options=dict(config["options"]),
        )
        started = time.perf_counter()
        hits = memory_search(project=project, query=query).hits
        latencies.append((time.perf_counter() - started) * 1000)
        found = [hit.memory.pk for hit in hits]
        rank = found.index(pair["memory_id"]) + 1 if pair["memory_id"] in found else None
        outcomes.append({"rank": rank, "top": hits[0].memory.content if hits else None})
    return outcomes, latencies


def summarise(pairs: list[dict[str, Any]], outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[int | None]] = defaultdict(list)
    for pair, outcome in zip(pairs, outcomes, strict=True):
        shared = "shared" if pair["shares_keywords"] else "unshared"
        for group in ("overall", shared, pair["memory_type"]):
            groups[group].append(outcome["rank"])
    return {
        group: {
            **{f"@{k}": _rate(ranks, k) for k in KS},
            "MRR": round(sum(1 / rank for rank in ranks if rank) / len(ranks), 4),
            "n": len(ranks),
        }
        for group, ranks in groups.items()
    }


def _rate(ranks: list[int | None], k: int) -> float:
    return round(sum(1 for rank in ranks if rank is not None and rank <= k) / len(ranks), 4)


def _floors(text: str) -> list[float]:
    return [float(value) for value in text.split(",") if value.strip()]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_paraphrase", args.model)
    from django.conf import settings

    pairs, distractors = load(args.data)
    project, ingest_stats = ingest(pairs, distractors)
    unshared = sum(not pair["shares_keywords"] for pair in pairs)
    print(
        f"stored {ingest_stats['memories']} memories ({len(pairs)} pairs, {unshared} sharing"
        f" no keyword; {len(distractors)} distractors) in {ingest_stats['seconds']} s"
    )
    disagreements = check_labels(pairs)
    for item in disagreements:
        print(f"label vs lexemes: {item['question']!r} / {item['memory']!r}: {item['shared']}")

    defaults = {
        "min_similarity": settings.MEMORY_SEARCH_MIN_SIMILARITY,
        "fusion": settings.MEMORY_SEARCH_FUSION,
        "alpha": settings.MEMORY_SEARCH_HYBRID_ALPHA,
    }
    runs: list[tuple[dict[str, Any], float | None]] = [(parse_config("defaults"), None)]
    for config in map(parse_config, args.configs.split(",")):
        floors = _floors(args.floors) if config["mode"] != "keyword" else [0.0]
        runs.extend((config, floor) for floor in floors)

    results, rows = [], []
    for config, floor in runs:
        outcomes, latencies = evaluate(project, pairs, config, floor)
        summary = summarise(pairs, outcomes)
        shown_floor = defaults["min_similarity"] if floor is None else floor
        results.append(
            {
                "config": config["label"],
                "min_similarity": shown_floor,
                "summary": summary,
                "mean_ms": round(sum(latencies) / len(latencies), 2),
                "ranks": [outcome["rank"] for outcome in outcomes],
            }
        )
        rows.append(
            [
                config["label"],
                shown_floor,
                summary["overall"]["@1"],
                summary["overall"]["MRR"],
                summary["overall"]["@5"],
                summary.get("shared", {}).get("@5", 0.0),
                summary.get("unshared", {}).get("@5", 0.0),
                *(summary.get(name, {}).get("@5", 0.0) for name in TYPES),
            ]
        )
        if args.misses or floor is None:
            for pair, outcome in zip(pairs, outcomes, strict=True):
                if outcome["rank"] is None:
                    print(
                        f"miss [{config['label']} floor {shown_floor}] {pair['question']!r}"
                        f" -> {pair['memory']!r}; top: {outcome['top']!r}"
                    )

    print(
        f"\nhit@k of {len(pairs)} pairs; defaults = hybrid, {defaults['fusion']}"
        f" alpha {defaults['alpha']}, floor {defaults['min_similarity']}"
    )
    headers = ["config", "floor", "hit@1", "MRR", "hit@5", "shared@5", "unshared@5"]
    print(table([*headers, *(f"{name[:5]}@5" for name in TYPES)], rows))

    path = write_results(
        "paraphrase",
        {
            "data": str(args.data),
            "pairs": len(pairs),
            "unshared": unshared,
            "distractors": len(distractors),
            "limit": LIMIT,
            "defaults": defaults,
            "ingest": ingest_stats,
            "label_disagreements": disagreements,
            "questions": [pair["question"] for pair in pairs],
            "results": results,
        },
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
