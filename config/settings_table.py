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


def _env_number(name: str, default, convert, what: str):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return convert(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}") from exc


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


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
G_EMAIL = "E-mail (messages to local workers)"
_MAIL = ("E-mail of messages to local workers is sent only when `EMAIL_BACKEND` or `EMAIL_HOST` is set beyond "
         "Django's default (SMTP on localhost); otherwise a message is a notice on the worker's page alone.")

SETTINGS: tuple[Setting, ...] = (
    _s("DEBUG", "bool", False, G_CORE,
       "`1` for local development. With it off, `SECRET_KEY` is required (on the embedded default one is generated), and the HTTPS redirect, secure cookies and HSTS are on."),
    _s("SECRET_KEY", "str", "", G_CORE,
       "Required when `DEBUG` is off and `DATABASE_URL` is set, at least 50 characters (signs sessions, CSRF tokens and password resets); on the embedded default one is generated once into `DATA_DIR/secret_key` (readable by its owner only). Unset with `DATABASE_URL` and DEBUG off: the platform refuses to start.", shown="(generated under DATA_DIR on the embedded default)"),
    _s("DATA_DIR", "path", "var", G_CORE,
       "The platform's own files: the embedded SQLite database (`DATA_DIR/db.sqlite3`), trained presence judges, exports, uploads (unless `STORAGE_BUCKET` is set), the generated secret key, `served-at`.", shown="var (in the checkout)"),
    _s("MODELS_DIR", "path", "", G_CORE,
       "Trained presence judges (without `STORAGE_BUCKET`; with it, this machine's cache of the judges it loaded).", shown="DATA_DIR/models"),
    _s("EXPORTS_DIR", "path", "", G_CORE,
       "Campaign exports (without `STORAGE_BUCKET`).", shown="DATA_DIR/exports"),
    _s("STORAGE_BUCKET", "str", "", G_CORE,
       "Bucket of an S3-compatible object store (AWS S3, MinIO, Ceph, a cloud's S3 API) for every file another process reads: staged uploads, export archives, trained judges (under `uploads/`, `exports/`, `models/`). Needed as soon as web nodes and workers do not share one disk. Credentials, region and endpoint come from the standard AWS chain (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3` for a store other than AWS, instance roles). A bucket that does not exist stops the start. Unset: the local disk (`DATA_DIR/uploads`, `EXPORTS_DIR`, `MODELS_DIR`)."),
    _s("STORAGE_SIGNED_URL_SECONDS", "int", 0, G_CORE,
       "With `STORAGE_BUCKET`: a download of an export redirects to a link signed by the store, valid this many seconds, and the browser fetches the archive from the store directly (its address must then be reachable by the researchers). 0: the web node streams the archive from the store."),
    _s("EXPORT_KEEP_HOURS", "int", 168, G_CORE,
       "Export archives older than this are removed (an hourly Celery beat task, on the disk or in the bucket); downloading one afterwards answers 410 Gone, and the researcher exports again."),
    _s("ALLOWED_HOSTS", "list", [], G_CORE,
       "Comma-separated host names the platform answers to.", shown="127.0.0.1, localhost, [::1] with DEBUG on; (empty) with DEBUG off"),
    _s("CSRF_TRUSTED_ORIGINS", "list", [], G_CORE,
       "Comma-separated origins trusted for form posts, e.g. `https://qa.example.org`."),
    _s("PUBLIC_BASE_URL", "str", "", G_CORE,
       "Start of the links the platform prints in full: invitation links, the HIT page MTurk frames (must be HTTPS for MTurk). Unset: the address a page was asked on; for commands the one `make demo` serves on (`DATA_DIR/served-at`), else `http://127.0.0.1:8000`."),
    _s("LOG_LEVEL", "str", "INFO", G_CORE, "Level of the root logger."),
    _s("COUNT_QUERIES", "bool", False, G_CORE, "Adds a middleware that counts the database queries of each request."),
    _s("DATABASE_URL", "str", "", G_DB,
       "e.g. `postgres://user:pass@host:5432/db` (psycopg 3): switches from the SQLite file `DATA_DIR/db.sqlite3` (the embedded default) to PostgreSQL."),
    _s("DB_CONN_MAX_AGE", "int", 60, G_DB,
       "Seconds a PostgreSQL connection is kept between requests (checked before reuse)."),
    _s("DB_PREPARE_THRESHOLD", "int", 5, G_DB,
       "PostgreSQL: a statement run this many times on a connection is prepared (server-side binding), so the server no longer parses and plans it. `0` turns prepared statements off, e.g. behind a pooler in transaction mode that cannot keep them."),
    _s("REDIS_URL", "str", "", G_DB,
       "e.g. `redis://127.0.0.1:6379/0`: the Celery broker and the cache when `CELERY_BROKER_URL` or `CACHE_URL` are unset."),
    _s("CACHE_URL", "str", "", G_DB,
       "The cache: sessions and the rate limits' counts, shared by every web process. Unset: `REDIS_URL`, else memory of each process."),
    _s("CELERY_BROKER_URL", "str", "", G_CELERY,
       "e.g. `redis://127.0.0.1:6379/0`. Unset: `REDIS_URL`; neither set: tasks run in-process (eager)."),
    _s("CELERY_RESULT_BACKEND", "str", "", G_CELERY,
       "Where task results go. Unset: the broker when it is Redis."),
    _s("FOLLOWUP_COALESCE_SECONDS", "float", 2.0, G_CELERY,
       "Follow-ups of completed HITs (gold labels, cross-checks, score updates, the campaign's end) are gathered for this long and run as one task (`0`: gold labels and the campaign's end in the last judgment's transaction, one task per HIT for the rest)."),
    _s("FOLLOWUP_MAX_SHARE", "float", 0.1, G_CELERY,
       "A gathered cross-check or score update that took t seconds waits at least t / this before the next one (up to `FOLLOWUP_MAX_WAIT`): one campaign's follow-ups of one kind take at most this share of a Celery worker however large the campaign grows. Completed presence HITs cost per HIT and keep the plain window."),
    _s("FOLLOWUP_MAX_WAIT", "float", 30.0, G_CELERY,
       "The longest wait, in seconds, that `FOLLOWUP_MAX_SHARE` may stretch a gathered follow-up to."),
    _s("HIT_UNOPENED_HOLD_SECONDS", "int", 90, G_WORK,
       "How long a HIT accepted for a worker (auto-accept, \"Start working\") stays theirs until they open its page; then it is held for the task type's full duration."),
    _s("HIT_STATUS_POLL_SECONDS", "int", 30, G_WORK,
       "How often an open HIT page asks its status (campaign paused or cancelled, time left)."),
    _s("HIT_DRAW_KEEP_SECONDS", "int", 3600, G_WORK,
       "How long the HIT drawn for a worker's next HIT of a type (gold or not) is kept while they do not take it: previewing again shows it, \"Start\" takes it."),
    _s("GOLD_FEEDBACK_EVERY", "int", 10, G_WORK,
       "The worker's standing page moves their accuracy on check items and their agreement with the majority only after every this many HITs of the campaign, gold and regular alike (the accuracy with at least two new gold answers); at least 1."),
    _s("PRESENCE_JUDGE_MODEL", "str", "presence-judge", G_JUDGES,
       "The model the `trained` judge loads from `MODELS_DIR`."),
    _s("AUTOSCORE_CHUNK_SIZE", "int", 10, G_JUDGES,
       "Summaries per autoscore task."),
    _s("AUTOSCORE_QA_GENERATOR", "str", "dependency", G_JUDGES,
       "QA pairs of AutoQAPyramid runs: `dependency` (spaCy templates), or `llm` (the protocol's prompt on the `LLM_*` endpoint)."),
    _s("JUDGE_TORCH_THREADS", "int", 2, G_JUDGES,
       "Torch threads of a judge."),
    _s("JUDGE_ALLOW_DOWNLOADS", "bool", False, G_JUDGES,
       "Let `nli:HUB_ID` download from the hub (off: local files and cache only)."),
    _s("LLM_BASE_URL", "str", "", G_JUDGES,
       "The OpenAI-compatible endpoint of the `llm` judge."),
    _s("LLM_MODEL", "str", "", G_JUDGES, "Model name sent to the LLM endpoint."),
    _s("LLM_API_KEY", "str", "", G_JUDGES, "API key of the LLM endpoint."),
    _s("LLM_SHOTS", "int", 5, G_JUDGES,
       "In-context examples of each LLM prompt."),
    _s("LLM_SHOT_SAMPLING", "str", "random", G_JUDGES,
       "How the shots are drawn from other references' gold: `random` (the paper's) or `balanced` (half YES, half NO)."),
    _s("LLM_SHOT_SEED", "int", 0, G_JUDGES,
       "The seed of the shots' draw."),
    _s("LLM_MAX_CONCURRENCY", "int", 4, G_JUDGES,
       "Parallel requests to the LLM endpoint."),
    _s("LLM_RETRIES", "int", 3, G_JUDGES, "Retries of a failed LLM request."),
    _s("LLM_TIMEOUT", "int", 30, G_JUDGES,
       "Seconds per LLM request."),
    _s("EMAIL_BACKEND", "str", "django.core.mail.backends.smtp.EmailBackend", G_EMAIL, "Django's e-mail backend. " + _MAIL),
    _s("EMAIL_HOST", "str", "localhost", G_EMAIL, "SMTP server. " + _MAIL),
    _s("EMAIL_PORT", "int", 25, G_EMAIL, "SMTP port."),
    _s("EMAIL_HOST_USER", "str", "", G_EMAIL, "SMTP user name."),
    _s("EMAIL_HOST_PASSWORD", "str", "", G_EMAIL, "SMTP password."),
    _s("EMAIL_USE_TLS", "bool", False, G_EMAIL, "SMTP over TLS (STARTTLS)."),
    _s("EMAIL_TIMEOUT", "int", 20, G_EMAIL, "Seconds before an SMTP connection times out."),
    _s("DEFAULT_FROM_EMAIL", "str", "webmaster@localhost", G_EMAIL, "Sender address of the e-mails."),
    _s("LOGIN_RATE_LIMIT", "str", "10/60", G_LIMITS,
       "Login attempts per account and client address (\"count/seconds\", sliding window; see Limits)."),
    _s("LOGIN_ADDRESS_RATE_LIMIT", "str", "20/60", G_LIMITS,
       "Failed logins per client address and account (\"count/seconds\", sliding window)."),
    _s("LOGIN_ACCOUNT_ADDRESSES_LIMIT", "str", "10/600", G_LIMITS,
       "Distinct client addresses failing on one account (\"count/seconds\", sliding window)."),
    _s("SUBMIT_RATE_LIMIT", "str", "120/60", G_LIMITS,
       "New places and submissions per worker (\"count/seconds\")."),
    _s("MAX_BONUS", "str", "5.00", G_LIMITS,
       "Largest total of bonuses one assignment may receive, in USD."),
    _s("IMPORT_MAX_BYTES", "int", 200 * 1024 * 1024, G_LIMITS,
       "Largest imported file or upload, in bytes (200 MB)."),
    _s("IMPORT_MAX_LINES", "int", 1_000_000, G_LIMITS,
       "Most lines of an imported file."),
    _s("IMPORT_MAX_REFERENCE_CHARS", "int", 20_000, G_LIMITS,
       "Characters of one reference (references are a few sentences, about 300 on CNN/DM; each goes through predicate detection)."),
    _s("IMPORT_MAX_SUMMARY_CHARS", "int", 20_000, G_LIMITS,
       "Characters of one summary."),
    _s("IMPORT_MAX_SOURCE_CHARS", "int", 200_000, G_LIMITS,
       "Characters of one source document (only stored and shown)."),
    _s("API_IMPORT_INLINE_MAX_BYTES", "int", 256 * 1024, G_LIMITS,
       "An API upload larger than this (all files together) is imported by a background job (202 + the job)."),
    _s("IMPORT_PREVIEW_ANALYSE_CHARS", "int", 150_000, G_LIMITS,
       "The web upload's preview finds predicates in the references up to this many characters (about 5 s) and shows the sentence and predicate counts scaled to all, marked \"about\"; the import itself analyses every reference."),
    _s("DATA_UPLOAD_MAX_MEMORY_SIZE", "int", 20 * 1024 * 1024, G_LIMITS, "Largest request body Django reads into memory, in bytes."),
    _s("MTURK_ENDPOINT_URL", "str", "", G_MTURK,
       "Another requester endpoint, e.g. the local stand-in (`manage.py mturk_standin`). Unset: MTurk's own (sandbox or live, region us-east-1: MTurk has no other). Credentials: the standard AWS chain only (never here, the database or logs)."),
    _s("MTURK_FRAME_HEIGHT", "int", 900, G_MTURK,
       "Height in pixels of the HIT page in MTurk's frame."),
    _s("MTURK_HIT_LIFETIME", "int", 7 * 24 * 3600, G_MTURK,
       "Seconds a HIT stays on MTurk (7 days; a campaign may set its own)."),
    _s("MTURK_AUTO_APPROVAL_DELAY", "int", 3 * 24 * 3600, G_MTURK,
       "Seconds before MTurk approves unreviewed work itself (3 days; a campaign may set its own)."),
    _s("MTURK_LOCALES", "list", [], G_MTURK,
       "Optional worker requirement: ISO country codes, e.g. `US,CA,GB`."),
    _s("MTURK_MIN_APPROVAL_RATE", "int", 0, G_MTURK,
       "Optional worker requirement: minimum approval rate in percent, e.g. `95` (0: none)."),
    _s("MTURK_OPEN_HIT_ASSIGNMENTS", "int", 9, G_MTURK,
       "MTurk assignments of a qualification HIT (a gold HIT has its regular HITs' places); under 10: no extra fee."),
    _s("MTURK_PUBLISH_CHUNK", "int", 100, G_MTURK,
       "HITs per publishing task."),
    _s("MTURK_TOKEN_PREFIX", "str", "qapyr", G_MTURK,
       "Prefix of request tokens (UniqueRequestToken, RequesterAnnotation) and qualification names: one per installation sharing an account."),
    _s("MTURK_APPROVE_AFTER_HOURS", "float", 24.0, G_MTURK,
       "The sync approves submitted work this old that nobody rejected (`0`: at once)."),
    _s("MTURK_MAX_RETRIES", "int", 5, G_MTURK,
       "Retries of throttled or failed calls, waiting base x 2^n x U(0.5, 1); the only retries (botocore's are off), so at most `MTURK_MAX_RETRIES` + 1 HTTP requests per call."),
    _s("MTURK_RETRY_BASE_SECONDS", "float", 1.0, G_MTURK,
       "The base wait of `MTURK_MAX_RETRIES`' retries."),
    _s("MTURK_EXTRA_FRAME_ANCESTORS", "list", [], G_MTURK,
       "Extra origins allowed to frame the HIT page (tests)."),
    _s("MTURK_EXTRA_SUBMIT_HOSTS", "list", [], G_MTURK,
       "Extra origins allowed to receive the framed HIT page's submission (tests)."),
    _s("MTURK_SYNC_INTERVAL", "int", 300, G_MTURK,
       "Seconds between syncs (Celery beat)."),
    _s("MTURK_CONFIRM_GRACE", "int", 1800, G_MTURK,
       "Seconds a framed-page submission may wait for MTurk to list it before the sync asks MTurk (GetAssignment) and discards it if MTurk does not have it for that worker."),
    _s("PROLIFIC_API_URL", "str", "https://api.prolific.com", G_PROLIFIC,
       "Prolific's API, or the local stand-in (`manage.py prolific_standin`)."),
    _s("PROLIFIC_API_TOKEN", "str", "", G_PROLIFIC,
       "The token sent as `Authorization: Token ...` (Prolific: Settings > API tokens)."),
    _s("PROLIFIC_COMPLETION_URL", "str", "https://app.prolific.com/submissions/complete", G_PROLIFIC,
       "Where a participant is sent back with the study's completion code (`?cc=CODE`)."),
    _s("PROLIFIC_MAX_RETRIES", "int", 5, G_PROLIFIC,
       "Retries of Prolific calls that are safe to repeat (reads, transitions, group changes) after throttling or a 5xx; a call that creates paid work or moves money is never re-sent blind."),
    _s("PROLIFIC_RETRY_BASE_SECONDS", "float", 1.0, G_PROLIFIC,
       "The base wait of `PROLIFIC_MAX_RETRIES`' retries."),
    _s("PROLIFIC_SYNC_INTERVAL", "int", 300, G_PROLIFIC,
       "Seconds between syncs of running Prolific campaigns (Celery beat)."),
    _s("PROLIFIC_CONFIRM_GRACE", "int", 1800, G_PROLIFIC,
       "Seconds a session's work may wait for Prolific to list its submission before it is discarded (made-up ids: nothing counts)."),
    _s("PROLIFIC_APPROVE_AFTER_HOURS", "float", 24.0, G_PROLIFIC,
       "The sync approves Prolific participants' HITs this old that nobody reviewed, then their submission (Prolific itself approves a submission left unreviewed for 21 days)."),
    _s("PROLIFIC_REJECT_MESSAGE_MIN", "int", 100, G_PROLIFIC, "Prolific's minimum length of a rejection message (characters)."),
    _s("PROLIFIC_BONUS_FLAG_HOURS", "float", 24.0, G_PROLIFIC,
       "A bulk bonus whose pay reply was lost and that Prolific's records still do not show paid this long after is flagged on the payout page (never paid again by the platform)."),
    _s("PROLIFIC_MIN_HOURLY_USD", "float", 8.0, G_PROLIFIC,
       "Prolific's minimum hourly pay ($8.00 / £6.00, \"Prolific's payment principles\"): publishing is refused below it."),
    _s("PROLIFIC_MIN_HOURLY_GBP", "float", 6.0, G_PROLIFIC,
       "The same minimum in a GBP workspace (£6.00): a study's currency picks one."),
    _s("SECURE_SSL_REDIRECT", "bool", True, G_SECURITY,
       "Redirect HTTP to HTTPS (only when `DEBUG` is off); turn off behind plain HTTP only."),
    _s("SESSION_COOKIE_SECURE", "bool", True, G_SECURITY,
       "Session cookie over HTTPS only (only when `DEBUG` is off); turn off behind plain HTTP only."),
    _s("CSRF_COOKIE_SECURE", "bool", True, G_SECURITY,
       "CSRF cookie over HTTPS only (only when `DEBUG` is off); turn off behind plain HTTP only."),
    _s("SECURE_HSTS_SECONDS", "int", 31536000, G_SECURITY,
       "HSTS max-age in seconds, 1 year (only when `DEBUG` is off)."),
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
