"""The Python client against a real hookd serve (see harness.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
import typing
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import hookd  # noqa: E402
from harness import Hookd, Proxy, Receiver, hookd_binary  # noqa: E402


class ClientTest(unittest.TestCase):
    server: Hookd
    receiver: Receiver
    proxy: Proxy
    client: hookd.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Hookd(hookd_binary())
        cls.receiver = Receiver()
        cls.proxy = Proxy(cls.server.url)
        cls.client = hookd.Client(cls.server.url, cls.server.key)
        cls.client.event_types.put(type="invoice.paid", exposure="webhook")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.close()
        cls.receiver.close()
        cls.server.stop()

    def setUp(self) -> None:
        self.proxy.seen.clear()
        self.proxy.throttle(0, "0")

    def test_every_op_of_the_served_document(self) -> None:
        with urllib.request.urlopen(self.server.url + "/openapi.json") as r:
            doc = json.load(r)
        served = sorted(o["operationId"] for ms in doc["paths"].values() for o in ms.values())
        self.assertEqual(sorted(hookd.OPERATIONS), served)

    def test_publish_and_list_deliveries(self) -> None:
        ep = self.client.webhooks.create(url=self.receiver.url + "/hook", event_types=["invoice.*"])
        self.assertTrue(ep["id"].startswith("ep_"))
        self.assertTrue(ep.get("secret", "").startswith("whsec_"))
        ev = self.client.events.publish(type="invoice.paid", subject="invoice://inv_1", data={"amount": 5})
        self.assertTrue(ev["id"].startswith("evt_"))
        body = self.receiver.got.get(timeout=30)
        self.assertEqual(body["id"], ev["id"])
        # The receiver has answered; hookd records the delivery right after.
        deadline = time.monotonic() + 10
        while True:
            data = self.client.webhooks.deliveries(id=ep["id"])["data"] or []
            if (data and data[0]["state"] == "delivered") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(len(data), 1)
        self.assertEqual(data[0]["event_id"], ev["id"])
        self.assertEqual(data[0]["state"], "delivered")
        self.assertNotIn("secret", self.client.webhooks.get(id=ep["id"]), "the secret is shown at creation only")

    def test_type_hints_resolve(self) -> None:
        for name in dir(hookd):
            obj = getattr(hookd, name)
            if isinstance(obj, type) and issubclass(obj, dict):
                typing.get_type_hints(obj)
        for group in vars(self.client).values():
            if not type(group).__name__.endswith("Ops"):
                continue
            for name in dir(group):
                if not name.startswith("_"):
                    typing.get_type_hints(getattr(group, name))

    def test_the_docs_example(self) -> None:
        """docs/clients.md's Python example, run against this hookd."""
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "clients.md")) as f:
            doc = f.read()
        code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)  # type: ignore[union-attr]
        code = code.replace("https://hookd.example.com", self.server.url).replace("https://shop.example.com", self.receiver.url)
        out = io.StringIO()
        os.environ["HOOKD_KEY"] = self.server.key
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/clients.md", "exec"), {})
        self.assertIn("keep this secret: whsec_", out.getvalue())
        self.assertIn("422 invalid", out.getvalue())

    def test_422_is_a_typed_error(self) -> None:
        before = self.client.webhooks.list()["data"] or []
        with self.assertRaises(hookd.HookdError) as cm:
            self.client.webhooks.create(url="ftp://example.com/x", event_types=["invoice.*"])
        e = cm.exception
        self.assertEqual((e.status, e.code, e.op), (422, "invalid", "webhooks.create"))
        self.assertIn("url", e.message.lower())
        self.assertEqual(len(self.client.webhooks.list()["data"] or []), len(before))
        with self.assertRaises(hookd.HookdError) as cm:
            self.client.events.get(id="evt_01J0000000000000000000000")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))

    def test_429_with_retry_after_is_retried(self) -> None:
        waits: list[float] = []

        def sleep(d: float) -> None:
            waits.append(d)
            time.sleep(d)

        c = hookd.Client(self.proxy.url, self.server.key, sleep=sleep)
        self.proxy.throttle(1, "1")
        ev = c.events.publish(type="invoice.paid", data={"n": 1})
        posts = [s for s in self.proxy.seen if s[0] == "POST"]
        self.assertEqual(len(posts), 2, "one 429, then the retry")
        self.assertTrue(posts[0][2], "the publish carries an idempotency key")
        self.assertEqual(posts[0][2], posts[1][2])
        self.assertEqual(waits, [1.0])
        self.assertEqual(self.client.events.get(id=ev["id"])["id"], ev["id"])

    def test_retry_after_over_max_wait_is_raised(self) -> None:
        c = hookd.Client(self.proxy.url, self.server.key, retry=hookd.Retry(max_wait=1))
        self.proxy.throttle(1, "120")
        with self.assertRaises(hookd.HookdError) as cm:
            c.events.publish(type="invoice.paid")
        self.assertEqual((cm.exception.status, cm.exception.retry_after), (429, 120.0))
        self.assertEqual(len(self.proxy.seen), 1)

    def test_503_with_retry_after_is_retried(self) -> None:
        c = hookd.Client(self.proxy.url, self.server.key)
        self.proxy.throttle(1, "0", 503)
        c.webhooks.list()
        self.assertEqual(len(self.proxy.seen), 2)

    def test_operator_with_owner(self) -> None:
        op = hookd.Client(self.server.url, self.server.new_key("--role", "operator"))
        with self.assertRaises(hookd.HookdError) as cm:
            op.webhooks.list()
        self.assertEqual(cm.exception.code, "invalid")
        mine = [e["id"] for e in self.client.webhooks.list()["data"] or []]
        theirs = [e["id"] for e in op.with_owner("acme").webhooks.list()["data"] or []]
        self.assertEqual(theirs, mine)
        with self.assertRaises(hookd.HookdError) as cm:
            op.with_owner("nobody").webhooks.list()
        self.assertEqual(cm.exception.code, "not_found")

    def test_the_defaults(self) -> None:
        """3 retries; without Retry-After 0.5 s doubled; no wait over 30 s."""
        waits: list[float] = []
        c = hookd.Client(self.proxy.url, self.server.key, sleep=waits.append)
        self.proxy.throttle(5, "")
        with self.assertRaises(hookd.HookdError):
            c.webhooks.list()
        self.assertEqual(waits, [0.5, 1.0, 2.0])
        self.assertEqual(len(self.proxy.seen), 4)
        self.proxy.seen.clear()
        self.proxy.throttle(1, "31")
        with self.assertRaises(hookd.HookdError) as cm:
            c.webhooks.list()
        self.assertEqual((cm.exception.retry_after, len(self.proxy.seen)), (31.0, 1))

    def test_retries_are_bounded(self) -> None:
        c = hookd.Client(self.proxy.url, self.server.key, retry=hookd.Retry(attempts=2))
        self.proxy.throttle(5, "0")
        with self.assertRaises(hookd.HookdError) as cm:
            c.webhooks.list()
        self.assertEqual(cm.exception.status, 429)
        self.assertEqual(len(self.proxy.seen), 3, "the first try and 2 retries")

    def test_same_idempotency_key_publishes_once(self) -> None:
        a = self.client.events.publish(type="invoice.paid", idempotency_key="order-7")
        b = self.client.events.publish(type="invoice.paid", idempotency_key="order-7")
        self.assertEqual(a["id"], b["id"])
        self.assertTrue(b.get("duplicate"))


if __name__ == "__main__":
    unittest.main()
