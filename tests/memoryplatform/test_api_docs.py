"""The API docs (Swagger UI at /api/docs/, Redoc at /api/redoc/) work with no internet: the
pages load their scripts and styles from our own static files (drf-spectacular-sidecar)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlparse

import pytest

PAGES = ["/api/docs/", "/api/redoc/"]
URL_IN_TEXT = re.compile(r"""(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s"'<>)]*""", re.IGNORECASE)
# named in the pages' text without being loaded: licences, the OpenAPI spec's own namespace
NOT_LOADED = ("swagger.io", "github.com/swagger-api", "redocly", "github.com/Redocly")


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href"} and value:
                self.urls.append(value)


def assets_of(html: str) -> list[str]:
    parser = _Assets()
    parser.feed(html)
    return parser.urls


@pytest.mark.parametrize("page", PAGES)
def test_the_docs_page_references_no_external_host(anonymous, page: str) -> None:
    response = anonymous.get(page)
    assert response.status_code == 200
    html = response.content.decode()
    for url in assets_of(html):
        assert not urlparse(url).netloc, url  # every script, style and icon is ours
    external = [url for url in URL_IN_TEXT.findall(html) if not url.startswith(NOT_LOADED)]
    assert external == []


@pytest.mark.parametrize("page", PAGES)
def test_the_docs_assets_are_served_from_our_static_files(anonymous, page: str) -> None:
    html = anonymous.get(page).content.decode()
    assets = [url for url in assets_of(html) if url.startswith("/static/")]
    assert any(url.endswith(".js") for url in assets), assets
    for url in assets:
        response = anonymous.get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert body, url


@pytest.mark.django_db
def test_the_docs_read_the_schema_served_here(anonymous) -> None:
    html = anonymous.get("/api/docs/").content.decode()
    assert "/api/schema/" in html
    assert anonymous.get("/api/schema/").status_code == 200
