/**
 * The head's write-ahead log (MT-17): every accepted batch is appended and fsynced here before
 * the head changes, so a crash loses nothing that was acknowledged. Segments are numbered
 * files (`wal/00000001`, …); a record is `u32 length | u32 crc32 | payload`, the payload a
 * SERIES record (new refs and their labels) or a SAMPLES record (ref, t, value). On replay a
 * record cut short or failing its CRC marks a torn tail — a crash in the middle of a write
 * that was never acknowledged — and the segment is truncated there; everything before it
 * comes back.
 *
 * Compaction rewrites the head that is left into a fresh segment (a checkpoint) and deletes
 * the older ones; replaying old segments and the checkpoint together is harmless because the
 * head skips samples it has and samples below the persisted blocks.
 *
 * @example
 * const wal = await Wal.open(join(dir, "wal"));
 * await wal.append(plan.newSeries, samples);
 * await Wal.replay(join(dir, "wal"), { series: (ref, labels) => …, sample: (ref, t, v) => … });
 */
import { mkdir, open, readdir, readFile, rm, truncate } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { ByteReader, ByteWriter } from "../domain/byte-codec.ts";
import type { Labels } from "../domain/labels.ts";

const SERIES = 1;
const SAMPLES = 2;
const HEADER_BYTES = 8;
/** A record larger than this is a torn length field, never a real record. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

export interface WalSample {
  readonly ref: number;
  readonly t: number;
  readonly v: number;
}

/** Samples as the WAL writes them: visited in order, without an object each (a plan's spans, a head's series). */
export interface WalSampleSource {
  readonly count: number;
  forEach(visit: (ref: number, t: number, v: number) => void): void;
}

/** A list of samples as a source (the tests' form). */
export function walSamplesOf(samples: readonly WalSample[]): WalSampleSource {
  return {
    count: samples.length,
    forEach: (visit) => {
      for (const { ref, t, v } of samples) visit(ref, t, v);
    },
  };
}

export interface ReplayHandlers {
  series(ref: number, labels: Labels): void;
  sample(ref: number, t: number, v: number): void;
}

export interface ReplayReport {
  readonly segments: number;
  readonly records: number;
  /** Bytes cut from a torn tail (0 when the log ended cleanly). */
  readonly tornBytes: number;
}

function frame(payload: Uint8Array, out: ByteWriter): void {
  out.u32(payload.length);
  out.u32(crc32(payload));
  out.bytes(payload);
}

export function encodeSeriesRecord(series: ReadonlyArray<{ ref: number; labels: Labels }>): Uint8Array {
  const out = new ByteWriter();
  out.u8(SERIES);
  out.uvarint(series.length);
  for (const { ref, labels } of series) {
    out.uvarint(ref);
    out.uvarint(labels.length);
    for (const [name, value] of labels) {
      out.string(name);
      out.string(value);
    }
  }
  return out.finish();
}

export function encodeSamplesRecord(samples: WalSampleSource): Uint8Array {
  // At most 8 + 10 + 8 bytes a sample (ref and time as varints, the value): no regrowth.
  const out = new ByteWriter(16 + 26 * samples.count);
  out.u8(SAMPLES);
  out.uvarint(samples.count);
  samples.forEach((ref, t, v) => {
    out.uvarint(ref);
    out.varint(t);
    out.f64(v);
  });
  return out.finish();
}

function decodeRecord(payload: Uint8Array, handlers: ReplayHandlers): void {
  const input = new ByteReader(payload);
  const type = input.u8();
  const count = input.uvarint();
  for (let i = 0; i < count; i++) {
    if (type === SERIES) {
      const ref = input.uvarint();
      const n = input.uvarint();
      const labels: Array<[string, string]> = [];
      for (let j = 0; j < n; j++) labels.push([input.string(), input.string()]);
      handlers.series(ref, labels);
    } else if (type === SAMPLES) {
      handlers.sample(input.uvarint(), input.varint(), input.f64());
    } else {
      throw new RangeError(`unknown WAL record type ${type}`);
    }
  }
}

const segmentName = (n: number) => String(n).padStart(8, "0");

async function segmentsOf(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [] as string[];
    throw error;
  });
  return names
    .filter((name) => /^\d{8}$/.test(name))
    .map(Number)
    .sort((a, b) => a - b);
}

export class Wal {
  readonly #dir: string;
  #segment: number;
  #handle: Awaited<ReturnType<typeof open>>;

  private constructor(dir: string, segment: number, handle: Awaited<ReturnType<typeof open>>) {
    this.#dir = dir;
    this.#segment = segment;
    this.#handle = handle;
  }

  /** Opens a fresh segment after the existing ones (replay them first). */
  static async open(dir: string): Promise<Wal> {
    await mkdir(dir, { recursive: true });
    const segment = ((await segmentsOf(dir)).at(-1) ?? 0) + 1;
    return new Wal(dir, segment, await open(join(dir, segmentName(segment)), "a"));
  }

  /** Reads every segment in order; truncates a torn tail. */
  static async replay(dir: string, handlers: ReplayHandlers): Promise<ReplayReport> {
    const segments = await segmentsOf(dir);
    let records = 0;
    let tornBytes = 0;
    for (const segment of segments) {
      const path = join(dir, segmentName(segment));
      const bytes = new Uint8Array(await readFile(path));
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      let offset = 0;
      while (offset < bytes.length) {
        const length = offset + HEADER_BYTES <= bytes.length ? view.getUint32(offset) : -1;
        const end = offset + HEADER_BYTES + length;
        const whole = length >= 0 && length <= MAX_RECORD_BYTES && end <= bytes.length;
        const payload = whole ? bytes.subarray(offset + HEADER_BYTES, end) : undefined;
        if (payload === undefined || crc32(payload) !== view.getUint32(offset + 4)) break;
        decodeRecord(payload, handlers);
        records++;
        offset = end;
      }
      if (offset < bytes.length) {
        tornBytes += bytes.length - offset;
        await truncate(path, offset);
      }
    }
    return { segments: segments.length, records, tornBytes };
  }

  /** Appends the batch's new series and samples as one write, then fsyncs: durable on return. */
  async append(
    series: ReadonlyArray<{ ref: number; labels: Labels }>,
    samples: WalSampleSource,
  ): Promise<void> {
    const records: Uint8Array[] = [];
    if (series.length > 0) records.push(encodeSeriesRecord(series));
    if (samples.count > 0) records.push(encodeSamplesRecord(samples));
    if (records.length === 0) return;
    const out = new ByteWriter(records.reduce((n, record) => n + HEADER_BYTES + record.length, 0));
    for (const record of records) frame(record, out);
    await this.#handle.write(out.finish());
    await this.#handle.datasync();
  }

  /**
   * Starts a new segment holding `series` and `samples` (what the head keeps after a
   * compaction), fsynced, then deletes every older segment.
   */
  async checkpoint(
    series: ReadonlyArray<{ ref: number; labels: Labels }>,
    samples: WalSampleSource,
  ): Promise<void> {
    const older = await segmentsOf(this.#dir);
    await this.#handle.close();
    this.#segment++;
    this.#handle = await open(join(this.#dir, segmentName(this.#segment)), "a");
    await this.append(series, samples);
    // Newest first: a crash in the middle leaves a prefix of the old segments, whose refs all
    // come before the checkpoint's new ones, so replay still meets refs in increasing order.
    for (const segment of [...older].reverse())
      if (segment < this.#segment) await rm(join(this.#dir, segmentName(segment)));
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }
}
