"""Security and limits (docs/security.md): request threads and budgets, OAuth, rate limits,
timeouts, open streams, request sizes, the metrics token, transport security."""

from __future__ import annotations

from memoryplatform.settings.env import env_bool, env_float, env_int, env_rate, env_str
from memoryplatform.settings.framework import ALLOWED_HOSTS, DEBUG, TESTING

# Threads that run HTTP requests under ASGI (platformcore/lib/asgi_http.py): requests beyond
# this many wait for a thread, as in a threaded WSGI server. A request that has waited
# MEMORY_HTTP_QUEUE_TIMEOUT seconds for one, or that finds MEMORY_HTTP_QUEUE_LIMIT requests
# already waiting, is answered 503 with Retry-After instead of waiting on: overload is shed,
# not turned into timeouts.
MEMORY_HTTP_THREADS = env_int("MEMORY_HTTP_THREADS", 20, minimum=1)
MEMORY_HTTP_QUEUE_TIMEOUT = env_float("MEMORY_HTTP_QUEUE_TIMEOUT", 5.0, minimum=0.1)
MEMORY_HTTP_QUEUE_LIMIT = env_int("MEMORY_HTTP_QUEUE_LIMIT", 200, minimum=1)
# Expensive requests (writes to these routes) run under a per-project budget in each server
# process: at most MEMORY_PROJECT_HEAVY_REQUESTS at once, MEMORY_PROJECT_HEAVY_QUEUE more wait
# (in the event loop, holding no request thread) up to MEMORY_PROJECT_HEAVY_WAIT seconds, the
# rest get 429 with Retry-After (platformcore/lib/work_budget.py, docs/security.md).
MEMORY_HEAVY_ROUTES = [
    "memory-add",
    "memory-bulk",
    "memory-consolidate",
    "session-reflect",
    "document-list",
    "document-learn",
    "graph-bulk",
    "mem0-add",
    "mem0-batch",
    "mem0-memories",  # mem0's open-source `/v1/memories/` (POST: add)
    "mem0-server-memories",  # mem0's self-hosted server `/memories` (POST: add)
]
# They run on MEMORY_HEAVY_THREADS threads of their own (every project's together), each
# keeping to one core (its batch embeddings in its own thread), never on the request threads.
MEMORY_HEAVY_THREADS = env_int("MEMORY_HEAVY_THREADS", 2, minimum=1)
MEMORY_PROJECT_HEAVY_REQUESTS = env_int("MEMORY_PROJECT_HEAVY_REQUESTS", 1, minimum=1)
MEMORY_PROJECT_HEAVY_QUEUE = env_int("MEMORY_PROJECT_HEAVY_QUEUE", 8, minimum=0)
MEMORY_PROJECT_HEAVY_WAIT = env_float("MEMORY_PROJECT_HEAVY_WAIT", 10.0, minimum=0.1)
# Threads that run MCP tool calls in the server: a slow call (an LLM extraction) holds one.
MEMORY_MCP_THREADS = env_int("MEMORY_MCP_THREADS", 8, minimum=1)

# --- OAuth 2.1 for MCP clients (tenants/oauth, docs/security.md "OAuth for MCP clients") ------
# Django's default password hashers first (users' passwords); client secrets, random and long,
# are stored with a hasher of their own that does not stretch them (tenants/oauth/hashers.py).
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "tenants.oauth.hashers.ClientSecretHasher",
]
# Authorization code with PKCE (S256) and refresh tokens only; clients register themselves
# (RFC 7591); a person consents by pasting one of the project's API keys. Tokens are stored
# hashed, refresh tokens rotate and a replayed one revokes its family.
OAUTH2_PROVIDER = {
    "OAUTH2_VALIDATOR_CLASS": "tenants.oauth.validators.KeyBoundValidator",
    "CLIENT_SECRET_HASHER": "oauth_client_secret",
    "SCOPES": {
        "read": "Read and search the project's memories",
        "write": "Store, change and delete memories",
        "admin": "Project maintenance: reset, consolidate, decay, prune",
    },
    "DEFAULT_SCOPES": ["read", "write"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env_int("MEMORY_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env_int(
        "MEMORY_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86400, minimum=60
    ),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_basic",
        "client_secret_post",
    ],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Memory Platform",
    "DCR_ENABLED": True,  # MCP clients register themselves; a token still needs a key
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}


# --- Rate limits, timeouts, open streams (docs/security.md) ------------------------------
# Requests per API key in each window, by kind: "<n>/<s|min|hour|day>" or "none". A project's
# `limits` overrides them for its keys. Over the limit: 429 with Retry-After (REST), a tool
# error (MCP). Generous by default: one key of a 2-core server under the load benchmark stays
# well within them; lower them where tenants share a server.
def rate_limits(*, testing: bool) -> dict[str, str]:
    """Requests per key and window by kind; under tests (`testing`) requests without a key are
    not limited per address unless MEMORY_RATE_LIMIT_ADDRESS is set."""
    return {
        "read": env_rate("MEMORY_RATE_LIMIT_READ", "6000/min"),
        "search": env_rate("MEMORY_RATE_LIMIT_SEARCH", "3000/min"),
        "write": env_rate("MEMORY_RATE_LIMIT_WRITE", "3000/min"),
        "admin": env_rate("MEMORY_RATE_LIMIT_ADMIN", "300/min"),  # reset, consolidate, decay...
        # requests without an API key (OAuth, the admin, the API schema), per client address;
        # the test suite's clients all come from one address
        "address": env_rate("MEMORY_RATE_LIMIT_ADDRESS", "none" if testing else "60/min"),
    }


MEMORY_RATE_LIMITS = rate_limits(testing=TESTING)
# Which routes count as what (by view name, `namespace:*` for a whole namespace). A route of
# the API that takes a key and is not listed is `admin` if it needs the admin scope, `write`
# if it writes, else `read` (a view may also name its kind: `throttle_scope`). Routes without
# a key count against `address`; `streams` routes hold a stream slot (MEMORY_MAX_STREAMS_PER_KEY);
# `none` are never counted (probes, metrics). tests/tenants/test_route_limits.py fails on a
# route that falls in no class.
MEMORY_RATE_LIMIT_ROUTES = {
    "memory-search": "search",
    "mem0-search": "search",  # mem0's platform, its open-source `/v1/` wrapper, its server
    "oss-search": "search",
    "mem0-server-search": "search",
    "session-context": "search",
    "memory-consolidate": "admin",
    "memory-decay-run": "admin",
    "memory-prune": "admin",
    "events": "streams",
    "sqlnative-events": "streams",
    "health": "none",
    "health-ready": "none",
    "health-live": "none",
    "metrics": "none",
    "schema": "address",
    "docs": "address",
    "redoc": "address",
    "events-schema": "address",
    "oauth2_provider:*": "address",
    "admin:*": "address",
    "session-close": "write",
    # the SQL-native server's paths (compat/sqlnative)
    "sqlnative-memory-search": "search",
    "sqlnative-memory-consolidate": "admin",
    "document-original": "read",
    "document-rechunk": "write",
    "graph-subgraph": "read",
}
# A statement of an HTTP request or an MCP tool call running longer than this is cancelled
# (503, code `statement_timeout`); jobs and commands have no limit (0 = none for requests too).
MEMORY_STATEMENT_TIMEOUT_MS = env_int("MEMORY_STATEMENT_TIMEOUT_MS", 30_000, minimum=0)
# Long-lived connections one key may hold open at once: websockets, SSE streams, MCP streams
# (GET /mcp, /sse). The next is refused (websocket close 4429, HTTP 429); 0 = no cap.
MEMORY_MAX_STREAMS_PER_KEY = env_int("MEMORY_MAX_STREAMS_PER_KEY", 20, minimum=0)

# --- Operations (docs/operations.md) -------------------------------------------------------
# /metrics: with a token, only its bearers may read; without, only clients on this host.
MEMORY_METRICS_TOKEN = env_str("MEMORY_METRICS_TOKEN", "")
# Memories by state are labelled by project for this many projects (the largest); the rest
# are summed as project="_other", so the series count stays bounded.
MEMORY_METRICS_TOP_PROJECTS = env_int("MEMORY_METRICS_TOP_PROJECTS", 20, minimum=0)

# --- Sizes of what a request may carry ----------------------------------------------------
MEMORY_MAX_CONTENT_LENGTH = env_int("MEMORY_MAX_CONTENT_LENGTH", 8000, minimum=1)
MEMORY_MAX_CONTEXT_LENGTH = env_int("MEMORY_MAX_CONTEXT_LENGTH", 8000, minimum=1)
# Request bodies above this size are refused (413) before they are read to the end, on every
# HTTP path (REST, MCP); a bulk write of 1,000 memories of 8,000 characters fits.
MEMORY_MAX_REQUEST_BYTES = env_int("MEMORY_MAX_REQUEST_BYTES", 16 * 1024 * 1024, minimum=1024)
# Django's own body limit (2.5 MB) would answer an HTML 400 before the serializer could name
# the field that is too long: the limit above is the one that holds (413 with the JSON error).
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORY_MAX_REQUEST_BYTES
MEMORY_DEFAULT_PAGE_SIZE = env_int("MEMORY_DEFAULT_PAGE_SIZE", 20, minimum=1)
MEMORY_MAX_PAGE_SIZE = env_int("MEMORY_MAX_PAGE_SIZE", 100, minimum=1)

# --- Transport security (docs/security.md, "Deploying") ------------------------------------
# A deployment that names a public host (MEMORY_ALLOWED_HOSTS beyond this machine) is served
# over TLS: secure cookies, HSTS and the HTTPS redirect are on unless switched off. The embedded
# default, on localhost over plain HTTP, keeps them off so the admin's login works.
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "testserver"}
PUBLIC_DEPLOYMENT = not DEBUG and any(host not in LOCAL_HOSTS for host in ALLOWED_HOSTS)
SESSION_COOKIE_SECURE = env_bool("MEMORY_SECURE_COOKIES", default=PUBLIC_DEPLOYMENT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("MEMORY_SSL_REDIRECT", default=PUBLIC_DEPLOYMENT)
SECURE_HSTS_SECONDS = env_int(
    "MEMORY_HSTS_SECONDS", 31_536_000 if PUBLIC_DEPLOYMENT else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MEMORY_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env_bool("MEMORY_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# a load balancer's health probe and Prometheus may speak plain HTTP inside the network
SECURE_REDIRECT_EXEMPT = [r"^health", r"^metrics$"]
X_FRAME_OPTIONS = "DENY"
# Behind a proxy that terminates TLS: the header it sets to "https" (e.g. X-Forwarded-Proto).
_proxy_ssl_header = env_str("MEMORY_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
# Our middleware are Django's SecurityMiddleware, XFrameOptionsMiddleware and
# CsrfViewMiddleware, subclassed (platformcore/lib/inline_middleware.py); Django's checks look
# for the exact class paths, so ours (memoryplatform/checks.py) look for the subclasses instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]
# django-oauth-toolkit warns that `http` redirect URIs are allowed: MCP clients on the user's
# machine receive the code on a loopback address (RFC 8252), and registration accepts `http`
# for loopback hosts only (tenants/oauth/views.py), https everywhere else.
SILENCED_SYSTEM_CHECKS.append("oauth2_provider.W008")
