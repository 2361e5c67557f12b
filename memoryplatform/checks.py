"""Deployment checks (`manage.py check --deploy`) that see our middleware.

The platform runs Django's SecurityMiddleware, XFrameOptionsMiddleware and CsrfViewMiddleware
as subclasses (platformcore/lib/inline_middleware.py: no thread hop per hook under ASGI,
browser-only ones skip the API). Django's deploy checks look for the exact class paths and so
would say the protections are missing and skip checking their settings; settings silence those
three warnings, and this check runs Django's own setting checks (HSTS, HTTPS redirect, nosniff,
X-Frame-Options, referrer and opener policies, the CSRF cookie) as if the stock classes were
installed, so one logic decides, and warns if a subclass is gone.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register
from django.core.checks.security import base, csrf
from django.db import DatabaseError, connection
from django.test.utils import override_settings

from platformcore.db import rls

STOCK = {
    "platformcore.lib.inline_middleware.InlineSecurityMiddleware": (
        "django.middleware.security.SecurityMiddleware"
    ),
    "platformcore.lib.inline_middleware.InlineXFrameOptionsMiddleware": (
        "django.middleware.clickjacking.XFrameOptionsMiddleware"
    ),
    "platformcore.lib.inline_middleware.BrowserOnlyCsrfViewMiddleware": (
        "django.middleware.csrf.CsrfViewMiddleware"
    ),
}
SETTING_CHECKS = (
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
    csrf.check_csrf_cookie_secure,
)


@register(Tags.security, deploy=True)
def check_security_middleware(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    missing = [
        Warning(f"{ours} is not in MIDDLEWARE: {stock}'s protection is off.", id="memory.W001")
        for ours, stock in STOCK.items()
        if ours not in settings.MIDDLEWARE and stock not in settings.MIDDLEWARE
    ]
    as_stock = [STOCK.get(path, path) for path in settings.MIDDLEWARE]
    with override_settings(MIDDLEWARE=as_stock):
        return missing + [message for check in SETTING_CHECKS for message in check(app_configs)]


@register(Tags.database, deploy=True)
def check_leakproof_search_operators(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """With row-level security on, the search operators' functions must be LEAKPROOF, or
    searches read every row of a project (platformcore/db/rls.py). `migrate` marks them when
    its owner is a superuser; otherwise an administrator runs the statements named here."""
    if not connection.settings_dict.get("APP_ROLE"):
        return []
    try:
        with connection.cursor() as cursor:
            leaky = rls.leaky_functions(cursor)
    except DatabaseError:  # no database to ask: the other checks say so
        return []
    if not leaky:
        return []
    statements = " ".join(rls.leakproof_statements(leaky))
    return [
        Warning(
            "Row-level security is on and the search operators' functions are not marked "
            "LEAKPROOF: searches filter a project's rows one by one instead of through their "
            "indexes.",
            hint=f"As a superuser, run once in the platform's database: {statements}",
            id="memory.W002",
        )
    ]
