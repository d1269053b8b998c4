"""A real hookd for the tests: `hookd serve` on loopback with SQLite in a
temporary directory, an admin key made by `hookd apikey create`, a receiver
that reports each delivery, and a proxy in front of hookd that can answer
429 before passing requests on. HOOKD_BIN names the binary (make
test-clients builds it); without it the tests skip, except under CI=true,
where they fail."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional


def hookd_binary() -> str:
    bin_ = os.environ.get("HOOKD_BIN", "")
    if not bin_:
        if os.environ.get("CI") == "true":
            raise RuntimeError("HOOKD_BIN is not set: make test-clients builds hookd and sets it")
        raise unittest.SkipTest("HOOKD_BIN not set: run make test-clients")
    return bin_


class Hookd:
    def __init__(self, bin_: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="hookd-client-py-")
        db = os.path.join(self.dir, "hookd.db")
        self.bin, self.db = bin_, db
        self.key = self.new_key("--owner", "acme")
        self.log = open(os.path.join(self.dir, "hookd.log"), "w")
        self.proc = subprocess.Popen([bin_, "serve", "--db", db, "--addr", "127.0.0.1:0", "--egress-allow", "127.0.0.1/32"],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        assert self.proc.stdout is not None
        self.reader: Optional[threading.Thread] = None
        self.url = ""
        for line in self.proc.stdout:
            m = re.match(r"hookd listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            self.stop()
            raise RuntimeError("hookd exited at start")
        # keep reading stdout so hookd never blocks on a full pipe
        self.reader = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self.reader.start()

    def new_key(self, *args: str) -> str:
        """Runs hookd apikey create with args and returns the key."""
        out = subprocess.run([self.bin, "apikey", "create", "--db", self.db, *args],
                             check=True, capture_output=True, text=True).stdout
        return out.strip().splitlines()[-1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        if self.reader is not None:
            self.reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Receiver(_Server):
    """Answers 200 to every POST; got holds each body."""

    def __init__(self) -> None:
        self.got: queue.Queue[dict[str, Any]] = queue.Queue()
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                got.put(json.loads(body))

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)


class Proxy(_Server):
    """Passes requests to target; throttle(n, retry_after, status) answers the
    next n status (default 429) with that Retry-After. seen lists (method,
    path, Idempotency-Key)."""

    def __init__(self, target: str) -> None:
        self.seen: list[tuple[str, str, Optional[str]]] = []
        self.throttled = 0
        self.retry_after = "1"
        self.status = 429
        host, port = target.removeprefix("http://").split(":")
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                proxy.seen.append((self.command, self.path, self.headers.get("Idempotency-Key")))
                if proxy.throttled > 0:
                    proxy.throttled -= 1
                    self.send_response(proxy.status)
                    if proxy.retry_after:
                        self.send_header("Retry-After", proxy.retry_after)
                    self.send_header("Content-Length", "9")
                    self.end_headers()
                    self.wfile.write(b"slow down")
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding", "date"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)

    def throttle(self, n: int, retry_after: str, status: int = 429) -> None:
        self.throttled, self.retry_after, self.status = n, retry_after, status
