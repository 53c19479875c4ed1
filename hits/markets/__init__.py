"""The seam between the HIT engine and the crowd markets (local pages, MTurk in ``hits.mturk``, Prolific in
``hits.prolific``).

- ``base.Market``: the small interface every market implements (publish, sync, pay, qualify or filter, block,
  reconcile, preview); ``registry``: ``market_for(batch)`` / ``market_named(name)``, the markets loaded by name
  from ``registry.MARKET_MODULES``; ``local``: the market of the platform's own pages.
- What markets share, written once: ``money`` (exact amounts in cents), ``publishing`` (the publishing lock,
  ``PublishRefused``, the regular rewards of a batch), ``reconcile`` (the comparison of a market's charges with
  the ledger and its report), ``models`` (``Reconciliation``; loads the markets' own models), ``standin`` (the
  stand-ins' clock, served HTTP server and faults).

A market imports this seam, never another market; the rest of ``hits`` reaches a market only through it.
Importing this package loads nothing (the stand-ins import ``hits.markets.standin`` without Django).
"""
