"""Progress bars for the commands: one tqdm bar per section (or table) as its rows go by."""

from __future__ import annotations

from typing import Any, TextIO

from tqdm import tqdm


class SectionBars:
    """Callable as `progress(section, rows done, rows in the section)`."""

    def __init__(self, *, quiet: bool, unit: str = "row", file: TextIO | None = None) -> None:
        self.quiet = quiet
        self.unit = unit
        self.file = file
        self.bars: dict[str, Any] = {}

    def __call__(self, name: str, done: int, total: int | None = None) -> None:
        bar = self.bars.get(name)
        if bar is None:
            bar = tqdm(
                total=total or None, desc=name, unit=self.unit, disable=self.quiet, file=self.file
            )
            self.bars[name] = bar
        bar.update(done)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
