import { MalformedHeaderError } from './errors.js';

/** Anything with a case-insensitive get(), such as a fetch `Headers`. */
export interface HeadersLike {
  get(name: string): string | null;
}

export type HeaderValue = string | readonly string[] | null | undefined;

/**
 * Request headers: a `Headers` instance, or a plain object with header names in
 * any case (for example Node's `req.headers`).
 */
export type WebhookHeaders = HeadersLike | { readonly [name: string]: HeaderValue };

/** Every value of one header (name matched case-insensitively); empty values dropped. */
export function headerValues(headers: WebhookHeaders, name: string): string[] {
  if (typeof headers !== 'object' || headers === null) throw new TypeError('headers must be an object or a Headers instance');
  if (typeof (headers as HeadersLike).get === 'function') {
    const value = (headers as HeadersLike).get(name);
    return typeof value === 'string' && value !== '' ? [value] : [];
  }
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers as { readonly [name: string]: HeaderValue })) {
    if (key.toLowerCase() !== wanted) continue;
    for (const one of typeof value === 'string' ? [value] : Array.isArray(value) ? value : []) {
      if (typeof one === 'string' && one !== '') values.push(one);
    }
  }
  return values;
}

/** The one value of a header given its values; several different values are malformed. */
export function singleValue(values: readonly string[], name: string): string {
  if (values.some((v) => v !== values[0])) throw new MalformedHeaderError(`${name}: more than one value`);
  return values[0]!;
}
