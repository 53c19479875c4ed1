"""The web layer: researcher pages, the HIT pages' page code, and the REST API (``api``); thin adapters over
the services and selectors."""
