"""compute package."""
