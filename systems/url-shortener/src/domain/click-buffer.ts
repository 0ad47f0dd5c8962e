/**
 * The bounded buffer between the redirect and the click store (US-15): `record` is an O(1)
 * append to a ring of columns (one array per field, no object per visit) and returns at once —
 * or, when `maxEntries` are waiting, drops the visit and counts it, so a slow or dead store
 * never slows a redirect and never grows memory. A visit equal to the newest entry in every
 * field, within the same UTC second, is folded into it (its count + 1) instead of taking a
 * slot — the click log folds such clicks into one row anyway (click-record.ts ClickEncoder), and
 * this way a client hammering one link costs the flusher, the encoder's thread and the store
 * one entry a second, not one per click (issue 18). A folded click is never dropped. The flusher takes batches of at most
 * `maxBatch` from the front (the Visit objects are made there, off the redirect path); a batch
 * the store refused can be put back at the front while there is room (what does not fit is
 * dropped and counted).
 *
 * Memory: the columns grow with use up to `maxEntries` entries and are then reused in place; a
 * user-agent or referrer longer than its bound is copied short (a slice would keep the whole
 * header alive: V8's sliced strings point into their parent), so one waiting visit holds at
 * most ~1.6 kB of strings.
 *
 * @example
 * const buffer = new ClickBuffer({ maxEntries: 100_000 });
 * buffer.record(atMs, domain, code, 302, referrer, userAgent, ip); // the redirect's whole cost
 * const batch = buffer.take(5_000);                                 // the flusher
 */
import type { Visit, VisitSink } from "./visit.ts";

/** Longest user-agent and referrer kept: a 16 kB header must not cost 16 kB of buffer. */
export const MAX_UA_CHARS = 256;
export const MAX_REFERRER_CHARS = 512;

/** `text` cut to `max` characters as a string of its own (rare: only over-long headers pay the copy). */
function bounded(text: string | undefined, max: number): string | undefined {
  if (text === undefined || text.length <= max) return text;
  return Buffer.from(text.slice(0, max), "utf16le").toString("utf16le");
}

export class ClickBuffer implements VisitSink {
  readonly maxEntries: number;
  // The ring: slot i holds one visit across the columns; #head is the oldest, #size are waiting.
  readonly #atMs: number[] = [];
  readonly #status: number[] = [];
  readonly #domain: string[] = [];
  readonly #code: string[] = [];
  readonly #referrer: (string | undefined)[] = [];
  readonly #userAgent: (string | undefined)[] = [];
  readonly #ip: string[] = [];
  /** Clicks each entry stands for (≥ 1: folded repeats of the same visit). */
  readonly #count: number[] = [];
  #head = 0;
  /** Entries waiting (the bound is on these). */
  #size = 0;
  /** Clicks waiting: the entries' counts summed. */
  #clicks = 0;
  #dropped = 0;
  #recorded = 0;

  readonly #onDrop: ((count: number) => void) | undefined;

  /** `onDrop`: told of every visit dropped (a metric); called on the redirect path, so it must be cheap. */
  constructor(options: { maxEntries: number; onDrop?: (count: number) => void }) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new RangeError(`maxEntries ${options.maxEntries} must be an integer >= 1`);
    }
    this.maxEntries = options.maxEntries;
    this.#onDrop = options.onDrop;
  }

  /** Clicks waiting (an entry may stand for several). */
  get size(): number {
    return this.#clicks;
  }

  /** Entries waiting: what `maxEntries` bounds. */
  get entries(): number {
    return this.#size;
  }

  /** In clicks. */
  get stats() {
    return { recorded: this.#recorded, dropped: this.#dropped, waiting: this.#clicks };
  }

  record(
    atMs: number,
    domain: string,
    code: string,
    status: number,
    referrer: string | undefined,
    userAgent: string | undefined,
    ip: string,
  ): void {
    if (this.#size > 0) {
      const last = this.#slot(this.#size - 1);
      if (
        this.#code[last] === code &&
        this.#userAgent[last] === userAgent &&
        this.#referrer[last] === referrer &&
        this.#ip[last] === ip &&
        this.#status[last] === status &&
        this.#domain[last] === domain &&
        Math.floor(this.#atMs[last]! / 1_000) === Math.floor(atMs / 1_000)
      ) {
        this.#count[last]! += 1;
        this.#clicks += 1;
        this.#recorded += 1;
        return;
      }
    }
    if (this.#size >= this.maxEntries) {
      this.#dropped += 1;
      this.#onDrop?.(1);
      return;
    }
    this.#recorded += 1;
    this.#write(this.#slot(this.#size), atMs, domain, code, status, referrer, userAgent, ip, 1);
    this.#size += 1;
    this.#clicks += 1;
  }

  /** Up to `maxBatch` of the oldest entries, removed from the buffer; a visit's `count` says how many clicks it stands for. */
  take(maxBatch: number): Visit[] {
    const count = Math.min(maxBatch, this.#size);
    const batch: Visit[] = new Array(count);
    for (let n = 0; n < count; n++) {
      const i = this.#slot(n);
      batch[n] = {
        atMs: this.#atMs[i]!,
        domain: this.#domain[i]!,
        code: this.#code[i]!,
        status: this.#status[i]!,
        referrer: this.#referrer[i],
        userAgent: this.#userAgent[i],
        ip: this.#ip[i]!,
        count: this.#count[i]!,
      };
      this.#clicks -= this.#count[i]!;
      // Let the strings go now, not when the slot is next written.
      this.#referrer[i] = undefined;
      this.#userAgent[i] = undefined;
    }
    this.#head = this.#slot(count);
    this.#size -= count;
    return batch;
  }

  /** A batch the store refused goes back to the front, as much as fits; the rest is dropped and counted. Returns how many clicks were dropped. */
  putBack(batch: readonly Visit[]): number {
    const kept = Math.min(batch.length, this.maxEntries - this.#size);
    // Oldest first at the front: walk the kept part backwards, each one slot before the head.
    for (let n = kept - 1; n >= 0; n--) {
      const visit = batch[n]!;
      this.#head = this.#head === 0 ? this.maxEntries - 1 : this.#head - 1;
      this.#size += 1;
      this.#write(
        this.#head,
        visit.atMs,
        visit.domain,
        visit.code,
        visit.status,
        visit.referrer,
        visit.userAgent,
        visit.ip,
        visit.count ?? 1,
      );
      this.#clicks += visit.count ?? 1;
    }
    let lost = 0;
    for (let n = kept; n < batch.length; n++) lost += batch[n]!.count ?? 1;
    this.#dropped += lost;
    if (lost > 0) this.#onDrop?.(lost);
    return lost;
  }

  /** The ring slot of the n-th waiting visit (n ≤ #size). */
  #slot(n: number): number {
    const i = this.#head + n;
    return i >= this.maxEntries ? i - this.maxEntries : i;
  }

  #write(
    i: number,
    atMs: number,
    domain: string,
    code: string,
    status: number,
    referrer: string | undefined,
    userAgent: string | undefined,
    ip: string,
    count: number,
  ): void {
    // A slot past the columns' end is filled in order (never a hole), so each column stays a packed array.
    this.#fill(i);
    this.#atMs[i] = atMs;
    this.#status[i] = status;
    this.#domain[i] = domain;
    this.#code[i] = code;
    this.#referrer[i] = bounded(referrer, MAX_REFERRER_CHARS);
    this.#userAgent[i] = bounded(userAgent, MAX_UA_CHARS);
    this.#ip[i] = ip;
    this.#count[i] = count;
  }

  /** Grows the columns up to slot i (put back before a head that never wrapped reaches slots not yet made). */
  #fill(i: number): void {
    while (this.#atMs.length <= i) {
      this.#atMs.push(0);
      this.#status.push(0);
      this.#domain.push("");
      this.#code.push("");
      this.#referrer.push(undefined);
      this.#userAgent.push(undefined);
      this.#ip.push("");
      this.#count.push(0);
    }
  }
}
