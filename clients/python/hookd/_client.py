from __future__ import annotations

import json
import re
import secrets
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ._errors import HookdError, error_of
from ._ops import Ops
from ._spec import OpSpec


@dataclass(frozen=True)
class Retry:
    """How a 429 or 503 answer is retried: after its Retry-After, or after backoff doubled per retry."""

    attempts: int = 3
    """Retries after the first try (0 for none)."""
    backoff: float = 0.5
    """The first wait in seconds without Retry-After."""
    max_wait: float = 30.0
    """The longest wait in seconds: a longer Retry-After is not waited for, the error is raised."""


class Client(Ops):
    """A client of hookd's publish and admin API: client.events.publish(...),
    client.webhooks.create(...), one method per op of hookd's /openapi.json.

    429 and 503 answers are retried after their Retry-After; every publish
    carries an idempotency key, so a retry never publishes twice; a failed
    call raises HookdError with hookd's error code.
    """

    def __init__(self, base_url: str, api_key: str, *, owner: Optional[str] = None, retry: Retry = Retry(),
                 timeout: float = 30.0, sleep: Optional[Callable[[float], None]] = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.owner = owner
        """Operator keys: the owner every owner-scoped op acts on (Hookd-Owner)."""
        self.retry = retry
        self.timeout = timeout
        self._sleep = sleep or threading.Event().wait
        super().__init__(self._call)

    def with_owner(self, owner: str) -> "Client":
        """A copy of the client acting on owner (operator keys)."""
        return Client(self.base_url, self._key, owner=owner, retry=self.retry, timeout=self.timeout, sleep=self._sleep)

    def _call(self, spec: OpSpec, args: dict[str, Any]) -> Any:
        fields = {k: v for k, v in args.items() if v is not None}

        def path_value(m: re.Match[str]) -> str:
            v = fields.pop(m.group(1), None)
            if v is None or v == "":
                raise TypeError(f"{spec.op}: {m.group(1)} is required")
            return urllib.parse.quote(str(v), safe="")

        path = re.sub(r"\{(\w+)\}", path_value, spec.path)
        query = {}
        for name in spec.query:
            v = fields.pop(name, None)
            if v is not None and v != "":
                query[name] = _param(v)
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json"}
        for name, header in spec.headers.items():
            v = fields.pop(name, None)
            if v is not None and v != "":
                headers[header] = _param(v)
        if self.owner:
            headers["Hookd-Owner"] = self.owner
        if spec.op == "events.publish" and "Idempotency-Key" not in headers:
            # A retried publish must not publish twice, even when the answer
            # lost was a proxy's 503 after hookd committed.
            headers["Idempotency-Key"] = _new_key()
        if spec.op == "events.publish_batch" and isinstance(fields.get("events"), list):
            fields["events"] = [e if e.get("idempotency_key") else {**e, "idempotency_key": _new_key()} for e in fields["events"]]
        body = None
        if spec.body:
            body = json.dumps(fields).encode()
            headers["Content-Type"] = "application/json"
        return self._send(spec, url, headers, body)

    def _send(self, spec: OpSpec, url: str, headers: dict[str, str], body: Optional[bytes]) -> Any:
        wait = self.retry.backoff
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=body, headers=headers, method=spec.method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                    if resp.status == 204 or not raw:
                        return None
                    return json.loads(raw)
            except urllib.error.HTTPError as e:
                with e:
                    err = error_of(spec.op, e.code, e.headers.get("Retry-After"), e.read())
            if err.status not in (429, 503) or attempt >= self.retry.attempts:
                raise err
            delay = err.retry_after if err.retry_after is not None else wait
            if delay > self.retry.max_wait:
                raise err
            wait *= 2
            attempt += 1
            self._sleep(delay)


def _param(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _new_key() -> str:
    """A random idempotency key."""
    return "idem_" + secrets.token_hex(16)


__all__ = ["Client", "Retry", "HookdError"]
