"""Automatic presence judges (SemiAutoQAPyramid / AutoQAPyramid): one interface (``base``), several backends,
found by name through ``registry``."""
