"""Which pages a frame may show: the rule lives in core/urls.py (pure, also used by the browser's own navigation
guard); this is where the frames package has always found it."""

from __future__ import annotations

from framestream.core.urls import ALLOWED_SCHEMES, MAX_URL_LENGTH, check_url

__all__ = ["ALLOWED_SCHEMES", "MAX_URL_LENGTH", "check_url"]
