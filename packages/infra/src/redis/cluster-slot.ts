/**
 * Redis Cluster key slots. A script runs on ONE node, so every key it touches must
 * live in one slot; Redis Cluster refuses the call otherwise (CROSSSLOT). Give keys
 * that a script uses together one hash tag: `rl:{tenant42}:tokens` and
 * `rl:{tenant42}:stamp` both hash only `tenant42`. The slot is computed here, as the
 * cluster does (CRC16/XMODEM of the tag or the whole key, mod 16384), so a
 * cross-slot call fails in tests on a single Redis, long before a cluster sees it.
 *
 * @example
 * keySlot("{user1}:a") === keySlot("{user1}:b"); // true
 */

const SLOT_COUNT = 16_384;

/** CRC16/XMODEM table (polynomial 0x1021), the checksum Redis Cluster uses. */
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** The part of `key` that decides its slot: the first non-empty `{…}` tag, else the whole key. */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The cluster slot (0–16383) of `key`. */
export function keySlot(key: string): number {
  return crc16(new TextEncoder().encode(hashTag(key))) % SLOT_COUNT;
}

/** True when all `keys` share one slot (vacuously true for zero or one key). */
export function sameSlot(keys: readonly string[]): boolean {
  if (keys.length < 2) return true;
  const first = keySlot(keys[0]!);
  return keys.every((key) => keySlot(key) === first);
}
