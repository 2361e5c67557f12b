"""LoCoMo retrieval: evidence recall@k per category for keyword, semantic and hybrid search.

Every dialogue turn becomes one memory (run_id = conversation; "Speaker: turn" as content;
the session date and the turn it replies to in the memory's context field, which is
keyword-indexed but not embedded; see --format), each question is searched within its own
conversation through the
same selector the API uses, and recall@k is the fraction of the question's evidence turns in
the top k (LoCoMo's own retrieval metric). Categories 1-4 make the headline number;
category 5 (adversarial) is reported apart.

    MEMORY_EMBEDDED_DB_NAME=bench_search python -m benchmarks.locomo
    python -m benchmarks.locomo --configs "hybrid:rrf:0.5,hybrid:minmax:0.4" --reuse
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import Timer, setup_django, table, write_results

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
)
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_CONFIGS = "keyword,semantic,hybrid,hybrid:minmax:0.4,hybrid:rrf:0.7"
FORMATS = ("plain", "speaker", "dated", "context", "exchange")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="exchange",
        help="memory text: plain turn, 'Speaker: turn', '[date] Speaker: turn', "
        "'Speaker: turn' with the session date in the context field (context: keyword-"
        "indexed, not embedded: a date says when, not what, so it stays out of the vector), "
        "or also the turn it replies to in the context (exchange, the default: what was known "
        "when the turn was said; an answer often lacks the words of its question)",
    )
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help="comma list of mode[:fusion[:alpha]], e.g. keyword,semantic,hybrid:rrf:0.5",
    )
    parser.add_argument("--min-similarity", type=float, default=0.0, help="semantic floor")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--reuse", action="store_true", help="keep an existing ingest")
    parser.add_argument("--batch", type=int, default=256, help="memories per bulk create")
    return parser.parse_args(argv)


def normalise_evidence(raw: list[str]) -> set[str]:
    ids = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", item):
            match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if match:
                ids.add(f"D{int(match[1])}:{int(match[2])}")
    return ids


def session_date(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '8 May 2023'."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").strftime("%-d %B %Y")
    except ValueError:
        return raw.strip()


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conversation = sample["conversation"]
    out = []
    for key, value in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        date = session_date(conversation.get(f"{key}_date_time", ""))
        for turn in value:
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shares {turn['blip_caption']}]"
            previous = out[-1] if out and out[-1]["session"] == key else None
            out.append(
                {
                    **turn,
                    "text": text,
                    "date": date,
                    "session": key,
                    "previous": f"{previous['speaker']}: {previous['text']}" if previous else "",
                }
            )
    return out


def memory_text(turn: dict[str, Any], fmt: str) -> tuple[str, str]:
    """(content, context) for a turn in the chosen format."""
    match fmt:
        case "plain":
            return turn["text"], ""
        case "speaker":
            return f"{turn['speaker']}: {turn['text']}", ""
        case "dated":
            return f"[{turn['date']}] {turn['speaker']}: {turn['text']}", ""
        case "exchange":
            context = f"{turn['date']}. {turn['previous']}" if turn["previous"] else turn["date"]
            return f"{turn['speaker']}: {turn['text']}", context
        case _:
            return f"{turn['speaker']}: {turn['text']}", turn["date"]


def ingest(project: Any, samples: list[dict[str, Any]], fmt: str, batch: int) -> dict[str, Any]:
    from memories.services.bulk import memories_create_bulk
    from memories.services.memories import MemoryInput
    from memoryplatform.lib.actor import command

    items = []
    for sample in samples:
        for turn in turns(sample):
            content, context = memory_text(turn, fmt)
            items.append(
                MemoryInput(
                    content=content,
                    context=context,
                    run_id=sample["sample_id"],
                    memory_type="episode",
                    source="locomo",
                    metadata={"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
                )
            )
    with Timer() as timer:
        for start in range(0, len(items), batch):
            memories_create_bulk(
                project=project, items=items[start : start + batch], actor=command("bench")
            )
    return {"memories": len(items), "seconds": round(timer.seconds, 2)}


def parse_config(text: str) -> dict[str, Any]:
    mode, *rest = text.split(":")
    options: dict[str, Any] = {}
    if rest:
        options["fusion"] = rest[0]
    if len(rest) > 1:
        options["alpha"] = float(rest[1])
    return {"label": text, "mode": mode, "options": options}


def evaluate(
    project: Any,
    samples: list[dict[str, Any]],
    config: dict[str, Any],
    floor: float,
    by_conversation: dict[str, list[float]] | None = None,
):
    """Recall per category and k, and the latencies; `by_conversation` (if given) gets each
    conversation's recall@10 over categories 1-4 (is a change better in most of them, or
    in one?)."""
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    recalls: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies = []
    for sample in samples:
        for qa in sample["qa"]:
            evidence = normalise_evidence(qa.get("evidence", []))
            if not evidence:
                continue
            query = SearchQuery(
                text=str(qa["question"]),
                mode=config["mode"],
                filters=MemoryFilters(run_id=sample["sample_id"]),
                limit=max(KS),
                min_similarity=floor,
                options=dict(config["options"]),
            )
            started = time.perf_counter()
            hits = memory_search(project=project, query=query).hits
            latencies.append((time.perf_counter() - started) * 1000)
            found = [hit.memory.metadata.get("dia_id") for hit in hits]
            for k in KS:
                recalls[qa["category"]][k].append(len(evidence & set(found[:k])) / len(evidence))
            if by_conversation is not None and qa["category"] in (1, 2, 3, 4):
                recall = len(evidence & set(found[:10])) / len(evidence)
                by_conversation.setdefault(sample["sample_id"], []).append(recall)
    return recalls, latencies


def summarise(recalls: dict[int, dict[int, list[float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for category, by_k in sorted(recalls.items()):
        out[CATEGORIES[category]] = {f"@{k}": _mean(values) for k, values in by_k.items()}
        out[CATEGORIES[category]]["n"] = len(by_k[KS[0]])
    headline = {k: [v for c in (1, 2, 3, 4) for v in recalls[c][k]] for k in KS}
    out["overall 1-4"] = {f"@{k}": _mean(values) for k, values in headline.items()}
    out["overall 1-4"]["n"] = len(headline[KS[0]])
    return out


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_search")
    from tenants.models import Project
    from tenants.services import project_create

    samples = json.loads(args.data.read_text())
    if args.conversations:
        samples = samples[: args.conversations]
    slug = f"locomo-{args.format}"
    project = Project.objects.filter(slug=slug).first()
    ingest_stats: dict[str, Any] = {"reused": True}
    if project is None or not args.reuse:
        if project is not None:
            project.delete()
        project = project_create(slug=slug)
        ingest_stats = ingest(project, samples, args.format, args.batch)
        print(f"ingested {ingest_stats['memories']} turns in {ingest_stats['seconds']} s")

    results = {}
    for config in map(parse_config, args.configs.split(",")):
        conversations: dict[str, list[float]] = {}
        recalls, latencies = evaluate(
            project, samples, config, args.min_similarity, by_conversation=conversations
        )
        summary = summarise(recalls)
        per_conversation = {name: _mean(values) for name, values in conversations.items()}
        results[config["label"]] = {
            "recall": summary,
            "recall_at_10_by_conversation": per_conversation,
            "mean_ms": _mean(latencies),
        }
        rows = [[name, *(v[f"@{k}"] for k in KS), int(v["n"])] for name, v in summary.items()]
        print(f"\n{config['label']}  (format={args.format}, mean {_mean(latencies)} ms/query)")
        print(table(["category", *(f"R@{k}" for k in KS), "n"], rows))
        print("R@10 by conversation:", ", ".join(f"{k} {v}" for k, v in per_conversation.items()))

    path = write_results(
        "locomo",
        {
            "format": args.format,
            "min_similarity": args.min_similarity,
            "conversations": [s["sample_id"] for s in samples],
            "ingest": ingest_stats,
            "results": results,
        },
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
