"""Template helpers for showing references with their predicates highlighted."""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.simple_tag
def highlight_predicates(sentence, predicates=None, css_class="predicate"):
    """The sentence text with each predicate span wrapped in ``<mark>``; all text is escaped."""
    spans = sorted(((p.start, p.end, p.lemma) for p in (predicates if predicates is not None else sentence.predicates.all())))
    text, pieces, cursor = sentence.text, [], 0
    for start, end, lemma in spans:
        if start < cursor:  # overlapping spans: show the first only
            continue
        pieces.append(escape(text[cursor:start]))
        pieces.append(f'<mark class="{css_class}" title="{escape(lemma)}">{escape(text[start:end])}</mark>')
        cursor = end
    pieces.append(escape(text[cursor:]))
    return mark_safe("".join(pieces))


@register.simple_tag
def new_message_key():
    """A fresh key for a message form (``_message_form.html``): posting the same form twice sends one message."""
    import uuid

    return uuid.uuid4().hex
