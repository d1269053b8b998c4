// A browser-like global scope: no Buffer, no require. Only WebCrypto,
// TextEncoder/TextDecoder and the language itself.
// (Node's own fetch Headers needs Buffer to load, so it is made first.)
const headers = new Headers({
  'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  'webhook-timestamp': '1614265330',
  'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
});
delete globalThis.Buffer;
if (typeof Buffer !== 'undefined') throw new Error('Buffer still defined');
const { verifyStandard, webhooks, signKwork, signStandard } = await import('@hookd/webhooks');
const event = await verifyStandard('{"test": 2432232314}', headers, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { now: 1614265330 });
if (event.test !== 2432232314) throw new Error('wrong event');
if ((await signStandard('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')) !== headers.get('webhook-signature')) {
  throw new Error('signStandard differs');
}
const body = new TextEncoder().encode('{"id":"evt_1","note":"日本"}');
await webhooks.verify(body, await signKwork('s', 7, body), 's', 300, { now: 7 });
console.log('ok');
