/**
 * The semantic cache's embedder on the upstream's `/v1/embeddings` (LG-11), used when
 * `LLM_GATEWAY_EMBEDDINGS_MODEL` is set: one call per deterministic request, asking for
 * `dimensions` floats (OpenAI's text-embedding-3 models shorten their vectors on request;
 * the store's `cube` type holds at most 100), bounded by a timeout. The answer is checked
 * (one vector of that length, finite numbers) and scaled to unit length. A failure throws:
 * the cache's caller turns it into an uncached request, never a failed one.
 *
 * @example
 * const embedder = new UpstreamEmbedder(upstream, { model: "text-embedding-3-small", dimensions: 96, timeoutMs: 2_000 });
 * await embedder.embed("What is 2 + 2?"); // Float32Array(96), unit length
 */
import { type Embedder, unitVector } from "../domain/embedder.ts";
import { errors } from "../errors.ts";
import type { UpstreamClient } from "./upstream-client.ts";

/** The `cube` contrib's limit (CUBE_MAX_DIM): the store cannot hold longer vectors. */
export const MAX_CACHE_EMBEDDING_DIMENSIONS = 100;

export class UpstreamEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  readonly #upstream: Pick<UpstreamClient, "embeddings">;
  readonly #model: string;
  readonly #timeoutMs: number;

  constructor(
    upstream: Pick<UpstreamClient, "embeddings">,
    options: { model: string; dimensions: number; timeoutMs: number },
  ) {
    const { dimensions } = options;
    if (!(Number.isInteger(dimensions) && dimensions >= 2 && dimensions <= MAX_CACHE_EMBEDDING_DIMENSIONS))
      throw new RangeError(
        `dimensions must be an integer in [2, ${MAX_CACHE_EMBEDDING_DIMENSIONS}], got ${dimensions}`,
      );
    this.#upstream = upstream;
    this.#model = options.model;
    this.dimensions = dimensions;
    this.#timeoutMs = options.timeoutMs;
    this.id = `upstream:${options.model}:${dimensions}`;
  }

  async embed(text: string): Promise<Float32Array> {
    const body = await this.#upstream.embeddings(
      { model: this.#model, input: text, dimensions: this.dimensions, encoding_format: "float" },
      AbortSignal.timeout(this.#timeoutMs),
    );
    const values = (body as { data?: Array<{ embedding?: unknown }> } | null)?.data?.[0]?.embedding;
    const vector =
      Array.isArray(values) && values.length === this.dimensions && values.every((v) => typeof v === "number")
        ? unitVector(values as number[])
        : undefined;
    if (vector === undefined)
      throw errors.create("LLM_EMBEDDINGS_INVALID", {
        fields: { model: this.#model, dimensions: this.dimensions },
      });
    return vector;
  }
}
