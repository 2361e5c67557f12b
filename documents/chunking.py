"""Cutting a document's sections into chunks of about `size` characters.

A chunk is a span of the extracted text inside one section (a page, a heading's section),
so its `char_start`/`char_end`, page and heading path say exactly where it came from. Spans
end at the best boundary before the size limit (a blank line, else a line end, a sentence
end, a space) and the next one starts `overlap` characters earlier, at a word boundary, so a
sentence cut at a boundary is whole in one of the two chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from documents.text_extraction import Extracted

BOUNDARIES = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")


@dataclass(frozen=True)
class Chunk:
    start: int
    end: int
    page: int | None
    headings: list[str]


def chunk_document(extracted: Extracted, *, size: int, overlap: int) -> list[Chunk]:
    """Every section's chunks, in reading order."""
    overlap = min(overlap, size // 2)  # a chunk always moves the cut forward by half a size
    return [
        Chunk(start, end, section.page, section.headings)
        for section in extracted.sections
        for start, end in spans(extracted.text, section.start, section.end, size, overlap)
    ]


def spans(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) cut into spans of at most `size` characters, white space trimmed."""
    found: list[tuple[int, int]] = []
    position = start
    while True:
        position = _skip_space(text, position, end)
        if position >= end:
            return found
        cut = end if end - position <= size else _best_cut(text, position, position + size)
        found.append((position, _trim_end(text, position, cut)))
        if cut >= end:
            return found
        position = _overlap_start(text, position, cut, overlap)


def _best_cut(text: str, start: int, limit: int) -> int:
    """The last good boundary in (start + half the span, limit]; `limit` if there is none."""
    floor = start + (limit - start) // 2
    for boundary in BOUNDARIES:
        found = text.rfind(boundary, floor, limit)
        if found != -1:
            return found + len(boundary)
    return limit


def _overlap_start(text: str, start: int, cut: int, overlap: int) -> int:
    """Where the next span starts: `overlap` characters before `cut`, moved forward to the
    start of a word; the cut itself when there is no overlap or no word boundary in it."""
    if overlap <= 0:
        return cut
    candidate = max(cut - overlap, start + 1)
    space = text.find(" ", candidate, cut)
    newline = text.find("\n", candidate, cut)
    breaks = [i for i in (space, newline) if i != -1]
    return min(breaks) + 1 if breaks else cut


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
