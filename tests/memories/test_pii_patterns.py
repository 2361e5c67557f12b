"""The built-in patterns: keys, tokens and `secret=` pairs, seen through NFKC and zero-width
characters, and what they leave alone."""

from __future__ import annotations

import pytest

from memories.services.pii import is_secret_key, mask_pii, scrub_for_storage
from tenants.services import api_key_create

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"session {JWT} expires", "session [REDACTED_JWT] expires"),
        ("id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED_API_KEY] here"),
        ("temp ASIAIOSFODNN7EXAMPLE", "temp [REDACTED_API_KEY]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED_SECRET]",
        ),
        ("gcp AIzaSyA1234567890abcdefghijklmnopqrstuv", "gcp [REDACTED_API_KEY]"),
        ("gh ghp_" + "a" * 36, "gh [REDACTED_API_KEY]"),
        ("pat github_pat_11ABCDEFG0123456789abcdef_xyz", "pat [REDACTED_API_KEY]"),
        ("slack xoxb-123456789012-abcdefghij", "slack [REDACTED_API_KEY]"),
        ("openai sk-proj-" + "A1b2" * 10, "openai [REDACTED_API_KEY]"),
        ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED_SECRET]"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "Authorization: Basic [REDACTED_SECRET]"),
        ("callback?access_token=abc123&user=1", "callback?access_token=[REDACTED_SECRET]&user=1"),
        ('{"client_secret": "s3cr3t value"}', '{"client_secret": "[REDACTED_SECRET]"}'),
        ("export DB_PASSWORD=hunter2", "export DB_PASSWORD=[REDACTED_SECRET]"),
        ("apiKey: 12345abc", "apiKey: [REDACTED_SECRET]"),
        ("note: token=xyz, other=1", "note: token=[REDACTED_SECRET], other=1"),
        ("password: hunter2", "password: [REDACTED_PWD]"),
    ],
)
def test_keys_tokens_and_secret_pairs_are_masked(alice, text, expected):
    assert mask_pii(project=alice.project, text=text) == expected


def test_the_platforms_own_api_keys_are_masked(alice):
    raw = api_key_create(project=alice.project, scopes=["read"]).raw_key
    masked = mask_pii(project=alice.project, text=f"my key is {raw}, keep it safe")
    assert masked == "my key is [REDACTED_API_KEY], keep it safe"


@pytest.mark.parametrize(
    "text",
    [
        "set max_tokens=4096 and token_count: 12",
        "released 2024-01-15, version 3.11.7, ratio=0.5",
        "see https://example.org/path?page=2&sort=asc",
        "the task-runner-configuration-file-is-long-enough-to-look-like-a-key",
        "memory 123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_ordinary_technical_text_is_left_alone(alice, text):
    assert mask_pii(project=alice.project, text=text) == text


@pytest.mark.parametrize(
    "text",
    [
        "mail bob\u200b@example.com",  # zero width space
        "mail bob@\u2060example.com",  # word joiner
        "mail \ufeffbob@example.com",  # byte order mark
        "mail ｂｏｂ＠ｅｘａｍｐｌｅ．ｃｏｍ",  # full-width: NFKC folds it
        "mail bob\u200c@\u200dexample.com",  # zero width (non-)joiner
    ],
)
def test_obfuscated_addresses_are_masked_after_normalisation(alice, text):
    assert mask_pii(project=alice.project, text=text) == "mail [REDACTED_EMAIL]"


def test_a_text_with_nothing_to_mask_is_stored_exactly_as_given(alice):
    text = "ﬁne ｆｕｌｌ-width ① and a zero\u200bwidth space"
    assert mask_pii(project=alice.project, text=text) == text


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("x-api-key", True),
        ("access_token", True),
        ("DB_PASSWORD", True),
        ("clientSecret", True),
        ("private_key", True),
        ("max_tokens", False),
        ("token_count", False),
        ("session_id", False),
        ("password_hash", False),
        ("keyboard", False),
    ],
)
def test_secret_key_names_are_told_from_ordinary_ones(key, secret):
    assert is_secret_key(key) is secret


def test_metadata_values_under_secret_keys_go_whole_and_strings_are_masked_at_any_depth(alice):
    values = {
        "metadata": {
            "api_key": "abc123",
            "retries": 3,
            "password": "",
            "owner": {"mail": "bob@example.com", "ids": ["x", "bob@example.com", 7]},
        },
        "tags": ["ops", "bob@example.com", "[REDACTED_EMAIL]"],
        "source": "bob@example.com",  # not a free-text field
    }
    scrubbed = scrub_for_storage(project=alice.project, values=values)
    assert scrubbed["metadata"] == {
        "api_key": "[REDACTED_SECRET]",
        "retries": 3,
        "password": "",
        "owner": {"mail": "[REDACTED_EMAIL]", "ids": ["x", "[REDACTED_EMAIL]", 7]},
    }
    assert scrubbed["tags"] == ["ops", "[REDACTED_EMAIL]"]  # two tags became one
    assert scrubbed["source"] == "bob@example.com"


def test_a_masked_value_is_cut_back_to_its_columns_size(alice):
    tag = "a@b.io " * 14  # 98 characters; masked it would be 238
    [stored] = scrub_for_storage(project=alice.project, values={"tags": [tag]})["tags"]
    assert len(stored) == 100 and stored.startswith("[REDACTED_EMAIL]")


def test_a_project_can_switch_off_one_new_pattern(alice):
    alice.project.settings = {"pii_patterns": {"secret": None}}
    alice.project.save()
    assert mask_pii(project=alice.project, text="token=xyz") == "token=xyz"
    assert mask_pii(project=alice.project, text="mail a@b.io") == "mail [REDACTED_EMAIL]"


def test_what_masking_left_is_not_extracted_as_an_entity():
    from entities.services.graph_extraction import extract_offline

    extraction = extract_offline("User wrote to [REDACTED_EMAIL] about Django")
    assert {entity.name for entity in extraction.entities} == {"Django"}
