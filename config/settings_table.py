"""Every environment variable the platform reads, in one table: name, kind, default and what it does.

``config/settings.py`` reads each variable through :func:`read`, which looks the name up here (a name missing
from the table is an error), and the documentation's settings reference is generated from this table
(``manage.py docs_reference``): the two cannot drift apart.

A default that depends on another setting (``MODELS_DIR`` under ``DATA_DIR``) is passed by ``settings.py`` at the
read; its entry says so in ``shown`` (the text the reference prints as the default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_path(name: str, default) -> Path:
    return Path(os.environ.get(name, default)).resolve()


READERS = {"bool": env_bool, "int": env_int, "float": env_float, "str": env_str, "list": env_list, "path": env_path}
KIND_TEXT = {
    "bool": "boolean (1/0, true/false, yes/no, on/off)",
    "int": "integer",
    "float": "number",
    "str": "text",
    "list": "comma-separated list",
    "path": "folder",
}


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: object
    group: str
    description: str
    shown: str = ""  # the default as the reference prints it, when settings.py computes it

    @property
    def default_text(self) -> str:
        if self.shown:
            return self.shown
        if self.kind == "list":
            return ", ".join(self.default) if self.default else "(empty)"
        if self.kind == "bool":
            return "on" if self.default else "off"
        return str(self.default) if self.default != "" else "(empty)"


def _s(name, kind, default, group, description, shown=""):
    return Setting(name, kind, default, group, description, shown)


G_CORE, G_DB, G_CELERY, G_WORK, G_JUDGES, G_LIMITS = (
    "Core", "Database and cache", "Celery", "Hand-out and worker pages", "Automatic judges", "Limits")
G_MTURK, G_PROLIFIC, G_SECURITY = "MTurk", "Prolific", "Production hardening (DEBUG off)"

SETTINGS: tuple[Setting, ...] = (
    _s("DEBUG", "bool", False, G_CORE, "Django's debug mode, for a developer's own machine only. Off unless `DEBUG=1`."),
    _s("SECRET_KEY", "str", "", G_CORE,
       "Signs sessions, CSRF tokens and password resets; at least 50 characters with DEBUG off. Unset on the "
       "embedded default (no `DATABASE_URL`): one is generated once and kept under `DATA_DIR`. Unset with "
       "`DATABASE_URL` and DEBUG off: the platform refuses to start.",
       shown="(generated under DATA_DIR on the embedded default)"),
    _s("DATA_DIR", "path", "var", G_CORE,
       "Where the platform keeps its own files: the embedded SQLite database, trained presence judges, exports, "
       "the generated secret key.", shown="var (in the checkout)"),
    _s("MODELS_DIR", "path", "", G_CORE, "Where trained presence judges are stored.", shown="DATA_DIR/models"),
    _s("EXPORTS_DIR", "path", "", G_CORE, "Where exports are written.", shown="DATA_DIR/exports"),
    _s("ALLOWED_HOSTS", "list", [], G_CORE, "Host names the platform answers to.",
       shown="127.0.0.1, localhost, [::1] with DEBUG on; (empty) with DEBUG off"),
    _s("CSRF_TRUSTED_ORIGINS", "list", [], G_CORE, "Origins trusted for form posts (e.g. `https://qa.example.org`)."),
    _s("PUBLIC_BASE_URL", "str", "", G_CORE,
       "Public base URL of absolute links (invitation links; MTurk's ExternalQuestion, which must be HTTPS). Unset: "
       "links use the address a request came in on, and commands the one `make demo` serves on."),
    _s("LOG_LEVEL", "str", "INFO", G_CORE, "Level of the root logger."),
    _s("COUNT_QUERIES", "bool", False, G_CORE, "Adds a middleware that counts the database queries of each request."),
    _s("DATABASE_URL", "str", "", G_DB,
       "A database URL (e.g. `postgres://user:pass@host:5432/name`): switches from the embedded SQLite file under "
       "`DATA_DIR` to PostgreSQL (psycopg 3)."),
    _s("DB_CONN_MAX_AGE", "int", 60, G_DB, "Seconds a database connection is kept open (with `DATABASE_URL`)."),
    _s("DB_PREPARE_THRESHOLD", "int", 5, G_DB,
       "PostgreSQL: a statement run this many times on a connection is prepared (server-side binding); 0 turns "
       "it off (e.g. behind a connection pooler in transaction mode)."),
    _s("REDIS_URL", "str", "", G_DB, "Redis: the Celery broker and the cache when `CELERY_BROKER_URL` or `CACHE_URL` are unset."),
    _s("CACHE_URL", "str", "", G_DB,
       "Redis cache shared by all web processes (rate limits hold across them; sessions live in the cache). "
       "Unset: `REDIS_URL`, else a per-process memory cache."),
    _s("CELERY_BROKER_URL", "str", "", G_CELERY,
       "Celery broker. Unset: `REDIS_URL`; neither set: tasks run in-process (eager)."),
    _s("CELERY_RESULT_BACKEND", "str", "", G_CELERY, "Celery result backend. Unset: the broker when it is Redis."),
    _s("FOLLOWUP_COALESCE_SECONDS", "float", 2.0, G_CELERY,
       "Follow-ups of completed HITs (cross-checks, score updates) are gathered per campaign for this many seconds "
       "and run as one task; 0 sends one task per HIT."),
    _s("FOLLOWUP_MAX_SHARE", "float", 0.1, G_CELERY,
       "A drain that took t seconds waits at least t / FOLLOWUP_MAX_SHARE before the next one, so one campaign's "
       "follow-ups of one kind take at most this share of a Celery worker."),
    _s("HIT_UNOPENED_HOLD_SECONDS", "int", 90, G_WORK,
       "A HIT accepted for a worker is held this long until the page is opened, then for the task type's full "
       "duration."),
    _s("HIT_STATUS_POLL_SECONDS", "int", 30, G_WORK,
       "How often an open HIT page asks whether its campaign was paused or cancelled, and for the time left."),
    _s("HIT_DRAW_KEEP_SECONDS", "int", 3600, G_WORK,
       "The HIT drawn for a worker's next HIT of a type is kept this long, or until they take it or it stops being "
       "open to them (no re-rolling the draw)."),
    _s("GOLD_FEEDBACK_EVERY", "int", 10, G_WORK,
       "A worker's accuracy on gold checks is shown to them only after every this many regular HITs (at least 1)."),
    _s("PRESENCE_JUDGE_MODEL", "str", "presence-judge", G_JUDGES, "Default trained presence judge (under `MODELS_DIR`)."),
    _s("AUTOSCORE_CHUNK_SIZE", "int", 10, G_JUDGES, "Examples per automatic-scoring task."),
    _s("AUTOSCORE_QA_GENERATOR", "str", "dependency", G_JUDGES, "How automatic scoring writes QA pairs: `dependency` or `llm`."),
    _s("JUDGE_TORCH_THREADS", "int", 2, G_JUDGES, "Threads torch may use for the neural judges."),
    _s("JUDGE_ALLOW_DOWNLOADS", "bool", False, G_JUDGES, "Allow the neural judges to download model weights."),
    _s("LLM_BASE_URL", "str", "", G_JUDGES, "OpenAI-compatible endpoint of the LLM judge."),
    _s("LLM_MODEL", "str", "", G_JUDGES, "Model name sent to the LLM endpoint."),
    _s("LLM_API_KEY", "str", "", G_JUDGES, "API key of the LLM endpoint."),
    _s("LLM_SHOTS", "int", 5, G_JUDGES, "Few-shot examples in each LLM prompt."),
    _s("LLM_SHOT_SAMPLING", "str", "random", G_JUDGES,
       "`random`: the paper's sampling of the shots from other references; `balanced`: half YES, half NO."),
    _s("LLM_SHOT_SEED", "int", 0, G_JUDGES, "Seed of the shots' sampling."),
    _s("LLM_MAX_CONCURRENCY", "int", 4, G_JUDGES, "Concurrent requests to the LLM endpoint."),
    _s("LLM_RETRIES", "int", 3, G_JUDGES, "Retries of a failed LLM request."),
    _s("LLM_TIMEOUT", "int", 30, G_JUDGES, "Seconds before an LLM request times out."),
    _s("LOGIN_RATE_LIMIT", "str", "10/60", G_LIMITS, "Login attempts per account and client address (requests/seconds)."),
    _s("LOGIN_ADDRESS_RATE_LIMIT", "str", "20/60", G_LIMITS, "Failed logins per client address (requests/seconds)."),
    _s("LOGIN_ACCOUNT_ADDRESSES_LIMIT", "str", "10/600", G_LIMITS,
       "Distinct client addresses failing on one account (addresses/seconds)."),
    _s("SUBMIT_RATE_LIMIT", "str", "120/60", G_LIMITS, "Submissions per worker (requests/seconds)."),
    _s("MAX_BONUS", "str", "5.00", G_LIMITS, "Largest total of the bonuses one assignment may receive, in USD."),
    _s("IMPORT_MAX_BYTES", "int", 200 * 1024 * 1024, G_LIMITS, "Largest upload or import, in bytes."),
    _s("IMPORT_MAX_LINES", "int", 1_000_000, G_LIMITS, "Most lines of an import."),
    _s("IMPORT_MAX_REFERENCE_CHARS", "int", 20_000, G_LIMITS, "Characters of one reference (each goes through predicate detection)."),
    _s("IMPORT_MAX_SUMMARY_CHARS", "int", 20_000, G_LIMITS, "Characters of one system summary."),
    _s("IMPORT_MAX_SOURCE_CHARS", "int", 200_000, G_LIMITS, "Characters of one source document (only stored and shown)."),
    _s("API_IMPORT_INLINE_MAX_BYTES", "int", 256 * 1024, G_LIMITS,
       "An API upload larger than this (all files together) is imported as a background job (202 + the job)."),
    _s("IMPORT_PREVIEW_ANALYSE_CHARS", "int", 150_000, G_LIMITS,
       "The web upload's preview finds predicates in the references up to this many characters and scales the "
       "counts; the import itself always analyses everything."),
    _s("DATA_UPLOAD_MAX_MEMORY_SIZE", "int", 20 * 1024 * 1024, G_LIMITS, "Largest request body Django reads into memory, in bytes."),
    _s("MTURK_ENDPOINT_URL", "str", "", G_MTURK,
       "Another requester endpoint for both accounts, e.g. the local stand-in (`manage.py mturk_standin`); empty: AWS. "
       "AWS credentials come only from the standard AWS chain, never from here."),
    _s("MTURK_FRAME_HEIGHT", "int", 900, G_MTURK, "Height in pixels of the ExternalQuestion frame."),
    _s("MTURK_HIT_LIFETIME", "int", 7 * 24 * 3600, G_MTURK, "Seconds a HIT stays on MTurk (a campaign may set its own)."),
    _s("MTURK_AUTO_APPROVAL_DELAY", "int", 3 * 24 * 3600, G_MTURK,
       "Seconds after a submission when MTurk approves and pays it on its own (a campaign may set its own)."),
    _s("MTURK_LOCALES", "list", [], G_MTURK, "Worker requirement: ISO country codes (e.g. `US,CA,GB`)."),
    _s("MTURK_MIN_APPROVAL_RATE", "int", 0, G_MTURK, "Worker requirement: minimum approval rate in percent (0: none)."),
    _s("MTURK_OPEN_HIT_ASSIGNMENTS", "int", 9, G_MTURK,
       "Assignments of gold and qualification HITs on MTurk (under 10: no extra fee)."),
    _s("MTURK_PUBLISH_CHUNK", "int", 100, G_MTURK, "HITs published per task."),
    _s("MTURK_TOKEN_PREFIX", "str", "qapyr", G_MTURK,
       "Prefix of every UniqueRequestToken and RequesterAnnotation: give each installation sharing an account its own."),
    _s("MTURK_APPROVE_AFTER_HOURS", "float", 24.0, G_MTURK,
       "Submitted MTurk work is approved by the sync after this many hours unless a researcher rejected it first."),
    _s("MTURK_MAX_RETRIES", "int", 5, G_MTURK, "Retries of a failed MTurk call."),
    _s("MTURK_RETRY_BASE_SECONDS", "float", 1.0, G_MTURK, "First wait between retries (doubling)."),
    _s("MTURK_EXTRA_FRAME_ANCESTORS", "list", [], G_MTURK, "Further origins allowed to frame the MTurk HIT pages."),
    _s("MTURK_EXTRA_SUBMIT_HOSTS", "list", [], G_MTURK, "Further hosts a finished MTurk assignment may be posted to."),
    _s("MTURK_SYNC_INTERVAL", "int", 300, G_MTURK, "Seconds between two MTurk syncs (Celery beat)."),
    _s("MTURK_CONFIRM_GRACE", "int", 1800, G_MTURK,
       "Work submitted on the framed page but unlisted by MTurk after this many seconds is checked with GetAssignment "
       "and discarded if MTurk does not have it for that worker."),
    _s("PROLIFIC_API_URL", "str", "https://api.prolific.com", G_PROLIFIC,
       "Prolific's API (the stand-in's address for rehearsals: `manage.py prolific_standin`)."),
    _s("PROLIFIC_API_TOKEN", "str", "", G_PROLIFIC, "Prolific API token."),
    _s("PROLIFIC_COMPLETION_URL", "str", "https://app.prolific.com/submissions/complete", G_PROLIFIC,
       "Where a participant is sent back with the study's completion code."),
    _s("PROLIFIC_MAX_RETRIES", "int", 5, G_PROLIFIC, "Retries of a failed Prolific call."),
    _s("PROLIFIC_RETRY_BASE_SECONDS", "float", 1.0, G_PROLIFIC, "First wait between retries (doubling)."),
    _s("PROLIFIC_SYNC_INTERVAL", "int", 300, G_PROLIFIC, "Seconds between two Prolific syncs (Celery beat)."),
    _s("PROLIFIC_CONFIRM_GRACE", "int", 1800, G_PROLIFIC,
       "A session's work unknown to Prolific this many seconds after it started is discarded (made-up ids)."),
    _s("PROLIFIC_APPROVE_AFTER_HOURS", "float", 24.0, G_PROLIFIC,
       "Submitted HITs no researcher reviewed are approved after this many hours, and then their submission "
       "(Prolific itself approves one left unreviewed for 21 days)."),
    _s("PROLIFIC_REJECT_MESSAGE_MIN", "int", 100, G_PROLIFIC, "Prolific's minimum length of a rejection message (characters)."),
    _s("PROLIFIC_BONUS_FLAG_HOURS", "float", 24.0, G_PROLIFIC,
       "A bulk bonus whose pay reply was lost and that Prolific's records still do not show paid after this many hours "
       "is flagged on the payout page; the platform never pays it again on its own."),
    _s("PROLIFIC_MIN_HOURLY_USD", "float", 8.0, G_PROLIFIC, "Prolific's minimum reward per hour in a USD workspace."),
    _s("PROLIFIC_MIN_HOURLY_GBP", "float", 6.0, G_PROLIFIC, "Prolific's minimum reward per hour in a GBP workspace."),
    _s("SECURE_SSL_REDIRECT", "bool", True, G_SECURITY, "Redirect HTTP to HTTPS."),
    _s("SESSION_COOKIE_SECURE", "bool", True, G_SECURITY, "Send the session cookie over HTTPS only."),
    _s("CSRF_COOKIE_SECURE", "bool", True, G_SECURITY, "Send the CSRF cookie over HTTPS only."),
    _s("SECURE_HSTS_SECONDS", "int", 31536000, G_SECURITY, "HSTS max-age in seconds."),
    _s("SECURE_HSTS_INCLUDE_SUBDOMAINS", "bool", True, G_SECURITY, "HSTS covers subdomains."),
    _s("SECURE_HSTS_PRELOAD", "bool", True, G_SECURITY, "HSTS preload."),
)

BY_NAME = {setting.name: setting for setting in SETTINGS}
_UNSET = object()


def read(name: str, default=_UNSET):
    """The value of environment variable ``name``, read as its table entry says.

    ``default`` is only for entries whose default is computed by ``settings.py`` (they say so in ``shown``)."""
    setting = BY_NAME[name]
    if default is _UNSET:
        default = setting.default
    elif not setting.shown:
        raise ImproperlyConfigured(f"{name}: its default is in config/settings_table.py, not at the read")
    if setting.kind == "list":
        default = list(default)
    return READERS[setting.kind](name, default)
