/**
 * Immutable persisted blocks (MT-17): what the head compacts out, one directory per time range
 * `[mint, maxt)` under `blocks/`, written once and never changed:
 *
 * - `chunks`: the Gorilla chunks' bytes back to back;
 * - `index`: a symbol table (every distinct label name and value once), then per series its
 *   labels as symbol numbers and its chunks' (offset, length, bits, count, minT, maxT);
 * - `meta.json`: the range and the counts.
 *
 * A block is written to `<dir>.tmp` and renamed into place, so a crash leaves either no block
 * or a whole one. Opening a block reads its index and chunks and rebuilds the postings in
 * memory (Prometheus keeps postings on disk and maps them; here the rebuild costs O(series)
 * at open).
 *
 * @example
 * await writeBlock(join(dir, "blocks"), { mint, maxt, series: head.truncateBefore(maxt) });
 * const block = await readBlock(join(dir, "blocks", name));
 * block.select(matchers, from, to);
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ByteReader, ByteWriter } from "../domain/byte-codec.ts";
import type { SealedChunk } from "../domain/gorilla-chunk.ts";
import { type SeriesData, samplesIn } from "../domain/head-block.ts";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { type Labels, seriesKey } from "../domain/labels.ts";
import { PostingsIndex } from "../domain/postings-index.ts";

export interface BlockContent {
  readonly mint: number;
  readonly maxt: number;
  readonly series: ReadonlyArray<{ labels: Labels; chunks: readonly SealedChunk[] }>;
}

export interface BlockMeta {
  readonly mint: number;
  readonly maxt: number;
  readonly numSeries: number;
  readonly numSamples: number;
  readonly numChunks: number;
  /** Bytes of `chunks` + `index`: what bytes/sample counts (no WAL). */
  readonly bytes: number;
}

export const blockName = (mint: number, maxt: number) => `b-${mint}-${maxt}`;

/** Writes a block atomically (tmp directory, then rename); returns its meta. */
export async function writeBlock(blocksDir: string, content: BlockContent): Promise<BlockMeta> {
  const symbols = new Map<string, number>();
  const symbol = (s: string) => {
    let n = symbols.get(s);
    if (n === undefined) {
      n = symbols.size;
      symbols.set(s, n);
    }
    return n;
  };
  const sorted = [...content.series].sort((a, b) => {
    const [x, y] = [seriesKey(a.labels), seriesKey(b.labels)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
  for (const { labels } of sorted) {
    for (const [n, v] of labels) {
      symbol(n);
      symbol(v);
    }
  }
  const chunks = new ByteWriter();
  const index = new ByteWriter();
  index.uvarint(symbols.size);
  for (const s of symbols.keys()) index.string(s);
  index.uvarint(sorted.length);
  let numSamples = 0;
  let numChunks = 0;
  for (const { labels, chunks: list } of sorted) {
    index.uvarint(labels.length);
    for (const [n, v] of labels) {
      index.uvarint(symbol(n));
      index.uvarint(symbol(v));
    }
    index.uvarint(list.length);
    for (const chunk of list) {
      index.uvarint(chunks.length);
      index.uvarint(chunk.bytes.length);
      index.uvarint(chunk.bitLength);
      index.uvarint(chunk.count);
      index.varint(chunk.minT);
      index.uvarint(chunk.maxT - chunk.minT);
      chunks.bytes(chunk.bytes);
      numSamples += chunk.count;
      numChunks++;
    }
  }
  const meta: BlockMeta = {
    mint: content.mint,
    maxt: content.maxt,
    numSeries: sorted.length,
    numSamples,
    numChunks,
    bytes: chunks.length + index.length,
  };
  const final = join(blocksDir, blockName(content.mint, content.maxt));
  const tmp = `${final}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await writeFile(join(tmp, "chunks"), chunks.finish(), { flush: true });
  await writeFile(join(tmp, "index"), index.finish(), { flush: true });
  await writeFile(join(tmp, "meta.json"), `${JSON.stringify(meta)}\n`, { flush: true });
  await rename(tmp, final);
  return meta;
}

export class Block {
  readonly meta: BlockMeta;
  readonly #series: ReadonlyArray<{ labels: Labels; chunks: SealedChunk[] }>;
  readonly #index = new PostingsIndex();

  constructor(meta: BlockMeta, series: Array<{ labels: Labels; chunks: SealedChunk[] }>) {
    this.meta = meta;
    this.#series = series;
    for (let i = 0; i < series.length; i++) this.#index.add(i, series[i]!.labels);
  }

  get index(): PostingsIndex {
    return this.#index;
  }

  select(matchers: readonly LabelMatcher[], mint: number, maxt: number): SeriesData[] {
    if (maxt < this.meta.mint || mint >= this.meta.maxt) return [];
    const out: SeriesData[] = [];
    for (const ref of this.#index.select(matchers)) {
      const series = this.#series[ref]!;
      const data = samplesIn(series.chunks, mint, maxt);
      if (data.timestamps.length > 0) out.push({ labels: series.labels, ...data });
    }
    return out;
  }
}

export async function readBlock(dir: string): Promise<Block> {
  const meta = JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as BlockMeta;
  const chunkBytes = new Uint8Array(await readFile(join(dir, "chunks")));
  const input = new ByteReader(new Uint8Array(await readFile(join(dir, "index"))));
  const symbols: string[] = [];
  for (let i = input.uvarint(); i > 0; i--) symbols.push(input.string());
  const series: Array<{ labels: Labels; chunks: SealedChunk[] }> = [];
  for (let i = input.uvarint(); i > 0; i--) {
    const labels: Array<[string, string]> = [];
    for (let j = input.uvarint(); j > 0; j--)
      labels.push([symbols[input.uvarint()]!, symbols[input.uvarint()]!]);
    const chunks: SealedChunk[] = [];
    for (let j = input.uvarint(); j > 0; j--) {
      const offset = input.uvarint();
      const length = input.uvarint();
      const bitLength = input.uvarint();
      const count = input.uvarint();
      const minT = input.varint();
      const maxT = minT + input.uvarint();
      chunks.push({ bytes: chunkBytes.subarray(offset, offset + length), bitLength, count, minT, maxT });
    }
    series.push({ labels, chunks });
  }
  return new Block(meta, series);
}

/** Every whole block under `blocksDir`, oldest first; leftover `.tmp` directories are removed. */
export async function readBlocks(blocksDir: string): Promise<Block[]> {
  await mkdir(blocksDir, { recursive: true });
  const names = await readdir(blocksDir);
  const blocks: Block[] = [];
  for (const name of names) {
    if (name.endsWith(".tmp")) await rm(join(blocksDir, name), { recursive: true, force: true });
    else if (name.startsWith("b-")) blocks.push(await readBlock(join(blocksDir, name)));
  }
  return blocks.sort((a, b) => a.meta.mint - b.meta.mint);
}
