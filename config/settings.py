"""Settings of the platform, read from environment variables.

With nothing set, the platform runs on an embedded default: an SQLite file
under ``DATA_DIR`` and Celery tasks executed in-process (eager).  Setting
``DATABASE_URL`` switches to PostgreSQL (psycopg 3), and setting
``CELERY_BROKER_URL`` (or ``REDIS_URL``) switches to a real Celery broker.

``DEBUG`` is off unless ``DEBUG=1``.  With ``DEBUG`` off, ``SECRET_KEY`` must
come from the environment (on the embedded default, without ``DATABASE_URL``,
one is generated once and kept under ``DATA_DIR``) and cookies, HSTS and
HTTPS redirects are hardened.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.queues import INTERACTIVE, task_queues, task_routes
from config.storage import storages_setting

# Every environment variable is read through the table (the settings reference is generated from it).
from config.settings_table import env_bool, env_int, env_list, read  # noqa: F401 (env_*: kept importable from here)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = read("DEBUG")
# Where the platform keeps its own files: the embedded SQLite database,
# trained presence judges, exports.
DATA_DIR = read("DATA_DIR", default=BASE_DIR / "var")

SECRET_KEY = read("SECRET_KEY")
DATABASE_URL = read("DATABASE_URL").strip()
if not SECRET_KEY and not DEBUG and not DATABASE_URL:
    # The embedded default (no DATABASE_URL): a key generated once and kept under DATA_DIR (config/secret.py).
    from config.secret import embedded_secret_key

    SECRET_KEY = embedded_secret_key(DATA_DIR)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY in the environment, or DEBUG=1 for local development."
        )
    # Only ever used with DEBUG on, on a developer's own machine.
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"
# Production signs sessions, CSRF tokens and password resets with it: a short key can be guessed.
if not DEBUG and len(SECRET_KEY) < 50:
    raise ImproperlyConfigured(
        f"SECRET_KEY is {len(SECRET_KEY)} characters long; with DEBUG off it needs at least 50 "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))')."
    )

ALLOWED_HOSTS = read("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = read("CSRF_TRUSTED_ORIGINS")

MODELS_DIR = read("MODELS_DIR", default=DATA_DIR / "models")
# Automatic presence judges (issue 7): default trained model, chunking, the LLM endpoint.
PRESENCE_JUDGE_MODEL = read("PRESENCE_JUDGE_MODEL")
AUTOSCORE_CHUNK_SIZE = read("AUTOSCORE_CHUNK_SIZE")
AUTOSCORE_QA_GENERATOR = read("AUTOSCORE_QA_GENERATOR")  # or "llm"
JUDGE_TORCH_THREADS = read("JUDGE_TORCH_THREADS")
JUDGE_ALLOW_DOWNLOADS = read("JUDGE_ALLOW_DOWNLOADS")
LLM_BASE_URL = read("LLM_BASE_URL")
LLM_MODEL = read("LLM_MODEL")
LLM_API_KEY = read("LLM_API_KEY")
LLM_SHOTS = read("LLM_SHOTS")
# "random": the paper's sampling of the shots from other references; "balanced": half YES, half NO.
LLM_SHOT_SAMPLING = read("LLM_SHOT_SAMPLING")
LLM_SHOT_SEED = read("LLM_SHOT_SEED")
LLM_MAX_CONCURRENCY = read("LLM_MAX_CONCURRENCY")
LLM_RETRIES = read("LLM_RETRIES")
LLM_TIMEOUT = read("LLM_TIMEOUT")
EXPORTS_DIR = read("EXPORTS_DIR", default=DATA_DIR / "exports")

# E-mail (messages to local workers, issue 40): sent only when EMAIL_BACKEND or EMAIL_HOST is set beyond Django's
# default (SMTP on localhost); otherwise a message is a notice on the worker's page alone.
EMAIL_BACKEND = read("EMAIL_BACKEND")
EMAIL_HOST = read("EMAIL_HOST")
EMAIL_PORT = read("EMAIL_PORT")
EMAIL_HOST_USER = read("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = read("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = read("EMAIL_USE_TLS")
EMAIL_TIMEOUT = read("EMAIL_TIMEOUT")
DEFAULT_FROM_EMAIL = read("DEFAULT_FROM_EMAIL")

# Public base URL of absolute links (invitation links; MTurk's ExternalQuestion, which must be HTTPS). Unset: links
# use the address a request came in on, and commands the one `make demo` serves on (config/baseurl.py).
PUBLIC_BASE_URL = read("PUBLIC_BASE_URL").strip().rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "hits",
    "annotation",
]

MIDDLEWARE = [
    # /healthz and /readyz, before the host check and the HTTPS redirect (probes use the pod's address over HTTP).
    "config.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "config.middleware.RefuseNulMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
    "config.middleware.StorageUnavailableMiddleware",
]
if read("COUNT_QUERIES"):
    MIDDLEWARE.insert(0, "config.middleware.QueryCountMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=read("DB_CONN_MAX_AGE"))}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        # Prepared statements: a statement run this many times on a connection is prepared, and
        # PostgreSQL skips parsing and planning it from then on (most of the cost of the worker
        # pages' small indexed statements).  Needs server-side binding.  0 turns it off (e.g. behind
        # a connection pooler in transaction mode that cannot keep prepared statements).
        _prepare = read("DB_PREPARE_THRESHOLD")
        if _prepare > 0:
            DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=_prepare)
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
            # Several threads of the development server share the file.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# One query loads a user with their worker identity; ModelBackend keeps older sessions valid.
AUTHENTICATION_BACKENDS = ["config.auth.WorkerModelBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
try:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:  # a read-only data directory: collectstatic will say so
    pass
# Files another process reads (staged uploads, exports, trained judges): the local disk, or one S3-compatible
# bucket shared by every node when STORAGE_BUCKET is set (annotation/services/filestore.py).
STORAGE_BUCKET = read("STORAGE_BUCKET").strip()
STORAGE_SIGNED_URL_SECONDS = read("STORAGE_SIGNED_URL_SECONDS")
EXPORT_KEEP_HOURS = read("EXPORT_KEEP_HOURS")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    **storages_setting(STORAGE_BUCKET, STORAGE_SIGNED_URL_SECONDS),
    # No manifest: pages render before (or without) collectstatic; WhiteNoise serves from the finders too.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Celery: a real broker when one is configured, otherwise in-process execution.
CELERY_BROKER_URL = read("CELERY_BROKER_URL") or read("REDIS_URL") or ""
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_RESULT_BACKEND = read("CELERY_RESULT_BACKEND") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None
)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Follow-ups of completed HITs (cross-checks, score updates) are gathered per campaign for this
# many seconds and run as one task (annotation/services/coalesce.py); 0 sends one task per HIT.
FOLLOWUP_COALESCE_SECONDS = read("FOLLOWUP_COALESCE_SECONDS")
# A cross-check or score-update drain that took t seconds waits at least t / FOLLOWUP_MAX_SHARE (at most
# FOLLOWUP_MAX_WAIT) before the next one, so one campaign's follow-ups of one kind take at most this share
# of a Celery worker however large it grows.
FOLLOWUP_MAX_SHARE = read("FOLLOWUP_MAX_SHARE")
FOLLOWUP_MAX_WAIT = read("FOLLOWUP_MAX_WAIT")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing from a web request must fail fast when the broker is down (the outbox keeps the work).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE: dict = {
    "expire-assignments": {"task": "hits.expire_assignments", "schedule": 60.0},
    "flush-followups": {"task": "hits.flush_followups", "schedule": 60.0},
    # Stale staged uploads and expired export archives, on the disk or in the bucket.
    "clean-stored-files": {"task": "annotation.clean_stored_files", "schedule": 3600.0},
}
# A HIT accepted for a worker (auto-accept, "Start working") is held this long until the page is opened,
# then for the task type's full duration: one nobody opened is back in the pool within a minute or two.
HIT_UNOPENED_HOLD_SECONDS = read("HIT_UNOPENED_HOLD_SECONDS")
# How often an open HIT page asks whether its campaign was paused or cancelled, and for the time left.
HIT_STATUS_POLL_SECONDS = read("HIT_STATUS_POLL_SECONDS")
# The HIT drawn for a worker's next HIT of a type (gold or not) is kept this long, or until they take it or
# it stops being open to them: previewing again shows it again and "Start" takes it (no re-rolling the draw).
HIT_DRAW_KEEP_SECONDS = read("HIT_DRAW_KEEP_SECONDS")
# A worker's accuracy on gold checks is shown to them only after every this many regular HITs of the campaign
# (and only with at least two new gold answers in it): never moved by a single gold HIT.
GOLD_FEEDBACK_EVERY = max(1, read("GOLD_FEEDBACK_EVERY"))

# Celery queues by latency (config/queues.py): interactive follow-ups, batch jobs and market calls each on their
# own queue; a worker started without -Q consumes all three, and a task sent without a route goes on interactive.
CELERY_TASK_QUEUES = task_queues()
CELERY_TASK_DEFAULT_QUEUE = INTERACTIVE
CELERY_TASK_ROUTES = task_routes()

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first so an API client without a session gets 401 (with WWW-Authenticate), not 403.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "annotation.web.api.pagination.PageNumberWithSize",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON nested too deeply or holding a lone surrogate is a 400, not a server error.
    "DEFAULT_PARSER_CLASSES": [
        "annotation.web.api.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "QAPyramid Studio API",
    "DESCRIPTION": "Campaigns, predicates, QA pairs, presence judgments, gold labels, scores and workers of QAPyramid evaluations.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI and Redoc come from drf-spectacular-sidecar's static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": read("LOG_LEVEL")},
    # httpx logs every request at INFO (a Prolific sync reads dozens of pages): its warnings only.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}

# Cache: Redis when configured (shared by all web processes, so rate limits hold across them).
REDIS_CACHE_URL = read("CACHE_URL") or read("REDIS_URL") or ""
CACHES = {
    "default": (
        {"BACKEND": "config.cache.PooledRedisCache", "LOCATION": REDIS_CACHE_URL, "KEY_PREFIX": "qapyr"}
        if REDIS_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Sessions live in the cache (backed by the database) when Redis is there: no session query per request.
SESSION_ENGINE = (
    "django.contrib.sessions.backends.cached_db" if REDIS_CACHE_URL else "django.contrib.sessions.backends.db"
)
# Rate limits, "requests/seconds": login attempts per account (normalised user name) and client address,
# failed logins per client address, distinct addresses failing on one account (config/ratelimit.py),
# submissions per worker.
LOGIN_RATE_LIMIT = read("LOGIN_RATE_LIMIT")
LOGIN_ADDRESS_RATE_LIMIT = read("LOGIN_ADDRESS_RATE_LIMIT")
LOGIN_ACCOUNT_ADDRESSES_LIMIT = read("LOGIN_ACCOUNT_ADDRESSES_LIMIT")
SUBMIT_RATE_LIMIT = read("SUBMIT_RATE_LIMIT")

# Amazon Mechanical Turk backend (hits.mturk).  AWS credentials come only from the standard AWS chain
# (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ~/.aws, instance roles): never from here, the database or logs.
# Another requester endpoint for both accounts, e.g. the local stand-in (manage.py mturk_standin): empty = AWS.
MTURK_ENDPOINT_URL = read("MTURK_ENDPOINT_URL")
MTURK_FRAME_HEIGHT = read("MTURK_FRAME_HEIGHT")
MTURK_HIT_LIFETIME = read("MTURK_HIT_LIFETIME")
MTURK_AUTO_APPROVAL_DELAY = read("MTURK_AUTO_APPROVAL_DELAY")
# Optional worker requirements: ISO country codes (e.g. "US,CA,GB") and a minimum approval rate in percent.
MTURK_LOCALES = read("MTURK_LOCALES")
MTURK_MIN_APPROVAL_RATE = read("MTURK_MIN_APPROVAL_RATE")
# Gold and qualification HITs are open-ended locally; on MTurk they get this many assignments (under 10: no extra fee).
MTURK_OPEN_HIT_ASSIGNMENTS = read("MTURK_OPEN_HIT_ASSIGNMENTS")
MTURK_PUBLISH_CHUNK = read("MTURK_PUBLISH_CHUNK")
# Prefix of every UniqueRequestToken and RequesterAnnotation: give each installation sharing an account its own.
MTURK_TOKEN_PREFIX = read("MTURK_TOKEN_PREFIX")
# Submitted MTurk work is approved by the sync after this many hours unless a researcher rejected it first.
MTURK_APPROVE_AFTER_HOURS = read("MTURK_APPROVE_AFTER_HOURS")
MTURK_MAX_RETRIES = read("MTURK_MAX_RETRIES")
MTURK_RETRY_BASE_SECONDS = read("MTURK_RETRY_BASE_SECONDS")
# Who may frame the MTurk HIT pages, and where they may post a finished assignment.
MTURK_FRAME_ANCESTORS = [
    "https://www.mturk.com", "https://worker.mturk.com", "https://workersandbox.mturk.com",
    *read("MTURK_EXTRA_FRAME_ANCESTORS"),
]
MTURK_SUBMIT_HOSTS = ["https://www.mturk.com", "https://workersandbox.mturk.com", *read("MTURK_EXTRA_SUBMIT_HOSTS")]
MTURK_SYNC_INTERVAL = read("MTURK_SYNC_INTERVAL")
# Work submitted on the framed page counts once MTurk lists it; after this many seconds unlisted, the sync asks
# MTurk about it (GetAssignment) and discards it if MTurk does not have it for that worker.
MTURK_CONFIRM_GRACE = read("MTURK_CONFIRM_GRACE")
CELERY_BEAT_SCHEDULE["mturk-sync"] = {"task": "hits.mturk.sync_all", "schedule": float(MTURK_SYNC_INTERVAL)}

# Prolific (issue 31): its API (the stand-in's address for rehearsals: manage.py prolific_standin) and token.
PROLIFIC_API_URL = read("PROLIFIC_API_URL").rstrip("/")
PROLIFIC_API_TOKEN = read("PROLIFIC_API_TOKEN")
# Where a participant is sent back with the study's completion code.
PROLIFIC_COMPLETION_URL = read("PROLIFIC_COMPLETION_URL")
PROLIFIC_MAX_RETRIES = read("PROLIFIC_MAX_RETRIES")
PROLIFIC_RETRY_BASE_SECONDS = read("PROLIFIC_RETRY_BASE_SECONDS")
PROLIFIC_SYNC_INTERVAL = read("PROLIFIC_SYNC_INTERVAL")
CELERY_BEAT_SCHEDULE["prolific-sync"] = {"task": "hits.prolific.sync_all", "schedule": float(PROLIFIC_SYNC_INTERVAL)}
# A session's work unknown to Prolific this many seconds after it started is discarded (made-up ids).
PROLIFIC_CONFIRM_GRACE = read("PROLIFIC_CONFIRM_GRACE")
# Submitted HITs no researcher reviewed are approved after this many hours (Prolific itself approves a
# submission left unreviewed for 21 days), and then their submission.
PROLIFIC_APPROVE_AFTER_HOURS = read("PROLIFIC_APPROVE_AFTER_HOURS")
# Prolific's minimum length of a rejection message (characters).
PROLIFIC_REJECT_MESSAGE_MIN = read("PROLIFIC_REJECT_MESSAGE_MIN")
# A bulk bonus whose pay reply was lost and that Prolific's records still do not show paid after this many
# hours is flagged for the researcher (payout page); it is never paid again by the platform on its own.
PROLIFIC_BONUS_FLAG_HOURS = read("PROLIFIC_BONUS_FLAG_HOURS")
# Prolific's minimum reward per hour (USD; its published minimum is $8.00 / £6.00 an hour).
PROLIFIC_MIN_HOURLY_USD = read("PROLIFIC_MIN_HOURLY_USD")
# The same minimum in a GBP workspace (Prolific's published £6.00 an hour): a study's currency picks one.
PROLIFIC_MIN_HOURLY_GBP = read("PROLIFIC_MIN_HOURLY_GBP")
# Largest total of the bonuses one assignment may receive (all its bonuses together), in USD.
MAX_BONUS = read("MAX_BONUS")

# Limits on what an upload or import may contain.
IMPORT_MAX_BYTES = read("IMPORT_MAX_BYTES")
IMPORT_MAX_LINES = read("IMPORT_MAX_LINES")
# Characters per text: a reference or summary is a few sentences (CNN/DM references: about 300), and
# each reference goes through predicate detection; a source document is only stored and shown.
IMPORT_MAX_REFERENCE_CHARS = read("IMPORT_MAX_REFERENCE_CHARS")
IMPORT_MAX_SUMMARY_CHARS = read("IMPORT_MAX_SUMMARY_CHARS")
IMPORT_MAX_SOURCE_CHARS = read("IMPORT_MAX_SOURCE_CHARS")
# An API upload larger than this (all files together) is imported as a background job (202 + the job).
API_IMPORT_INLINE_MAX_BYTES = read("API_IMPORT_INLINE_MAX_BYTES")
# The web upload's preview finds predicates in the references up to this many characters and scales the counts
# (about 5 s of detection); the import itself always analyses everything.
IMPORT_PREVIEW_ANALYSE_CHARS = read("IMPORT_PREVIEW_ANALYSE_CHARS")
DATA_UPLOAD_MAX_MEMORY_SIZE = read("DATA_UPLOAD_MAX_MEMORY_SIZE")

# Production hardening: everything below applies when DEBUG is off.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = read("SECURE_SSL_REDIRECT")
    SESSION_COOKIE_SECURE = read("SESSION_COOKIE_SECURE")
    CSRF_COOKIE_SECURE = read("CSRF_COOKIE_SECURE")
    SECURE_HSTS_SECONDS = read("SECURE_HSTS_SECONDS")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = read("SECURE_HSTS_INCLUDE_SUBDOMAINS")
    SECURE_HSTS_PRELOAD = read("SECURE_HSTS_PRELOAD")
