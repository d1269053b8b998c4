/**
 * Delivery control: a receiver tells hookd what to do next with the
 * `webhook-delivery` header on its answer (the Standard Webhooks proposal,
 * spec PR #291).
 *
 * - `disable`: hookd disables the endpoint ("the receiver asked to stop") and
 *   notifies its owner (`hookd.endpoint.disabled`); nothing more is sent until
 *   the owner enables it again.
 * - `abort-message`: hookd ends this delivery now, without further attempts,
 *   whatever the status.
 *
 * Any other value is ignored by hookd.
 */
export const DELIVERY_CONTROL_HEADER = 'webhook-delivery';

/** The values of `webhook-delivery` hookd acts on. */
export type DeliveryControl = 'disable' | 'abort-message';

/** Something whose headers can be set: a fetch `Headers`, or Node's `ServerResponse`. */
export type SettableHeaders = { set(name: string, value: string): unknown } | { setHeader(name: string, value: string): unknown };

function setControl(target: SettableHeaders, value: DeliveryControl): void {
  if (typeof (target as { set?: unknown }).set === 'function') {
    (target as { set(name: string, value: string): unknown }).set(DELIVERY_CONTROL_HEADER, value);
    return;
  }
  if (typeof (target as { setHeader?: unknown }).setHeader === 'function') {
    (target as { setHeader(name: string, value: string): unknown }).setHeader(DELIVERY_CONTROL_HEADER, value);
    return;
  }
  throw new TypeError('answerDisable/answerAbortMessage need a Headers (set) or a Node ServerResponse (setHeader)');
}

/**
 * Ask hookd to disable the endpoint this delivery came to. Call it before the
 * answer's headers are sent:
 *
 *     answerDisable(res); res.statusCode = 410; res.end();
 *     return new Response(null, { status: 410, headers: answerDisable(new Headers()) });
 */
export function answerDisable<T extends SettableHeaders>(target: T): T {
  setControl(target, 'disable');
  return target;
}

/** Ask hookd to end this delivery without another attempt (see answerDisable). */
export function answerAbortMessage<T extends SettableHeaders>(target: T): T {
  setControl(target, 'abort-message');
  return target;
}
