/**
 * Redis Cluster hash slots, computed the way the cluster does (CRC16/XMODEM of the
 * key, or of its hash tag, mod 16384), so the resolver can group the limits of one
 * request by slot and send each group as ONE atomic script call (RL-08, RL-10).
 *
 * @example
 * keySlot("foo");                      // 12182
 * keySlot("rl:{user:42}:per-route");   // same slot as keySlot("user:42")
 */

/** Number of hash slots in a Redis Cluster. */
export const SLOT_COUNT = 16_384;

const encoder = new TextEncoder();

// CRC16/XMODEM (poly 0x1021, init 0, no reflection): the variant the Redis Cluster spec names.
const CRC16_TABLE: Uint16Array = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    table[byte] = crc;
  }
  return table;
})();

/**
 * CRC16/XMODEM of `bytes`.
 *
 * @example
 * crc16Xmodem(new TextEncoder().encode("123456789")); // 0x31c3
 */
export function crc16Xmodem(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  }
  return crc;
}

/**
 * The part of `key` that Redis hashes: the text between the first `{` and the next `}`
 * when that text is non-empty, otherwise the whole key (the cluster spec's rule).
 *
 * @example
 * hashTagOf("rl:{user:42}:a"); // "user:42"
 * hashTagOf("rl:{}:a");        // "rl:{}:a" (an empty tag does not count)
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/**
 * The cluster slot of `key` (0..16383); keys with the same hash tag share a slot.
 *
 * @example
 * keySlot("{user1000}.following") === keySlot("{user1000}.followers"); // true
 */
export function keySlot(key: string): number {
  const tag = hashTagOf(key);
  // Hot path (every request): ASCII keys hash char codes directly, no byte array.
  let crc = 0;
  for (let i = 0; i < tag.length; i++) {
    const code = tag.charCodeAt(i);
    if (code > 0x7f) return crc16Xmodem(encoder.encode(tag)) % SLOT_COUNT;
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ code) & 0xff]!;
  }
  return crc % SLOT_COUNT;
}
