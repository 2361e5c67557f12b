# Production image: ASGI (HTTP + websockets + MCP) served by daphne, migrations on start.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    MEMORY_DATA_DIR=/data

WORKDIR /app

# CPU-only PyTorch first, so sentence-transformers does not pull a CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY memoryplatform ./memoryplatform
COPY tenants ./tenants
COPY memories ./memories
COPY entities ./entities
COPY documents ./documents
COPY analytics ./analytics
COPY compat ./compat
COPY mcpserver ./mcpserver
COPY templates ./templates
COPY manage.py ./
RUN pip install . && python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 memory && mkdir -p /data && chown -R memory /data
USER memory
VOLUME ["/data"]
EXPOSE 8000

# DATABASE_URL must point at PostgreSQL with pgvector (see docker-compose.yml).
CMD ["sh", "-c", "python manage.py migrate --noinput && daphne -b 0.0.0.0 -p 8000 memoryplatform.asgi:application"]
