"""Reads of the protocol's data that aggregate, filter by who is asking, or shape what a page shows.

``campaigns`` (visibility, progress, workers, leaderboard), ``quality`` (workers' cross-check figures),
``scores`` (the gold labels that count, agreement, campaign scores), ``agreement`` (the agreement
dashboard), ``hit_items`` (what a HIT shows a worker).  Selectors never write, and never import the
services, automation or web layers.
"""
