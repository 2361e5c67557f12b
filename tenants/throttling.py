"""Per-key rate limits, so that one tenant's flood cannot starve the others.

Every request of an API key counts against one of four limits, by kind: `read`, `search`,
`write` and `admin` (reset and the maintenance runs: consolidation, decay, prune). The limits
are MEMORY_RATE_LIMITS (settings, from MEMORY_RATE_LIMIT_<KIND>), and a project may set its
own in `Project.limits`. REST requests pass through `ApiKeyRateThrottle` (DRF's default
throttle) and get 429 with `Retry-After` over a limit; MCP tool calls pass through
`rate_limit_hit` in `mcpserver.tools.call` and get a tool error.

Counting: fixed windows (a minute for "600/min") in the shared "limits" cache (Redis, or a
table in PostgreSQL), so every server process counts against the same number. A process does
not go to the cache for every request: it takes a share of the limit at a time (a lease of a
fiftieth, at least one request) and serves that share from memory, so a key at 6,000/min costs
one cache round trip per 120 requests, and a key over its limit is refused from memory until
its window ends, costing the cache nothing. The price: each process may hold up to one unused
lease per key at a window's end, so a key with several busy processes can be refused up to a
fiftieth of its limit early per process; limits under 50 per window are counted exactly.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.db import connection, transaction
from django.http import JsonResponse
from rest_framework import exceptions, throttling
from rest_framework.request import Request

from platformcore.lib.rates import Rate, parse_rate
from tenants.models import RATE_SCOPES, ApiKey
from tenants.permissions import required_scope

logger = logging.getLogger(__name__)
LEASE_SHARE = 50  # a process takes a fiftieth of a key's limit from the shared count at a time
CACHE_ALIAS = "limits"
ADDRESS = "address"  # the limit of requests without a key, per client address
EXEMPT = "none"  # probes and metrics: never counted (MEMORY_RATE_LIMIT_ROUTES)


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused, and how long until its window ends."""

    scope: str
    rate: Rate
    retry_after: float

    @property
    def message(self) -> str:
        return (
            f"Rate limit reached: this API key may make {self.rate.requests} {self.scope} "
            f"requests per {self.rate.per}."
        )

    @property
    def message_with_retry(self) -> str:
        return f"{self.message} Retry in {math.ceil(self.retry_after)} s."


def key_rate(api_key: ApiKey, scope: str) -> Rate | None:
    """The limit of `scope` for this key: its project's, else the setting (None: no limit)."""
    own = (api_key.project.limits or {}).get(scope)
    return parse_rate(own if own is not None else settings.MEMORY_RATE_LIMITS.get(scope))


def rate_limit_hit(*, api_key: ApiKey, scope: str) -> Refusal | None:
    """Count one request of `scope` (one of RATE_SCOPES) for `api_key`: None if it may go on,
    a Refusal if the key is over its limit for this window."""
    rate = key_rate(api_key, scope)
    return None if rate is None else _hit(f"{scope}:{api_key.pk}", scope, rate)


def address_rate_limit_hit(address: str) -> Refusal | None:
    """Count one request of a client without a key (OAuth, the admin's login, the API schema)
    from `address`: the `address` limit, per client address."""
    rate = parse_rate(settings.MEMORY_RATE_LIMITS.get(ADDRESS))
    return None if rate is None else _hit(f"{ADDRESS}:{address}", ADDRESS, rate)


def _hit(subject: str, scope: str, rate: Rate) -> Refusal | None:
    now = time.time()
    window = int(now // rate.seconds)
    ends = (window + 1) * rate.seconds
    name = f"rate:{subject}:{rate.requests}/{rate.seconds}:{window}"
    served = _leases.take(name)
    if served is None:  # nothing left of this process's lease: ask the shared count
        served = _leases.fill(name, ends, _lease(name, rate, ends - now))
    return None if served else Refusal(scope, rate, max(ends - now, 1.0))


def _lease(name: str, rate: Rate, ttl: float) -> int:
    """Take up to a lease of this window's requests from the shared count; 0 if none is left
    (the shared count is then past the limit)."""
    size = max(1, rate.requests // LEASE_SHARE)
    try:
        before = _add(caches[CACHE_ALIAS], name, size, math.ceil(ttl) + 1) - size
    except Exception:  # a cache that cannot be reached must not take the API down with it
        logger.warning("rate limits: the %r cache failed; request let through", CACHE_ALIAS)
        return 1
    return max(0, min(size, rate.requests - before))


def _add(cache: BaseCache, name: str, amount: int, ttl: int) -> int:
    """Add `amount` to the counter `name` (made with expiry `ttl`), return the new total:
    atomic on Redis (INCRBY); on the database cache a read and a write, which concurrent
    processes may interleave (a count a little low, never a wrong refusal)."""
    guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    with guard:  # inside a transaction (a test, a caller's block): a savepoint contains errors
        if type(cache).incr is not BaseCache.incr:  # a native, atomic increment
            try:
                return int(cache.incr(name, amount))
            except ValueError:  # no counter yet in this window
                if cache.add(name, amount, ttl):
                    return amount
                return int(cache.incr(name, amount))
        total = int(cache.get(name, 0)) + amount
        cache.set(name, total, ttl)
        return total


class _Leases:
    """What this process may still serve per counter without asking the shared count:
    n > 0 requests, 0 (ask), or -1 (the window is spent: refuse until it ends)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left: dict[str, tuple[int, float]] = {}  # name -> (left, window end)
        self._pid = os.getpid()

    def take(self, name: str) -> bool | None:
        """True: served from the lease; False: the window is spent; None: ask the count."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child starts with nothing leased
                self._left.clear()
                self._pid = os.getpid()
            left, ends = self._left.get(name, (0, 0.0))
            if left > 0:
                self._left[name] = (left - 1, ends)
                return True
            return False if left < 0 else None

    def fill(self, name: str, ends: float, granted: int) -> bool:
        """Record a new lease (`granted` requests, this one included); whether it serves."""
        with self._lock:
            if len(self._left) > 10_000:
                now = time.time()
                self._left = {k: v for k, v in self._left.items() if v[1] > now}
            self._left[name] = (granted - 1 if granted else -1, ends)
        return granted > 0


_leases = _Leases()


def request_rate_scope(request: Request, view: Any) -> str:
    """Which limit a REST request counts against: the view's `throttle_scope`, else its route
    in MEMORY_RATE_LIMIT_ROUTES, else `admin` / `write` / `read` by the scope it needs."""
    declared = getattr(view, "throttle_scope", None)
    if declared in RATE_SCOPES:
        return str(declared)
    routed = route_rate_class(getattr(request, "resolver_match", None))
    if routed in RATE_SCOPES:
        return str(routed)
    needed = required_scope(request, view)
    return needed if needed in ("admin", "write") else "read"


def route_rate_class(match: Any) -> str | None:
    """The class MEMORY_RATE_LIMIT_ROUTES gives a resolved route: by its view name
    (`namespace:name`), else by its namespace (`namespace:*`); None if it names neither."""
    if match is None:
        return None
    routes = settings.MEMORY_RATE_LIMIT_ROUTES
    found = routes.get(match.view_name)
    if found is None and match.namespace:
        found = routes.get(f"{match.namespace}:*")
    return found


class AddressRateLimitMiddleware:
    """The `address` limit for the routes that take no API key (MEMORY_RATE_LIMIT_ROUTES):
    429 with Retry-After, counted per client address (the connection's: a proxy's clients
    share it), before the view runs."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)

    def process_view(self, request: Any, view: Any, args: Any, kwargs: Any) -> Any:
        if route_rate_class(request.resolver_match) != ADDRESS:
            return None
        refusal = address_rate_limit_hit(request.META.get("REMOTE_ADDR") or "unknown")
        if refusal is None:
            return None
        message = (
            f"Rate limit reached: this address may make {refusal.rate.requests} requests "
            f"without an API key per {refusal.rate.per}."
        )
        response = JsonResponse(
            {"error": {"code": "throttled", "message": message, "fields": {}}}, status=429
        )
        response["Retry-After"] = str(math.ceil(refusal.retry_after))
        return response


class ApiKeyRateThrottle(throttling.BaseThrottle):
    """DRF throttle keyed by API key (the default of every REST view): 429, `Retry-After` and
    the JSON error body over a limit. Requests without a key are refused before it runs."""

    def allow_request(self, request: Request, view: Any) -> bool:
        if not isinstance(request.auth, ApiKey):
            return True
        refusal = rate_limit_hit(api_key=request.auth, scope=request_rate_scope(request, view))
        if refusal is not None:
            raise exceptions.Throttled(wait=refusal.retry_after, detail=refusal.message)
        return True
