// Types a consumer sees through the CommonJS entry ("require" condition).
import { webhooks, MissingHeaderError, type KworkEvent } from '@hookd/webhooks';
import type { IncomingHttpHeaders } from 'node:http';

export async function handle(rawBody: Buffer, headers: IncomingHttpHeaders): Promise<KworkEvent | null> {
  try {
    return await webhooks.verify(rawBody, headers['x-kwork-signature'] as string | undefined, 's');
  } catch (err) {
    if (err instanceof MissingHeaderError) return null;
    throw err;
  }
}

export async function handleStandard(rawBody: Buffer, headers: IncomingHttpHeaders) {
  const event = await webhooks.verifyStandard(rawBody, headers, 'whsec_AAAA');
  return event.id;
}
