# tdweb image: web (Daphne), worker (Celery + Spark driver), beat, and Spark standalone roles.
# The same image everywhere; the role is the command (see docker-compose.yml).

FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/usr/local/bin/python PYSPARK_DRIVER_PYTHON=/usr/local/bin/python \
    TDWEB_VAR=/data/var TDWEB_LAKE=/data/lake TDWEB_HOST=0.0.0.0 PYTHONPATH=/app
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY spark_workers/ spark_workers/
COPY streams_app/ streams_app/
COPY tdweb/ tdweb/
RUN pip install --no-cache-dir . \
 && cp spark_workers/runtime/tdweb_pyspark_site.pth "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
COPY manage.py ./
COPY data/ data/
COPY --from=frontend /src/frontend/dist frontend/dist
RUN mkdir -p /data && useradd --create-home tdweb && chown -R tdweb /data
USER tdweb
EXPOSE 8000
# Daphne's thread pool for sync work: enough writers to meet in a group commit (docs/architecture.md)
ENV ASGI_THREADS=32
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "tdweb.asgi:application"]
