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
COPY platformcore ./platformcore
COPY memoryplatform ./memoryplatform
COPY tenants ./tenants
COPY memories ./memories
COPY entities ./entities
COPY documents ./documents
COPY analytics ./analytics
COPY compat ./compat
COPY mcpserver ./mcpserver
COPY maintenance ./maintenance
COPY portability ./portability
COPY templates ./templates
COPY manage.py ./
RUN pip install . && python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 memory && mkdir -p /data && chown -R memory /data
USER memory
VOLUME ["/data"]
EXPOSE 8000

# Without DATABASE_URL the embedded PostgreSQL keeps its data in /data; with it, any PostgreSQL
# with pgvector (docker-compose.yml). Migrations (the first start creates the schema and the
# runtime role), the job schedules, then daphne in the shell's place, so `docker stop` reaches
# it. PORT (default 8000) moves the listening port. tests/memoryplatform/test_first_start.py
# runs this exact line against a fresh database.
CMD ["sh", "-c", "python manage.py migrate --noinput && python manage.py setup_schedules && exec daphne -b 0.0.0.0 -p \"${PORT:-8000}\" memoryplatform.asgi:application"]
