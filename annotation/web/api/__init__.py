"""The REST API (Django REST framework): thin adapters over the selectors and services."""
