// Run with --no-experimental-global-webcrypto: Node 18's default (no
// globalThis.crypto). The package must fall back to node:crypto's webcrypto.
import { createRequire } from 'node:module';

if (globalThis.crypto !== undefined) {
  console.log('skip: globalThis.crypto is still defined');
  process.exit(3);
}
const esm = await import('@hookd/webhooks');
const cjs = createRequire(import.meta.url)('@hookd/webhooks');
for (const pkg of [esm, cjs]) {
  const header = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': header };
  const event = await pkg.verifyStandard('{"test": 2432232314}', headers, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { now: 1614265330 });
  if (event.test !== 2432232314) throw new Error('wrong event');
  const kwork = await pkg.signKwork('s', 5, '{}');
  await pkg.webhooks.verify('{}', kwork, 's', 300, { now: 5 });
}
console.log('ok');
