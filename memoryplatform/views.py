"""Operations endpoints: health probes and Prometheus metrics (docs/operations.md).

- `/health/live`: liveness, the process answers (no dependency is checked);
- `/health` and `/health/ready`: readiness, every check of memoryplatform/health.py, 503 when
  one fails; both answer with or without a trailing slash, never with a redirect;
- `/metrics`: Prometheus text format, for loopback clients (not through a proxy: a request
  with any proxy's header is not one) when MEMORY_METRICS_TOKEN is unset, for a bearer of
  that token when it is set.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe

from memoryplatform import gauges, health
from platformcore import metrics


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's own 400s (a body past its limits, too many form fields, a bad host) in the
    JSON error shape of every API error, not an HTML page."""
    if isinstance(exception, RequestDataTooBig):
        return _error(413, "too_large", "The request body is too large.")
    return _error(400, "bad_request", "The request could not be read.")


@require_safe
def liveness(request: HttpRequest) -> HttpResponse:
    return _no_store(JsonResponse({"status": "ok"}))


@require_safe
def readiness(request: HttpRequest) -> HttpResponse:
    """Unauthenticated, for load balancers and orchestrators: 200 ready, 503 not."""
    ready, body = health.readiness()
    return _no_store(JsonResponse(body, status=200 if ready else 503))


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    refused = _metrics_refusal(request)
    if refused is not None:
        return refused
    body = metrics.render(gauges.collectors())
    return _no_store(HttpResponse(body, content_type=metrics.CONTENT_TYPE))


def _metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read the metrics. They name every project (its slug) and
    describe the load, so they are not public: a token, when one is set, is required from
    every address; without one only a client on this host may read them, and a request a
    proxy forwarded (any of PROXY_HEADERS) is not one, whatever address it arrives from."""
    token = settings.MEMORY_METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
            return None
        response = _error(401, "not_authenticated", "A valid metrics token is required.")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if _is_loopback(request.META.get("REMOTE_ADDR", "")) and not _proxied(request):
        return None
    message = "Metrics are served to this host only, or with MEMORY_METRICS_TOKEN."
    return _error(403, "permission_denied", message)


# Headers a proxy adds: a request carrying any of them came through one, so its connection's
# loopback address says nothing about the client (a proxy on this host forwards everyone).
PROXY_HEADERS = (
    "Forwarded",
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-IP",
    "X-Client-IP",
    "X-Cluster-Client-IP",
    "True-Client-IP",
    "CF-Connecting-IP",
    "Fastly-Client-IP",
    "Via",
)


def _proxied(request: HttpRequest) -> bool:
    named = settings.SECURE_PROXY_SSL_HEADER[0] if settings.SECURE_PROXY_SSL_HEADER else None
    return any(name in request.headers for name in PROXY_HEADERS) or bool(
        named and named in request.META
    )


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": {}}}, status=status)


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response
