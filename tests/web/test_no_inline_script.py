"""The Content-Security-Policy (script-src 'self') ignores inline event handlers and inline scripts: a template
that still has one silently loses that behaviour (a confirmation that no longer asks, say)."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
INLINE_HANDLER = re.compile(r"""\son[a-z]+\s*=\s*["']""", re.IGNORECASE)
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)


def test_no_template_has_an_inline_handler_or_script():
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        text = path.read_text()
        for pattern in (INLINE_HANDLER, INLINE_SCRIPT):
            for match in pattern.finditer(text):
                found.append(f"{path.relative_to(TEMPLATES)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0).strip()}")
    assert not found, found
