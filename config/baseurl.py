"""The platform's own address in absolute links (invitation links, the HIT page MTurk frames).

``PUBLIC_BASE_URL`` when it is set; else the scheme, host and port the request came in on; without a request
(a management command), the address `make demo` serves on, which it writes to ``DATA_DIR/served-at``; else
http://127.0.0.1:8000, Django's own default.
"""

from __future__ import annotations

from django.conf import settings

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
SERVED_AT = "served-at"


def public_base_url(request=None) -> str:
    """The base URL (no trailing slash) that absolute links start with."""
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL
    if request is not None:
        return f"{request.scheme}://{request.get_host()}"
    return served_address() or DEFAULT_BASE_URL


def served_address() -> str:
    """The address the last `make demo` serves on, or '' when none was written (or it is not a URL)."""
    try:
        text = (settings.DATA_DIR / SERVED_AT).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return text.rstrip("/") if text.startswith(("http://", "https://")) and len(text.split()) == 1 else ""
