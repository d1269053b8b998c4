// A browser / edge consumer: DOM lib, no Node types, bundler resolution.
import { webhooks, WebhookVerificationError } from '@hookd/webhooks';

export async function onRequest(request: Request): Promise<Response> {
  const body = new Uint8Array(await request.arrayBuffer());
  try {
    const event = await webhooks.verifyStandard(body, request.headers, 'whsec_AAAA');
    return new Response(event.id);
  } catch (err) {
    if (err instanceof WebhookVerificationError) return new Response(err.code, { status: 401 });
    throw err;
  }
}

export async function onKwork(request: Request): Promise<string> {
  const event = await webhooks.verify(await request.text(), request.headers.get('X-Kwork-Signature'), 'secret');
  return event.type;
}
