"""Text MTurk accepts: the characters it refuses are removed before a call carries the text.

MTurk refuses ASCII control characters 0-8, 11, 12 and 14-31 in RequesterFeedback (and so in every free text a
worker reads: bonus reasons, NotifyWorkers' subject and message).  Tab (9), line feed (10) and carriage return
(13) are kept: they are allowed, and a message's lines stay as the researcher wrote them.  A rejection whose
feedback held such a character would otherwise fail on every sync until MTurk auto-approved, and paid, the work.
"""

from __future__ import annotations

import re

REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def mturk_safe_text(text: str | None, limit: int | None = None) -> str:
    """``text`` without the control characters MTurk refuses, cut to ``limit`` characters after cleaning."""
    cleaned = REFUSED.sub("", text or "")
    return cleaned[:limit] if limit is not None else cleaned
