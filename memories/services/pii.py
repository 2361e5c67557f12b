"""PII and secret masking, applied to every stored text before it is stored, hashed or embedded.

`scrub_for_storage` is the one place that knows which fields hold free text: every write
service (memories, entities, relations, links, feedback, contradiction notes) passes the
values it is about to store through it, so a new text field is masked by adding its name to
`TEXT_FIELDS`, `LIST_FIELDS` or `JSON_FIELDS` here.

Masking is destructive on purpose: the original is never stored, and the content hash is
computed from the masked text, so duplicates are detected on what is kept. Patterns look at the
text after Unicode NFKC normalisation with zero-width characters removed (so `a\u200b@b.io` or
full-width letters do not slip past); a text in which nothing is found is stored exactly as
given, one in which something is masked is stored normalised.

A project may switch masking off (`{"pii_masking": false}` in its settings) or add and
disable patterns (`{"pii_patterns": {"employee_id": "EMP-\\\\d{6}", "phone": null}}`); an
added pattern `name` is replaced by `[REDACTED_NAME]`.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from memories.services.tuning import tuning
from tenants.models import Project

logger = logging.getLogger(__name__)

# U+200B zero width space, U+200C/D zero width (non-)joiner, U+2060 word joiner, U+FEFF BOM.
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))

# Free-text fields, by the name services store them under. A list field's items and a JSON
# field's string values (at any depth) are masked one by one; `FIELD_LIMITS` cuts a masked
# value back to its column's size (a replacement can be longer than what it replaced).
TEXT_FIELDS = frozenset(
    {"content", "context", "description", "name", "note", "suggestion", "reason", "text"}
)
LIST_FIELDS = frozenset({"tags", "aliases"})
JSON_FIELDS = frozenset({"metadata"})
FIELD_LIMITS = {"tags": 100, "aliases": 255, "name": 255}

REDACTED_SECRET = "[REDACTED_SECRET]"

# Key names whose value is a secret, in `key=value` / `"key": "value"` text and as metadata
# keys: the key's last word (split on `_ - .` and camelCase) is a secret word, or is `key`
# after api/access/private/secret. `max_tokens` or `token_count` are not secrets;
# `access_token`, `DB_PASSWORD` and `x-api-key` are.
_SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "passphrase", "apikey", "credentials"}
    | {"credential", "authorization", "cookie"}
)
_KEY_QUALIFIERS = frozenset({"api", "access", "private", "secret", "signing", "encryption"})
_KEY_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a field named `key` holds a secret (`api_key`, `accessToken`, `DB_PASSWORD`)."""
    words = [word.casefold() for word in _KEY_WORDS.findall(key[:64])]
    if not words:
        return False
    if words[-1] in _SECRET_WORDS:
        return True
    return len(words) > 1 and words[-1] == "key" and words[-2] in _KEY_QUALIFIERS


def _email(match: re.Match[str]) -> str:
    """The address up to its last alphabetic label of two letters or more (`a@b.com.123`
    masks `a@b.com`, as a backtracking pattern would); no such label: not an address."""
    domain = match.group(0).split("@", 1)[1]
    labels = domain.split(".")
    for end in range(len(labels) - 1, 0, -1):
        if len(labels[end]) >= 2 and labels[end].isascii() and labels[end].isalpha():
            return "[REDACTED_EMAIL]" + "".join("." + label for label in labels[end + 1 :])
    return match.group(0)


_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest"})
# Every key `is_secret_key` accepts contains one of these, lower-cased: a text without any
# skips the pair-by-pair scan (substring searches are far cheaper than the pattern).
_SECRET_HINTS = frozenset(
    {"token", "secret", "passw", "pwd", "passphrase", "credential", "authorization", "cookie"}
    | {"key"}
)


def _secret_pairs(pattern: re.Pattern[str], text: str) -> str:
    """`key=value` with a secret key name: the value goes, the key stays (so the memory still
    says *that* a token was set). The pattern matches `key=` and only looks ahead at the
    value, so a pair whose key is not secret consumes nothing a later pair needs
    (`note: token=abc`); values an earlier pattern masked, and auth schemes (`Bearer`), stay."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _SECRET_HINTS):
        return text  # no secret-looking key anywhere: skip the pair-by-pair scan
    out, last = [], 0
    for match in pattern.finditer(text):
        key, value = match.group(1), match.group(3)
        if match.start() < last or not is_secret_key(key):
            continue
        if "[REDACTED" in value or value.casefold() in _AUTH_SCHEMES:
            continue
        quote = value[0] if value[0] in "\"'" else ""
        out += [text[last : match.end()], f"{quote}{REDACTED_SECRET}{quote}"]
        last = match.end() + len(value)
    return "".join(out) + text[last:] if out else text


@dataclass(frozen=True)
class Scan:
    """A replacement that needs the whole text, not one match at a time."""

    fn: Callable[[re.Pattern[str], str], str]


Replacement = str | Callable[[re.Match[str]], str] | Scan
Masker = Callable[[str], str]


# name -> (pattern, replacement); order matters: keys and tokens first, then e-mails, then the
# `password is …` phrases, then any other `secret=…` pair, then phones.
# Every pattern runs in time linear in the text: a match starts only at the start of a run of
# the characters it reads (a lookbehind), or at a fixed literal with a bounded or final
# quantifier, and possessive quantifiers never give back; so 1 MB of hostile text takes
# milliseconds, never minutes (tests/memories/test_pii_linear.py feeds each one 1 MB).
_RUN = r"A-Za-z0-9_\-"
BUILTIN_PATTERNS: dict[str, tuple[str, Replacement]] = {
    "api_key": (  # one `\b` before the alternation: the engine then skips ahead by first letter
        r"\b(?:sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{32,}"  # OpenAI, Anthropic, Stripe
        rf"|mp_[0-9a-f]{{8}}_[{_RUN}]{{20,}}+"  # this platform's own keys
        r"|AIza[0-9A-Za-z\-_]{35}"  # Google / GCP API key
        r"|gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub tokens
        r"|github_pat_[A-Za-z0-9_]{22,}"  # GitHub fine-grained tokens
        r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"  # AWS access key ids
        r"|xox[abeprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
        r"|xapp-[0-9]-[A-Za-z0-9-]{10,})",  # Slack app-level tokens
        "[REDACTED_API_KEY]",
    ),
    "jwt": (
        rf"(?<![{_RUN}])eyJ[{_RUN}]++\.eyJ[{_RUN}]++\.[{_RUN}]*+",
        "[REDACTED_JWT]",
    ),
    "bearer": (
        r"(?i)\b((?:bearer|basic)\s++)(?!\[REDACTED)[A-Za-z0-9\-._~+/]{16,}+=*+",
        r"\1[REDACTED_SECRET]",
    ),
    "aws_secret": (  # a 40-character AWS secret access key next to its usual names
        r"(?i)(\baws_?secret_?(?:access_?)?key[\"']?+\s*+[:=]\s*+[\"']?+)"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        r"\1[REDACTED_SECRET]",
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
    "secret": (  # token=…, client_secret: "…", "api_key": "…", ?access_token=…&
        rf"(?<![{_RUN}.])([A-Za-z][{_RUN}.]{{0,63}}+)([\"']?+\s*+(?::(?!//)|=)\s*+)"
        r"(?=(\"[^\"\n]++\"|'[^'\n]++'|[^\s&,;\"'<>=]++=*+))",
        Scan(_secret_pairs),
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


def _masker(pattern: re.Pattern[str], replacement: Replacement) -> Masker:
    if isinstance(replacement, Scan):
        return functools.partial(replacement.fn, pattern)
    return functools.partial(pattern.sub, replacement)


def _patterns(project: Project) -> Iterable[Masker]:
    custom = (project.settings or {}).get("pii_patterns") or {}
    if not isinstance(custom, dict):
        custom = {}
    for name, (pattern, replacement) in BUILTIN_PATTERNS.items():
        if name in custom and custom[name] is None:
            continue  # the project switched this built-in off
        compiled = _compile(pattern)
        if compiled is not None:
            yield _masker(compiled, replacement)
    for name, pattern in custom.items():
        if name in BUILTIN_PATTERNS or not isinstance(pattern, str):
            continue
        compiled = _compile(pattern)
        if compiled is not None:
            label = re.sub(r"[^A-Za-z0-9]+", "_", name).upper()
            yield _masker(compiled, f"[REDACTED_{label}]")


def normalise_text(text: str) -> str:
    """NFKC, without zero-width characters: the form patterns look at."""
    return unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)


def _masking_on(project: Project) -> bool:
    return bool(tuning(project, "pii_masking"))


def _mask(patterns: list[Masker], text: str) -> str:
    if not text:
        return text
    normalised = normalise_text(text)
    masked = normalised
    for mask in patterns:
        masked = mask(masked)
    return text if masked == normalised else masked


def mask_pii(*, project: Project, text: str) -> str:
    """`text` with the project's PII patterns replaced, or unchanged if masking is off."""
    if not text or not _masking_on(project):
        return text
    return _mask(list(_patterns(project)), text)


def _mask_json(patterns: list[Masker], value: Any) -> Any:
    """String values at any depth; a value under a secret-named key goes whole."""
    if isinstance(value, str):
        return _mask(patterns, value)
    if isinstance(value, list):
        return [_mask_json(patterns, item) for item in value]
    if isinstance(value, dict):
        return {key: _mask_entry(patterns, key, item) for key, item in value.items()}
    return value


def _mask_entry(patterns: list[Masker], key: Any, item: Any) -> Any:
    scalar = isinstance(item, (str, int, float)) and not isinstance(item, bool)
    if scalar and item != "" and isinstance(key, str) and is_secret_key(key):
        return REDACTED_SECRET
    return _mask_json(patterns, item)


def _stored(patterns: list[Masker], name: str, text: str) -> str:
    """`text` masked; cut to the field's size only when masking made it longer (a text that
    was too long to begin with is for the field's own check to refuse)."""
    masked = _mask(patterns, text)
    limit = FIELD_LIMITS.get(name)
    return masked[:limit] if limit is not None and masked != text else masked


def _mask_list(patterns: list[Masker], name: str, values: list[Any]) -> list[Any]:
    """Items masked, then repeats dropped (two tags may mask to the same text)."""
    if not all(isinstance(value, str) for value in values):
        return values  # not ours to validate: the field's own check refuses it
    return list(dict.fromkeys(_stored(patterns, name, value) for value in values))


def scrub_for_storage(*, project: Project, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (field name -> value about to be stored) with every free-text field masked;
    other fields and non-string values pass unchanged. Respects the project's PII setting."""
    if not _masking_on(project):
        return values
    patterns = list(_patterns(project))
    scrubbed = dict(values)
    for name, value in values.items():
        if name in TEXT_FIELDS and isinstance(value, str):
            scrubbed[name] = _stored(patterns, name, value)
        elif name in LIST_FIELDS and isinstance(value, list):
            scrubbed[name] = _mask_list(patterns, name, value)
        elif name in JSON_FIELDS and isinstance(value, dict):
            scrubbed[name] = _mask_json(patterns, value)
    return scrubbed
