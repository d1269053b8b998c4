// Types a consumer sees through the ESM entry ("import" condition).
import {
  type KworkEvent,
  type StandardEvent,
  type WebhookErrorCode,
  TimestampTooOldError,
  WebhookVerificationError,
  signKwork,
  signStandard,
  verifyStandard,
  webhooks,
} from '@hookd/webhooks';

type Installed = { version: string; scopes: string[] };

export async function kwork(rawBody: string | Uint8Array, header: string | undefined): Promise<string> {
  const event: KworkEvent<Installed> = await webhooks.verify<Installed>(rawBody, header, 's', 300, { now: new Date() });
  const scopes: string[] = event.data.scopes;
  const env: 'test' | 'live' = event.environment;
  const untyped = await webhooks.verify(rawBody, header, 's');
  // @ts-expect-error unknown data
  untyped.data.version;
  return `${event.id} ${event.type} ${event.createdAt} ${event.apiVersion} ${event.tenant} ${event.app} ${env} ${scopes.length}`;
}

export async function standard(req: Request): Promise<StandardEvent> {
  const body = await req.text();
  const event = await verifyStandard(body, req.headers, 'whsec_...', { tolerance: 300, now: 1_700_000_000 });
  const fromObject = await webhooks.verifyStandard(body, { 'Webhook-Id': 'x', 'webhook-signature': ['v1,a'] }, 'whsec_...');
  const s: string = event.subject + event.occurred_at + fromObject.type;
  void s;
  return event;
}

export async function errors(): Promise<WebhookErrorCode | undefined> {
  const header: string = await signKwork('s', 1, '{}');
  const std: string = await signStandard('whsec_AAAA', 'msg_1', '1', new Uint8Array());
  try {
    await webhooks.verify('{}', header + std, 's');
  } catch (err) {
    if (err instanceof TimestampTooOldError) {
      const code: 'timestamp_too_old' = err.code;
      return code;
    }
    if (err instanceof WebhookVerificationError) return err.code;
  }
  return undefined;
}

// @ts-expect-error the body must be raw, not parsed JSON
webhooks.verify({ id: 'evt' }, 't=1,v1=00', 's');
