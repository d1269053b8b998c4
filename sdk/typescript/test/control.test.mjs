// answerDisable / answerAbortMessage: the webhook-delivery header hookd reads
// on a receiver's answer, on a fetch Headers and on a Node ServerResponse.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { DELIVERY_CONTROL_HEADER, answerAbortMessage, answerDisable } from '@hookd/webhooks';

describe('delivery control', () => {
  test('sets webhook-delivery on a fetch Headers', () => {
    assert.equal(DELIVERY_CONTROL_HEADER, 'webhook-delivery');
    assert.equal(answerDisable(new Headers()).get('webhook-delivery'), 'disable');
    assert.equal(answerAbortMessage(new Headers()).get('webhook-delivery'), 'abort-message');
  });

  test('sets webhook-delivery on a Node answer, as the client sees it', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/stop') answerDisable(res);
      else answerAbortMessage(res);
      res.statusCode = 410;
      res.end();
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${server.address().port}`;
      assert.equal((await fetch(`${base}/stop`)).headers.get('webhook-delivery'), 'disable');
      assert.equal((await fetch(`${base}/abort`)).headers.get('webhook-delivery'), 'abort-message');
    } finally {
      server.close();
    }
  });

  test('refuses something without headers', () => {
    assert.throws(() => answerDisable({}), TypeError);
  });
});
