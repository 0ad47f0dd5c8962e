/**
 * Redis Cluster hash slots, computed as the cluster does: CRC16/XMODEM of the key's
 * hash tag (the text between the first `{` and the next `}`, when non-empty) or of
 * the whole key, mod 16384. A script runs on ONE node, so every key it touches must
 * share one slot (CROSSSLOT otherwise): give keys used together one hash tag.
 * Computing it here lets a cross-slot call fail in tests on a single Redis, long
 * before a cluster sees it, and lets a resolver group keys by slot.
 *
 * @example
 * keySlot("foo");                                         // 12182
 * keySlot("{user1000}.following") === keySlot("{user1000}.followers"); // true
 */

/** Number of hash slots in a Redis Cluster. */
export const SLOT_COUNT = 16_384;

// CRC16/XMODEM (poly 0x1021, init 0, no reflection): the variant the Redis Cluster spec names.
const CRC16_TABLE: Uint16Array = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

const encoder = new TextEncoder();

/**
 * CRC16/XMODEM of `bytes`.
 *
 * @example
 * crc16Xmodem(new TextEncoder().encode("123456789")); // 0x31c3
 */
export function crc16Xmodem(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/**
 * The part of `key` Redis hashes: the first non-empty `{…}` tag, else the whole key.
 *
 * @example
 * hashTag("rl:{user:42}:a"); // "user:42"
 * hashTag("rl:{}:a");        // "rl:{}:a" (an empty tag does not count)
 */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/**
 * The cluster slot (0..16383) of `key`.
 *
 * @example
 * keySlot("rl:{user:42}:per-route") === keySlot("user:42"); // true
 */
export function keySlot(key: string): number {
  const tag = hashTag(key);
  // Hot path (every rate-limit decision): ASCII keys hash char codes directly, no byte array.
  let crc = 0;
  for (let i = 0; i < tag.length; i++) {
    const code = tag.charCodeAt(i);
    if (code > 0x7f) return crc16Xmodem(encoder.encode(tag)) % SLOT_COUNT;
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ code) & 0xff]!;
  }
  return crc % SLOT_COUNT;
}

/**
 * True when all `keys` share one slot (vacuously true for zero or one key).
 *
 * @example
 * sameSlot(["{u1}:a", "{u1}:b"]); // true
 */
export function sameSlot(keys: readonly string[]): boolean {
  if (keys.length < 2) return true;
  const first = keySlot(keys[0]!);
  return keys.every((key) => keySlot(key) === first);
}
