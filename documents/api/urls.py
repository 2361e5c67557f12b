from __future__ import annotations

from django.urls import path

from documents.api.refs import DocumentLearnView, MemoryRefDetailView, MemoryRefsView
from documents.api.views import (
    DocumentChunksView,
    DocumentCollectionView,
    DocumentDetailView,
    DocumentOriginalView,
    DocumentRechunkView,
)

urlpatterns = [
    path("documents/", DocumentCollectionView.as_view(), name="document-list"),
    path("documents/<str:pk>/", DocumentDetailView.as_view(), name="document-detail"),
    path("documents/<str:pk>/chunks/", DocumentChunksView.as_view(), name="document-chunks"),
    path("documents/<str:pk>/learn/", DocumentLearnView.as_view(), name="document-learn"),
    path("documents/<str:pk>/original/", DocumentOriginalView.as_view(), name="document-original"),
    path("documents/<str:pk>/rechunk/", DocumentRechunkView.as_view(), name="document-rechunk"),
    # a memory's references to document chunks (the memory app knows nothing of documents)
    path("memories/<str:pk>/document-refs/", MemoryRefsView.as_view(), name="memory-refs"),
    path(
        "memories/<str:pk>/document-refs/<str:chunk_id>/",
        MemoryRefDetailView.as_view(),
        name="memory-ref-detail",
    ),
]
