"""Routes of the compatibility layers, mounted at the root (mem0's clients call `/v1/...`,
`/v2/...` and `/v3/...` on the host they are given; the SQL-native server's, the unversioned
`/api/memories...`, `/api/entities...`, `/api/relations...`, `/api/analytics/...` and
`/api/events`)."""

from django.urls import include, path

urlpatterns = [
    path("", include("compat.mem0.urls")),
    path("", include("compat.sqlnative.urls")),
]
