"""Readable text out of an upload, as sections that follow its structure.

A document becomes one extracted text and the sections it is made of: Markdown and HTML by
their headings (each section knows the headings above it), PDFs by page, plain text as one
section. Chunking (chunking.py) cuts within sections, never across them, so a passage never
mixes two pages or two chapters. Offsets are into the extracted text: for plain text and
Markdown that is the upload itself (line endings made `\\n`); for HTML the readable text
without markup; for a PDF the pages' text joined by blank lines.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from documents.errors import TooLarge, UnsupportedType
from platformcore.lib.errors import InvalidInput

PLAIN, MARKDOWN, HTML, PDF = "text/plain", "text/markdown", "text/html", "application/pdf"
SUPPORTED = (PLAIN, MARKDOWN, HTML, PDF)
ALIASES = {
    "text/x-markdown": MARKDOWN,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
}
EXTENSIONS = {
    ".txt": PLAIN,
    ".text": PLAIN,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
}
UNKNOWN = {"", "application/octet-stream", "binary/octet-stream"}


@dataclass
class Section:
    start: int
    end: int
    page: int | None = None
    headings: list[str] = field(default_factory=list)


@dataclass
class Extracted:
    text: str
    sections: list[Section]
    pages: int | None = None


def resolve_mime_type(declared: str | None, filename: str = "", data: bytes = b"") -> str:
    """The supported type of an upload: as declared (parameters dropped), else by its file
    name's extension or a PDF's magic bytes; UnsupportedType (415) otherwise."""
    mime = (declared or "").split(";")[0].strip().lower()
    mime = ALIASES.get(mime, mime)
    if mime in UNKNOWN:
        suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        mime = EXTENSIONS.get(suffix, PDF if data.startswith(b"%PDF-") else mime)
    if mime in SUPPORTED:
        return mime
    shown = mime or "an unknown type"
    message = f"{shown} is not supported; upload one of {', '.join(SUPPORTED)}"
    raise UnsupportedType(message, fields={"mime_type": [message]})


def extract(data: bytes, mime_type: str, *, max_pages: int) -> Extracted:
    """The readable text and sections of `data`, an upload of the (resolved) `mime_type`."""
    match mime_type:
        case "application/pdf":
            return _pdf(data, max_pages=max_pages)
        case "text/html":
            return _html(_decoded(data))
        case "text/markdown":
            return _markdown(_decoded(data))
        case _:
            text = _decoded(data)
            return Extracted(text, [Section(0, len(text))])


def _decoded(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = "text uploads must be UTF-8"
        raise InvalidInput(message, fields={"file": [message]}) from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _markdown(text: str) -> Extracted:
    """A section per heading; the heading line itself is in the chunks' `heading_path`, not
    in their text. Fenced code is skipped when looking for headings (`# comment`)."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    start, offset, fenced = 0, 0, False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _ATX_HEADING.match(line.rstrip("\n"))
        if heading:
            sections.append(Section(start, offset, headings=[title for _, title in path]))
            level = len(heading.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, heading.group(2).strip()))
            start = offset + len(line)
        offset += len(line)
    sections.append(Section(start, len(text), headings=[title for _, title in path]))
    return Extracted(text, [s for s in sections if text[s.start : s.end].strip()])


class _Readable(HTMLParser):
    """The readable text of an HTML page: blocks separated by blank lines, headings starting
    sections, scripts, styles and the head left out."""

    SKIP = {"script", "style", "head", "template", "noscript", "svg"}
    BLOCKS = {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "nav",
        "li", "ul", "ol", "table", "tr", "pre", "blockquote", "br", "hr", "dd", "dt",
        "figcaption", "title",
    }  # fmt: skip
    HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.section_start = 0
        self.skipping = 0
        self.heading: tuple[int, list[str]] | None = None
        self.space = False  # the last text seen ended with white space

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.HEADINGS:
            self.heading = (self.HEADINGS[tag], [])
        elif tag in self.BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.HEADINGS and self.heading is not None:
            level, words = self.heading
            self.heading = None
            self._break()
            self.sections.append(self._section())
            self.path = [(lvl, title) for lvl, title in self.path if lvl < level]
            self.path.append((level, " ".join(" ".join(words).split())))
            self.section_start = self.length
        elif tag in self.BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.heading is not None:
            self.heading[1].append(data)
            return
        words = " ".join(data.split())
        joined = self.parts and not self.parts[-1][-1:].isspace()
        if words and joined and (self.space or data[:1].isspace()):
            words = " " + words  # white space between inline runs stays one space
        self.space = data[-1:].isspace() if words else self.space or data[-1:].isspace()
        if words:
            self._add(words)

    def _break(self) -> None:
        self.space = False
        if self.parts and not self.parts[-1].endswith("\n\n"):
            self._add("\n\n")

    def _add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def _section(self) -> Section:
        return Section(self.section_start, self.length, headings=[t for _, t in self.path])

    def result(self) -> Extracted:
        self.close()
        self.sections.append(self._section())
        text = "".join(self.parts)
        return Extracted(text, [s for s in self.sections if text[s.start : s.end].strip()])


def _html(markup: str) -> Extracted:
    parser = _Readable()
    parser.feed(markup)
    return parser.result()


def _pdf(data: bytes, *, max_pages: int) -> Extracted:
    """One section per page (pages numbered from 1); a page without text (a scan) adds none."""
    # imported here: pypdf is slow to import, and only a PDF upload needs it
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        count = len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        message = f"not a readable PDF: {exc}"
        raise InvalidInput(message, fields={"file": [message]}) from exc
    if count > max_pages:
        message = f"at most {max_pages} pages, got {count}"
        raise TooLarge(f"The PDF is too long: {message}", fields={"file": [message]})
    parts: list[str] = []
    sections: list[Section] = []
    length = 0
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").replace("\r\n", "\n").strip()
        if not text:
            continue
        if parts:
            parts.append("\n\n")
            length += 2
        sections.append(Section(length, length + len(text), page=number))
        parts.append(text)
        length += len(text)
    return Extracted("".join(parts), sections, pages=count)
