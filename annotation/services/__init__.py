"""Writes and workflow steps of the QAPyramid protocol (the only place that changes state across models)."""
