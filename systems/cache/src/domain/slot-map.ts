/**
 * The cluster client's slot map (CA-05, CA-06): which node serves each of the 16,384 hash
 * slots, so a key goes straight to its owner in one hop. Built from `CLUSTER SLOTS`
 * (ranges with their primary and replicas), patched one slot at a time by `-MOVED`
 * (the map is a cache of the cluster's truth and MOVED is its invalidation), and rebuilt
 * wholesale on a refresh. One Uint16 per slot indexes a table of addresses: 32 KB, and a
 * lookup is one array read after the CRC16.
 *
 * Keys hash as the cluster hashes bytes: UTF-8 for text keys, or latin1 when each char of
 * the string already is one byte (a proxy relaying binary keys).
 *
 * @example
 * const map = SlotMap.fromRanges(parseClusterSlots(reply, "127.0.0.1"));
 * map.ownerOf(slotOfKey("event:42"));  // "127.0.0.1:7001"
 * map.assign(9001, "127.0.0.1:7002");   // after -MOVED 9001 127.0.0.1:7002
 * map.replicasOf(9001);                 // the replicas CLUSTER SLOTS listed for that primary
 */
import { crc16Xmodem, hashTag, keySlot, SLOT_COUNT } from "@casebook/kit/cluster-slot";

export type KeyEncoding = "utf8" | "latin1";

/** An inclusive slot range and who serves it. */
export interface SlotRangeOwner {
  readonly first: number;
  readonly last: number;
  /** `host:port` of the primary. */
  readonly primary: string;
  readonly replicas: readonly string[];
}

/**
 * The slot of `key` for a string in `encoding`.
 *
 * @example
 * slotOfKey("123456789"); // 0x31c3 % 16384 = 12739
 */
export function slotOfKey(key: string, encoding: KeyEncoding = "utf8"): number {
  if (encoding === "utf8") return keySlot(key);
  const tag = hashTag(key);
  const bytes = new Uint8Array(tag.length);
  for (let i = 0; i < tag.length; i++) bytes[i] = tag.charCodeAt(i) & 0xff;
  return crc16Xmodem(bytes) % SLOT_COUNT;
}

function nodeAddress(entry: unknown, replyingHost: string): string | undefined {
  if (!Array.isArray(entry) || entry.length < 2) return undefined;
  const [host, port] = entry as unknown[];
  if (typeof host !== "string" || typeof port !== "number") return undefined;
  // "" (and "?" for an unknown endpoint) means: the host of the node that answered.
  const resolved = host === "" || host === "?" ? replyingHost : host;
  return `${resolved}:${port}`;
}

/**
 * The ranges of a `CLUSTER SLOTS` reply; entries that do not have the documented shape
 * are skipped (a node never sends them; a partial map is refreshed again later).
 *
 * @example
 * parseClusterSlots([[0, 5460, ["127.0.0.1", 7000, "id-a"]]], "127.0.0.1");
 * // [{ first: 0, last: 5460, primary: "127.0.0.1:7000", replicas: [] }]
 */
export function parseClusterSlots(reply: unknown, replyingHost: string): SlotRangeOwner[] {
  if (!Array.isArray(reply)) return [];
  const ranges: SlotRangeOwner[] = [];
  for (const entry of reply as unknown[]) {
    if (!Array.isArray(entry) || entry.length < 3) continue;
    const [first, last, primaryEntry, ...replicaEntries] = entry as unknown[];
    const primary = nodeAddress(primaryEntry, replyingHost);
    const valid =
      Number.isInteger(first) &&
      Number.isInteger(last) &&
      (first as number) >= 0 &&
      (first as number) <= (last as number) &&
      (last as number) < SLOT_COUNT;
    if (!valid || primary === undefined) continue;
    const replicas = replicaEntries
      .map((replica) => nodeAddress(replica, replyingHost))
      .filter((address): address is string => address !== undefined);
    ranges.push({ first: first as number, last: last as number, primary, replicas });
  }
  return ranges;
}

export class SlotMap {
  /** Index + 1 into #addresses per slot; 0 = no known owner. */
  readonly #owners = new Uint16Array(SLOT_COUNT);
  readonly #addresses: string[] = [];
  readonly #indexOf = new Map<string, number>();
  readonly #replicas = new Map<string, readonly string[]>();

  /** A map of the primaries of `ranges` and their replicas; slots not covered have no owner. */
  static fromRanges(ranges: readonly SlotRangeOwner[]): SlotMap {
    const map = new SlotMap();
    for (const range of ranges) {
      const index = map.#index(range.primary);
      map.#owners.fill(index, range.first, range.last + 1);
      if (range.replicas.length > 0) map.#replicas.set(range.primary, range.replicas);
    }
    return map;
  }

  /** Replicas of the primary serving `slot` (empty when unknown, e.g. right after a MOVED to a new node). */
  replicasOf(slot: number): readonly string[] {
    const owner = this.ownerOf(slot);
    return owner === undefined ? [] : (this.#replicas.get(owner) ?? []);
  }

  /** Every address the map has named, in the order first seen (MOVED targets included). */
  get addresses(): readonly string[] {
    return this.#addresses;
  }

  /** Slots with a known owner (16,384 when the map covers the whole cluster). */
  get coveredSlots(): number {
    let covered = 0;
    for (const owner of this.#owners) if (owner !== 0) covered += 1;
    return covered;
  }

  /** `host:port` serving `slot`, or undefined when the map does not know. */
  ownerOf(slot: number): string | undefined {
    const index = this.#owners[slot];
    return index === undefined || index === 0 ? undefined : this.#addresses[index - 1];
  }

  /** Records that `slot` is served by `address` (a -MOVED). */
  assign(slot: number, address: string): void {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < SLOT_COUNT)) {
      throw new RangeError(`slot must be an integer in [0, ${SLOT_COUNT - 1}], got ${slot}`);
    }
    this.#owners[slot] = this.#index(address);
  }

  #index(address: string): number {
    let index = this.#indexOf.get(address);
    if (index === undefined) {
      // 16,384 slots can name at most 16,384 distinct owners, far inside a Uint16.
      this.#addresses.push(address);
      index = this.#addresses.length;
      this.#indexOf.set(address, index);
    }
    return index;
  }
}
