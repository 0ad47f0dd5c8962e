/**
 * Values as bytes off the V8 heap (issue 15): slab chunks of CHUNK_BYTES carved into size
 * classes, like jemalloc's small size classes (16-byte steps to 128, then four classes per
 * doubling up to 16 KiB); a value above the largest class gets a chunk of its own, freed with it.
 * A freed slot goes on its class's free list and the next value of that class reuses it.
 *
 * Why: one JS string per value costs a header (16 B) and lives in V8's old space, where an
 * overwritten value is garbage until the next major GC and the heap grows to about twice
 * what is live before collecting (see the README's memory section). Bytes in ArrayBuffers are
 * outside the GC's reach: an overwrite copies into a slot and frees the old one at once.
 *
 * A value's reference is one uint32: chunk index << 16 | slot offset / 16 (chunks are 1 MiB,
 * so 65,536 slots of 16 B address one; 65,536 chunks address 64 GiB). Keys and values are
 * latin1 strings (one char per byte), so a write is `latin1Write` and a read `latin1Slice`.
 *
 * @example
 * const arena = new ValueArena();
 * const ref = arena.store("hello");   // 16-byte slot of class 0
 * arena.read(ref, 5);                 // "hello"
 * arena.free(ref, 5);                 // the slot is reused by the next value of ≤ 16 B
 */

/** Slab chunk size; also the address unit: slot offsets are 16-byte units within one chunk. */
export const CHUNK_BYTES = 1 << 20;
const ALIGN_SHIFT = 4;
const OFFSET_BITS = 16;
const MAX_CHUNKS = 1 << 16;
/** What the arena can address: 65,536 chunks of 1 MiB (a large value's own chunk counts as one). */
export const ARENA_MAX_BYTES = MAX_CHUNKS * CHUNK_BYTES;

/** Size classes: 16..128 in steps of 16, then 4 per doubling (160, 192, 224, 256, 320, …) to 16 KiB. */
export const SIZE_CLASSES: readonly number[] = (() => {
  const classes: number[] = [];
  for (let size = 16; size <= 128; size += 16) classes.push(size);
  for (let base = 128; base < 16_384; base *= 2)
    for (let step = 1; step <= 4; step++) classes.push(base + (base / 4) * step);
  return classes;
})();
/** Values above this get a chunk of their own. */
export const LARGEST_CLASS = SIZE_CLASSES[SIZE_CLASSES.length - 1]!;

/** Class index of `bytes` (−1: larger than every class, a chunk of its own). */
function classOf(bytes: number): number {
  if (bytes <= 128) return bytes <= 16 ? 0 : ((bytes + 15) >> 4) - 1;
  if (bytes > LARGEST_CLASS) return -1;
  // Bounded: at most 4 classes per doubling up to 16 KiB.
  let index = 7;
  while (SIZE_CLASSES[index]! < bytes) index += 1;
  return index;
}

/** Bytes the arena holds for a value of `bytes` (its slot: class size, or the value rounded to 16). */
export function slotBytes(bytes: number): number {
  const index = classOf(bytes);
  return index >= 0 ? SIZE_CLASSES[index]! : Math.ceil(bytes / 16) * 16;
}

/** A growable stack of uint32 (a class's free slots). */
class RefStack {
  #items = new Uint32Array(64);
  size = 0;

  push(ref: number): void {
    if (this.size === this.#items.length) {
      const grown = new Uint32Array(this.#items.length * 2);
      grown.set(this.#items);
      this.#items = grown;
    }
    this.#items[this.size++] = ref;
  }

  pop(): number {
    return this.#items[--this.size]!;
  }
}

export class ValueArena {
  #chunks: Array<Buffer | undefined> = [];
  /** Chunk indexes freed by large values, reused before new ones. */
  #freeChunks: number[] = [];
  #free: RefStack[] = SIZE_CLASSES.map(() => new RefStack());
  /** Per class, the chunk being carved and the next unused offset in it (−1: none yet). */
  #carveChunk = new Int32Array(SIZE_CLASSES.length).fill(-1);
  #carveOffset = new Int32Array(SIZE_CLASSES.length);
  #reservedBytes = 0;

  /** Bytes of chunks held (what the arena costs the process, free slots included). */
  get reservedBytes(): number {
    return this.#reservedBytes;
  }

  /** Copies `value` into a slot; returns its reference. */
  store(value: string): number {
    const ref = this.#alloc(value.length);
    this.overwrite(ref, value);
    return ref;
  }

  /** Writes `value` into the slot `ref`, which must be of `slotBytes(value.length)`. */
  overwrite(ref: number, value: string): void {
    this.#chunks[ref >>> OFFSET_BITS]!.write(value, (ref & 0xffff) << ALIGN_SHIFT, value.length, "latin1");
  }

  /** Whether the bytes at `ref` are `text`'s latin1 chars (the caller checked the length). */
  equals(ref: number, text: string): boolean {
    const chunk = this.#chunks[ref >>> OFFSET_BITS]!;
    const start = (ref & 0xffff) << ALIGN_SHIFT;
    for (let i = 0; i < text.length; i++) if (chunk[start + i] !== text.charCodeAt(i)) return false;
    return true;
  }

  read(ref: number, length: number): string {
    const start = (ref & 0xffff) << ALIGN_SHIFT;
    return this.#chunks[ref >>> OFFSET_BITS]!.toString("latin1", start, start + length);
  }

  /** Releases the slot `store` returned for a value of `length` bytes. */
  free(ref: number, length: number): void {
    const index = classOf(length);
    if (index >= 0) {
      this.#free[index]!.push(ref);
      return;
    }
    const chunkIndex = ref >>> OFFSET_BITS;
    this.#reservedBytes -= this.#chunks[chunkIndex]!.length;
    this.#chunks[chunkIndex] = undefined;
    this.#freeChunks.push(chunkIndex);
  }

  /** Drops every chunk (FLUSHALL). */
  clear(): void {
    this.#chunks = [];
    this.#freeChunks = [];
    this.#free = SIZE_CLASSES.map(() => new RefStack());
    this.#carveChunk.fill(-1);
    this.#carveOffset.fill(0);
    this.#reservedBytes = 0;
  }

  #alloc(length: number): number {
    const index = classOf(length);
    if (index < 0) return this.#newChunk(slotBytes(length)) << OFFSET_BITS;
    const free = this.#free[index]!;
    if (free.size > 0) return free.pop();
    const size = SIZE_CLASSES[index]!;
    let chunk = this.#carveChunk[index]!;
    if (chunk < 0 || this.#carveOffset[index]! + size > CHUNK_BYTES) {
      chunk = this.#newChunk(CHUNK_BYTES);
      this.#carveChunk[index] = chunk;
      this.#carveOffset[index] = 0;
    }
    const offset = this.#carveOffset[index]!;
    this.#carveOffset[index] = offset + size;
    return (chunk << OFFSET_BITS) | (offset >> ALIGN_SHIFT);
  }

  #newChunk(bytes: number): number {
    const index = this.#freeChunks.pop() ?? this.#chunks.length;
    if (index >= MAX_CHUNKS) throw new RangeError(`value arena full: ${MAX_CHUNKS} chunks`);
    // allocUnsafeSlow: its own ArrayBuffer (not Node's shared pool), pages touched only when written.
    this.#chunks[index] = Buffer.allocUnsafeSlow(bytes);
    this.#reservedBytes += bytes;
    return index;
  }
}
