"""Messages built from other messages (an exception's text, a typed reason) as one clean sentence."""

from __future__ import annotations


def full_stop(text) -> str:
    """``text`` ending with one full stop: a text that already ends a sentence gets no second one ("..")."""
    text = str(text or "").rstrip()
    return text if not text or text.endswith((".", "!", "?", "…")) else f"{text}."


def as_sentence(text) -> str:
    """``text`` as a sentence: its first letter upper-cased (the rest kept as written, so "MTurk" stays
    "MTurk", unlike ``str.capitalize``) and one full stop at the end."""
    text = full_stop(str(text or "").strip())
    return text[:1].upper() + text[1:]
