// Seed 002's TypeScript receiver example, verbatim except for the package name
// ('@21stware/raise-sdk' -> '@hookd/webhooks'). Type-checked against the built
// .d.ts files by test/types.test.mjs; never run (seed-receiver.test.mjs runs it).
import http from 'node:http';
import { webhooks } from '@hookd/webhooks';

const secret = process.env.WEBHOOK_SECRET || '${WEBHOOK_SECRET}';

const server = http.createServer(async (req, res) => {
  if (req.method === 'POST' && req.url === '/webhooks') {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    }
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const signature = req.headers['x-kwork-signature'] as string;

    try {
      const event = await webhooks.verify(rawBody, signature, secret, 300);
      console.log('接收到事件:', event.type, event.id);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ received: true }));
    } catch (err) {
      console.error('签名校验失败:', err);
      res.writeHead(401, { 'Content-Type': 'text/plain' });
      res.end('Invalid signature');
    }
  } else {
    res.writeHead(404).end();
  }
});

server.listen(3000);
