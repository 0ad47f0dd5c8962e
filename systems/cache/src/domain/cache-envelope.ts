/**
 * What cache-aside stores under a key when it refreshes early (XFetch, CA-20) or serves
 * stale values (stale-while-revalidate): the value plus the two numbers those decisions
 * need and the store does not keep. δ (how long the load took) must travel with the value,
 * because the reader that decides is rarely the process that loaded; the logical expiry
 * must too, because the store's TTL is longer than freshness by the stale window.
 *
 * Text format `cx1:<deltaMs>:<freshUntilMs>:<payload>` (readable in redis-cli, binary safe:
 * the payload is everything after the third colon). A string without the prefix is a
 * plain value written by someone else: it decodes with no metadata, never as an error.
 *
 * @example
 * const stored = encodeEnvelope({ payload: '{"id":42}', deltaMs: 35, freshUntilMs: 1_700_000_300_000 });
 * decodeEnvelope(stored); // { payload: '{"id":42}', deltaMs: 35, freshUntilMs: 1700000300000 }
 * decodeEnvelope("plain"); // { payload: "plain", deltaMs: undefined, freshUntilMs: undefined }
 */

const PREFIX = "cx1:";

export interface CacheEnvelope {
  readonly payload: string;
  /** δ: milliseconds the load that produced `payload` took; undefined for a plain value. */
  readonly deltaMs: number | undefined;
  /** Epoch ms after which the value is stale (still served inside the stale window). */
  readonly freshUntilMs: number | undefined;
}

/** The stored text for a payload and its metadata. */
export function encodeEnvelope(envelope: { payload: string; deltaMs: number; freshUntilMs: number }): string {
  const deltaMs = Math.max(0, Math.round(envelope.deltaMs));
  return `${PREFIX}${deltaMs}:${Math.round(envelope.freshUntilMs)}:${envelope.payload}`;
}

/** The payload and metadata of a stored text; a text that is not an envelope is a plain payload. */
export function decodeEnvelope(stored: string): CacheEnvelope {
  if (!stored.startsWith(PREFIX)) return { payload: stored, deltaMs: undefined, freshUntilMs: undefined };
  const deltaEnd = stored.indexOf(":", PREFIX.length);
  const freshEnd = deltaEnd < 0 ? -1 : stored.indexOf(":", deltaEnd + 1);
  const deltaMs = Number(stored.slice(PREFIX.length, deltaEnd));
  const freshUntilMs = Number(stored.slice(deltaEnd + 1, freshEnd));
  if (freshEnd < 0 || !Number.isSafeInteger(deltaMs) || !Number.isSafeInteger(freshUntilMs)) {
    return { payload: stored, deltaMs: undefined, freshUntilMs: undefined };
  }
  return { payload: stored.slice(freshEnd + 1), deltaMs, freshUntilMs };
}
