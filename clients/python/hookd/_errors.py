from __future__ import annotations

import email.utils
import json
import time
from typing import Optional

CODES = ("invalid", "bad_request", "not_found", "conflict", "unauthorized", "forbidden", "too_large", "internal", "unavailable")
"""hookd's error codes (error.code of every error answer)."""

_STATUS_CODES = {422: "invalid", 400: "bad_request", 404: "not_found", 409: "conflict", 401: "unauthorized",
                 403: "forbidden", 413: "too_large", 429: "unavailable", 503: "unavailable"}


class HookdError(Exception):
    """hookd's answer to a call that failed: the HTTP status, hookd's error code and its message."""

    def __init__(self, op: str, status: int, code: str, message: str, retry_after: Optional[float]) -> None:
        super().__init__(f"{op}: hookd answered {status} {code}: {message}")
        self.op = op
        """The op called, e.g. "webhooks.create"."""
        self.status = status
        self.code = code
        """One of CODES."""
        self.message = message
        """What is wrong and how to fix it."""
        self.retry_after = retry_after
        """The answer's Retry-After in seconds (429 and 503), None if none."""


def error_of(op: str, status: int, retry_after_header: Optional[str], raw: bytes) -> HookdError:
    """Reads an error answer; one that is not hookd's (a proxy's page) keeps its status and text."""
    code = _STATUS_CODES.get(status, "internal")
    message = raw.decode("utf-8", "replace").strip()[:200]
    try:
        body = json.loads(raw)
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str):
            code, message = err["code"], str(err.get("message", ""))
    except ValueError:
        pass
    return HookdError(op, status, code, message, parse_retry_after(retry_after_header, time.time()))


def parse_retry_after(value: Optional[str], now: float) -> Optional[float]:
    """Retry-After in seconds: delay-seconds or an HTTP date."""
    v = (value or "").strip()
    if not v:
        return None
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(at.timestamp() - now, 0.0)
