"""LoCoMo retrieval: evidence recall@k per category and conversation, with parameters chosen
on the data scored leave-one-conversation-out.

Every dialogue turn becomes one memory (run_id = conversation). The primary storage, `plain`,
is what a client storing a chat turn by turn would send: the turn as said ("Speaker: turn"),
when it was said (the session's date and time) as `occurred_at` (mem0's `timestamp`), the
speaker and turn id in `metadata` (which search does not read), nothing from any other turn.
Each question is searched within its own conversation through the same
selector the API uses, and recall@k is the share of the question's evidence turns in the top
k (LoCoMo's own retrieval metric). Categories 1-4 make the headline number; category 5
(adversarial) is reported apart.

Leave-one-conversation-out: every `--tune` configuration is scored; for each conversation,
the configuration with the best R@10 on the other conversations is scored on it, and the
held-out figures are pooled (what the defaults would give on a conversation nobody tuned on).
The default configuration is scored first; the grid holds the values it was chosen from.

    MEMORY_EMBEDDED_DB_NAME=bench_locomo python -m benchmarks.locomo   # ~6 min on 2 vCPUs
    python -m benchmarks.locomo --configs "hybrid:rrf:0.5,hybrid+neighbours=0" --tune ""
    python -m benchmarks.locomo --format exchange --fresh              # previous turn in context
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import Timer, add_model_argument, setup_django, table, write_results

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
)
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_CONFIGS = "hybrid,keyword,semantic"
# what the search defaults were chosen from (the fusion and its alpha, the neighbours' width
# and weight, the date weight); with the paraphrase checks (benchmarks/paraphrase.py)
DEFAULT_TUNE = (
    "hybrid,hybrid:calibrated:0.6,hybrid:calibrated:0.75,hybrid:minmax:0.5,hybrid:rrf:0.5,"
    "hybrid+neighbours=0,hybrid+neighbour_weight=0.2,hybrid+neighbour_weight=0.5,"
    "hybrid+neighbours=1,hybrid+date_weight=0,hybrid+date_weight=0.2,hybrid+date_weight=0.4"
)
FORMATS = ("plain", "text", "dated", "context", "exchange")
DEVELOPMENT = (1, 2, 3, 4)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="plain",
        help="memory text: 'Speaker: turn' (plain, the default), the turn's text alone (text), "
        "'[date] Speaker: turn' (dated), 'Speaker: turn' with the session date in the "
        "context field (context: keyword-indexed, not embedded), or with the turn it replies "
        "to in the context too (exchange: text from another turn, so never the primary "
        "figure). Every format keeps the date, speaker and turn id in metadata",
    )
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help="comma list of mode[:fusion[:alpha]][+option=value...], e.g. keyword,"
        "hybrid:rrf:0.5,hybrid+neighbours=0 (search options, as the API passes them)",
    )
    parser.add_argument(
        "--tune",
        default=DEFAULT_TUNE,
        help="configurations scored leave-one-conversation-out ('' skips it)",
    )
    parser.add_argument("--min-similarity", type=float, default=0.0, help="semantic floor")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument(
        "--fresh", action="store_true", help="ingest again (default: reuse a complete store)"
    )
    parser.add_argument("--reuse", action="store_true", help=argparse.SUPPRESS)  # the default
    parser.add_argument("--batch", type=int, default=256, help="memories per bulk create")
    add_model_argument(parser)
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


def session_time(raw: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> that moment (UTC: the data set names no time zone)."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conversation = sample["conversation"]
    out = []
    for key, value in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        date = session_date(conversation.get(f"{key}_date_time", ""))
        at = session_time(conversation.get(f"{key}_date_time", ""))
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
                    "at": at,
                    "session": key,
                    "previous": f"{previous['speaker']}: {previous['text']}" if previous else "",
                }
            )
    return out


def memory_text(turn: dict[str, Any], fmt: str) -> tuple[str, str]:
    """(content, context) for a turn in the chosen format."""
    match fmt:
        case "plain":
            return f"{turn['speaker']}: {turn['text']}", ""
        case "text":
            return turn["text"], ""
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
    from platformcore.lib.actor import command

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
                    occurred_at=turn["at"],
                    metadata={
                        "dia_id": turn["dia_id"],
                        "speaker": turn["speaker"],
                        "session_date": turn["date"],
                    },
                )
            )
    with Timer() as timer:
        for start in range(0, len(items), batch):
            memories_create_bulk(
                project=project, items=items[start : start + batch], actor=command("bench")
            )
    return {"memories": len(items), "seconds": round(timer.seconds, 2)}


def parse_config(text: str) -> dict[str, Any]:
    """'hybrid:minmax:0.4+neighbours=0' -> mode, fusion, alpha and other search options."""
    head, *extras = text.strip().split("+")
    mode, *rest = head.split(":")
    options: dict[str, Any] = {}
    if rest:
        options["fusion"] = rest[0]
    if len(rest) > 1:
        options["alpha"] = float(rest[1])
    for extra in extras:
        name, _, value = extra.partition("=")
        options[name] = _number(value)
    return {"label": text.strip(), "mode": mode, "options": options}


def _number(value: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


# One scored question: (conversation, category, {k: recall@k, "hit@1": 0 or 1, "rr": the
# reciprocal rank of its first evidence turn in the top max(KS), 0 when none is}).
Scored = tuple[str, int, dict[int | str, float]]


def evaluate(
    project: Any, samples: list[dict[str, Any]], config: dict[str, Any], floor: float
) -> tuple[list[Scored], list[float]]:
    """Each question's recall@k under `config`, and the search latencies (ms)."""
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    scored: list[Scored] = []
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
            recall: dict[int | str, float] = {
                k: len(evidence & set(found[:k])) / len(evidence) for k in KS
            }
            first = next((i for i, dia in enumerate(found, start=1) if dia in evidence), None)
            recall["rr"] = 1 / first if first else 0.0
            recall["hit@1"] = 1.0 if first == 1 else 0.0
            scored.append((sample["sample_id"], qa["category"], recall))
    return scored, latencies


def summarise(scored: list[Scored]) -> dict[str, dict[str, float]]:
    """Mean recall@k per category and over categories 1-4."""
    out: dict[str, dict[str, float]] = {}
    for category in sorted({c for _, c, _ in scored}):
        out[CATEGORIES[category]] = _means([r for _, c, r in scored if c == category])
    out["overall 1-4"] = _means([r for _, c, r in scored if c in DEVELOPMENT])
    return out


def by_conversation(scored: list[Scored], k: int = 10) -> dict[str, float]:
    """Recall@k over categories 1-4, per conversation."""
    names = dict.fromkeys(name for name, _, _ in scored)
    return {
        name: _mean([r[k] for n, c, r in scored if n == name and c in DEVELOPMENT])
        for name in names
    }


def leave_one_out(results: dict[str, list[Scored]], k: int = 10) -> dict[str, Any]:
    """For each conversation, the configuration with the best recall@k (categories 1-4) on
    the other conversations, scored on this one; the held-out scores pooled."""
    conversations = list(dict.fromkeys(name for s in results.values() for name, _, _ in s))
    pooled: list[dict[int | str, float]] = []
    chosen = {}
    for held_out in conversations:

        def tuned(label: str, held_out: str = held_out) -> float:
            return _mean([r[k] for n, c, r in results[label] if n != held_out and c in DEVELOPMENT])

        best = max(results, key=tuned)  # first in the grid on ties: the default is listed first
        chosen[held_out] = best
        pooled += [r for n, c, r in results[best] if n == held_out and c in DEVELOPMENT]
    in_sample = {
        label: _means([r for _, c, r in s if c in DEVELOPMENT]) for label, s in results.items()
    }
    return {"held_out": _means(pooled), "chosen": chosen, "in_sample": in_sample}


def _means(recalls: list[dict[int | str, float]]) -> dict[str, float]:
    out: dict[str, float] = {f"@{k}": _mean([r[k] for r in recalls]) for k in KS}
    out["hit@1"] = _mean([r["hit@1"] for r in recalls])
    out["MRR"] = _mean([r["rr"] for r in recalls])
    out["n"] = len(recalls)
    return out


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def store(args: argparse.Namespace, samples: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """The project holding the conversations in `args.format`: the one a previous run
    completed (its memory count recorded in the project's name) unless `--fresh`."""
    from tenants.models import Project
    from tenants.services import project_create

    slug = f"locomo-{args.format}"
    project = Project.objects.filter(slug=slug).first()
    complete = project is not None and project.name == f"{slug} complete"
    if complete and not args.fresh:
        return project, {"reused": True}
    if project is not None:
        project.delete()
    project = project_create(slug=slug)
    stats = ingest(project, samples, args.format, args.batch)
    project.name = f"{slug} complete"
    project.save(update_fields=["name"])
    print(f"ingested {stats['memories']} turns in {stats['seconds']} s")
    return project, stats


def report(label: str, scored: list[Scored], latencies: list[float], fmt: str) -> dict[str, Any]:
    summary = summarise(scored)
    conversations = by_conversation(scored)
    rows = [
        [name, v["hit@1"], v["MRR"], *(v[f"@{k}"] for k in KS), int(v["n"])]
        for name, v in summary.items()
    ]
    print(f"\n{label}  (format={fmt}, mean {_mean(latencies)} ms/query)")
    print(table(["category", "hit@1", "MRR", *(f"R@{k}" for k in KS), "n"], rows))
    print("R@10 by conversation:", ", ".join(f"{k} {v}" for k, v in conversations.items()))
    return {
        "recall": summary,
        "recall_at_10_by_conversation": conversations,
        "mean_ms": _mean(latencies),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_search", args.model)
    started = time.perf_counter()
    samples = json.loads(args.data.read_text())
    project, ingest_stats = store(args, samples)
    if args.conversations:
        samples = samples[: args.conversations]

    configs = [c for c in args.configs.split(",") if c.strip()]
    grid = [c for c in args.tune.split(",") if c.strip()]
    scored: dict[str, list[Scored]] = {}
    results = {}
    for label in dict.fromkeys([*configs, *grid]):
        config = parse_config(label)
        scored[label], latencies = evaluate(project, samples, config, args.min_similarity)
        if label in configs:
            results[label] = report(label, scored[label], latencies, args.format)
        else:
            results[label] = {
                "recall": summarise(scored[label]),
                "recall_at_10_by_conversation": by_conversation(scored[label]),
                "mean_ms": _mean(latencies),
            }

    loo = None
    if grid:
        loo = leave_one_out({label: scored[label] for label in grid})
        print(f"\nleave-one-conversation-out over {len(grid)} configurations (categories 1-4):")
        columns = ["hit@1", "MRR", *(f"@{k}" for k in KS)]
        rows = [[label, *(v[c] for c in columns)] for label, v in loo["in_sample"].items()]
        rows.append(["held out (chosen per conversation)", *(loo["held_out"][c] for c in columns)])
        print(table(["configuration", "hit@1", "MRR", *(f"R@{k}" for k in KS)], rows))
        print("chosen:", ", ".join(f"{k} {v}" for k, v in loo["chosen"].items()))

    seconds = round(time.perf_counter() - started, 1)
    print(f"\n{len(dict.fromkeys([*configs, *grid]))} configurations in {seconds} s")
    path = write_results(
        "locomo",
        {
            "format": args.format,
            "min_similarity": args.min_similarity,
            "conversations": [s["sample_id"] for s in samples],
            "ingest": ingest_stats,
            "results": results,
            "leave_one_out": loo,
            "seconds": seconds,
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
