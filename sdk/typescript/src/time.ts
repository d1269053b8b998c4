import { MalformedHeaderError, TimestampTooNewError, TimestampTooOldError } from './errors.js';

/** "Now" for a verification: unix seconds, or a Date. Defaults to the wall clock. */
export type Clock = number | Date;

export const DEFAULT_TOLERANCE_SECONDS = 300;

export function nowSeconds(now: Clock | undefined): number {
  if (now === undefined) return Math.floor(Date.now() / 1000);
  if (typeof now === 'number') {
    if (Number.isFinite(now)) return now;
  } else if (now instanceof Date) {
    const ms = now.getTime();
    if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  }
  throw new TypeError('now must be unix seconds (a finite number) or a valid Date');
}

export function checkToleranceArgument(tolerance: number): void {
  if (typeof tolerance !== 'number' || Number.isNaN(tolerance) || tolerance < 0) {
    throw new TypeError('tolerance must be a number of seconds >= 0');
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Parses a unix-seconds timestamp the way Go's strconv.ParseInt(s, 10, 64) does
 * (the seed's reference and the official Standard Webhooks library): an
 * optional sign and decimal digits, within int64. Anything else is malformed.
 */
export function parseTimestamp(raw: string, header: string): number {
  if (/^[+-]?[0-9]+$/.test(raw)) {
    const value = BigInt(raw);
    if (value >= INT64_MIN && value <= INT64_MAX) return Number(value);
  }
  throw new MalformedHeaderError(`${header}: timestamp is not an integer number of unix seconds`);
}

/** Too old if now - ts > tolerance; too new if ts - now > tolerance; the edges pass. */
export function checkTolerance(timestamp: number, now: number, tolerance: number): void {
  if (now - timestamp > tolerance) {
    throw new TimestampTooOldError(`timestamp is ${now - timestamp}s old; tolerance is ${tolerance}s`);
  }
  if (timestamp - now > tolerance) {
    throw new TimestampTooNewError(`timestamp is ${timestamp - now}s in the future; tolerance is ${tolerance}s`);
  }
}
