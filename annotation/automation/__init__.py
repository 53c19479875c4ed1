"""Automation on top of the protocol core: automatic presence judges (``judges``), QA generation, and
automatic-scoring runs (``autoscore``).  It uses the core through its services and selectors; the core
never imports it."""
