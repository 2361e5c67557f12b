"""PII masking applied to memory text before it is stored, hashed or embedded.

Masking is destructive on purpose: the original is never stored, and the
content hash is computed from the masked text, so duplicates are detected on what is kept.
A project may switch masking off (`{"pii_masking": false}` in its settings) or add and
disable patterns (`{"pii_patterns": {"employee_id": "EMP-\\\\d{6}", "phone": null}}`); an
added pattern `name` is replaced by `[REDACTED_NAME]`.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable

from memories.services.tuning import tuning
from tenants.models import Project

logger = logging.getLogger(__name__)


def _email(match: re.Match[str]) -> str:
    """The address up to its last alphabetic label of two letters or more (`a@b.com.123`
    masks `a@b.com`, as a backtracking pattern would); no such label: not an address."""
    domain = match.group(0).split("@", 1)[1]
    labels = domain.split(".")
    for end in range(len(labels) - 1, 0, -1):
        if len(labels[end]) >= 2 and labels[end].isascii() and labels[end].isalpha():
            return "[REDACTED_EMAIL]" + "".join("." + label for label in labels[end + 1 :])
    return match.group(0)


# name -> (pattern, replacement); order matters: API keys before e-mails before phones.
# Every pattern runs in time linear in the text: a run of address characters is read once
# (a lookbehind starts matches only at a run's start, possessive quantifiers never give back),
# so 1 MB of text without an address takes milliseconds, not minutes.
BUILTIN_PATTERNS: dict[str, tuple[str, str | Callable[[re.Match[str]], str]]] = {
    "api_key": (
        r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{32,}"
        r"|\bAIza[0-9A-Za-z\-_]{35}"
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}"
        r"|\bAKIA[0-9A-Z]{16}\b"
        r"|\bxox[abpr]-[A-Za-z0-9-]{10,}",
        "[REDACTED_API_KEY]",
    ),
    "email": (
        r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++@[A-Za-z0-9\-]++(?:\.[A-Za-z0-9\-]++)*+",
        _email,
    ),
    "password": (
        r"(?i)(\b(?:password|passwd|pwd|passphrase)|비밀번호|비번)(\s*(?:[:=]|\bis\b)\s*)"
        r"(?!\[REDACTED)\S+",
        r"\1\2[REDACTED_PWD]",
    ),
    "phone": (
        r"\b01[016789][-\s]?\d{3,4}[-\s]?\d{4}\b"  # Korean mobile (Memento)
        r"|(?<![\w+])\+\d{1,3}[\s.\-]?(?:\(?\d{1,4}\)?[\s.\-]?){2,4}\d{2,4}\b"  # +international
        r"|(?<![\w-])\(?\b\d{3}\)?[\s.\-]\d{3}[\s.\-]\d{4}\b",  # North American
        "[REDACTED_PHONE]",
    ),
}


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error as exc:
        logger.warning("ignoring invalid PII pattern %r: %s", pattern, exc)
        return None


Replacement = str | Callable[[re.Match[str]], str]


def _patterns(project: Project) -> Iterable[tuple[re.Pattern[str], Replacement]]:
    custom = (project.settings or {}).get("pii_patterns") or {}
    if not isinstance(custom, dict):
        custom = {}
    for name, (pattern, replacement) in BUILTIN_PATTERNS.items():
        if name in custom and custom[name] is None:
            continue  # the project switched this built-in off
        compiled = _compile(pattern)
        if compiled is not None:
            yield compiled, replacement
    for name, pattern in custom.items():
        if name in BUILTIN_PATTERNS or not isinstance(pattern, str):
            continue
        compiled = _compile(pattern)
        if compiled is not None:
            yield compiled, f"[REDACTED_{re.sub(r'[^A-Za-z0-9]+', '_', name).upper()}]"


def mask_pii(*, project: Project, text: str) -> str:
    """`text` with the project's PII patterns replaced, or unchanged if masking is off."""
    if not text or not tuning(project, "pii_masking"):
        return text
    for pattern, replacement in _patterns(project):
        text = pattern.sub(replacement, text)
    return text
