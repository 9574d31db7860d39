"""Ratchet: improvement loops that let only proven gains through (see DESIGN.md)."""

__version__ = "0.1.0"
