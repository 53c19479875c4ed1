# Production-like image of the platform: the same image runs web, worker and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

COPY requirements.txt requirements-judges.txt ./
RUN pip install --no-cache-dir -r requirements.txt
# The automatic judges' extras; the CPU build of torch first, so nothing can pull another one.
RUN pip install --no-cache-dir torch==2.13.0 && pip install --no-cache-dir -r requirements-judges.txt

COPY . .
# The platform's own modules compiled once here (PYTHONDONTWRITEBYTECODE: a container never writes them), so
# every command, worker and web process starts without compiling them again (0.7 s of CPU each).
RUN python -m compileall -q annotation hits config
RUN SECRET_KEY=collectstatic-only-placeholder-never-used-to-sign-anything-000 DEBUG=0 python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 app && mkdir -p /data && chown app /data
USER app
ENV DATA_DIR=/data
EXPOSE 8000
# gunicorn reads its number of (sync) workers from WEB_CONCURRENCY: 2 x the host's cores + 1.
ENV WEB_CONCURRENCY=5
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000"]
