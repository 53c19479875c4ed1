"""Template helpers of the researcher pages: references with their predicates highlighted, links to a worker."""

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
def worker_link(campaign, worker, name=None):
    """A worker's name linked to their worker view in the campaign (``worker``: a ``Worker`` or its id, with
    ``name``); the name alone when there is no worker (an imported label, a name without a row)."""
    from django.urls import reverse

    worker_id = getattr(worker, "pk", worker)
    shown = name if name is not None else getattr(worker, "external_id", "")
    if not isinstance(worker_id, int) or campaign is None:
        return escape(shown or "—")
    url = reverse("campaign-worker", args=[campaign.slug, worker_id])
    return mark_safe(f'<a href="{escape(url)}" class="worker-link">{escape(shown)}</a>')


@register.simple_tag
def new_message_key():
    """A fresh key for a message form (``_message_form.html``): posting the same form twice sends one message."""
    import uuid

    return uuid.uuid4().hex
