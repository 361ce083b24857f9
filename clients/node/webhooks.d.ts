// Types of src/webhooks.js: verifying webhook deliveries (docs/WEBHOOKS.md).

/** How far a delivery's timestamp may be from the clock, seconds. */
export const DEFAULT_TOLERANCE: number;

/** A delivery that is not the referee's, or not as sent. */
export class WebhookVerificationError extends Error {}

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

/** The `v1,` signature of a delivery. */
export function sign(
  secret: string | Buffer,
  id: string,
  timestamp: number,
  body: string | Uint8Array,
): string;

/** Checks a delivery (raw body) and returns its parsed JSON body; throws WebhookVerificationError. */
export function verifyDelivery(
  secret: string | Buffer,
  headers: HeaderBag,
  body: string | Uint8Array,
  options?: { tolerance?: number; now?: number },
): unknown;
