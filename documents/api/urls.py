from __future__ import annotations

from django.urls import path

from documents.api.views import DocumentChunksView, DocumentCollectionView, DocumentDetailView

urlpatterns = [
    path("documents/", DocumentCollectionView.as_view(), name="document-list"),
    path("documents/<str:pk>/", DocumentDetailView.as_view(), name="document-detail"),
    path("documents/<str:pk>/chunks/", DocumentChunksView.as_view(), name="document-chunks"),
]
