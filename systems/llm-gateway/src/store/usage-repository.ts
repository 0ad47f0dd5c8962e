/**
 * Usage and cost per request, per tenant and model (the usage API): one row per answered
 * (or refused-after-routing) request, and the sums a tenant reads back over a time range.
 *
 * @example
 * await usage.record({ tenantId: "acme", model: "smart", servedBy: "gpt-4o@default", outcome: "ok", fallback: "none", promptTokens: 12, cachedPromptTokens: 0, completionTokens: 40, costNanoUsd: 430_000 });
 * await usage.summary("acme", { fromMs, toMs }); // [{ model: "smart", requests: 1, …, costNanoUsd: 430000 }]
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";

/** Columns per row of the INSERT (its placeholders are numbered from them). */
const USAGE_COLUMNS = 10;

export interface UsageRecord {
  readonly tenantId: string;
  readonly model: string;
  readonly servedBy: string | undefined;
  readonly outcome: string;
  readonly fallback: string;
  readonly promptTokens: number;
  readonly cachedPromptTokens: number;
  readonly completionTokens: number;
  readonly costNanoUsd: number;
  /** When the request was accounted; default: when the row is written. */
  readonly createdAtMs?: number | undefined;
}

export interface UsageSummaryRow {
  readonly model: string;
  readonly servedBy: string | null;
  readonly requests: number;
  readonly cacheHits: number;
  readonly fallbacks: number;
  readonly promptTokens: number;
  readonly cachedPromptTokens: number;
  readonly completionTokens: number;
  readonly costNanoUsd: number;
}

export class UsageRepository {
  readonly #db: Database;
  readonly #clock: Clock;

  constructor(db: Database, options: { clock: Clock }) {
    this.#db = db;
    this.#clock = options.clock;
  }

  async record(row: UsageRecord): Promise<void> {
    await this.recordMany([row]);
  }

  /**
   * Many rows in one INSERT (the usage writer's batches): one round trip and one commit for
   * the lot; all or none — a failed batch leaves no half of it behind for a retry to double.
   */
  async recordMany(rows: readonly UsageRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const createdAt = new Date(this.#clock.nowMs());
    const values: unknown[] = [];
    const tuples = rows.map((row, i) => {
      values.push(
        row.tenantId,
        row.model,
        row.servedBy ?? null,
        row.outcome,
        row.fallback,
        row.promptTokens,
        row.cachedPromptTokens,
        row.completionTokens,
        row.costNanoUsd,
        row.createdAtMs === undefined ? createdAt : new Date(row.createdAtMs),
      );
      const at = i * USAGE_COLUMNS;
      return `(${Array.from({ length: USAGE_COLUMNS }, (_, c) => `$${at + c + 1}`).join(", ")})`;
    });
    await this.#db.query(
      `INSERT INTO llm_usage (tenant_id, model, served_by, outcome, fallback, prompt_tokens,
         cached_prompt_tokens, completion_tokens, cost_nano_usd, created_at)
       VALUES ${tuples.join(", ")}`,
      values,
    );
  }

  /** Sums per logical model and deployment, for one tenant, in [fromMs, toMs). */
  async summary(tenantId: string, range: { fromMs: number; toMs: number }): Promise<UsageSummaryRow[]> {
    const { rows } = await this.#db.query<Record<string, string | number | null>>(
      `SELECT model, served_by, count(*) AS requests,
              count(*) FILTER (WHERE outcome = 'cached') AS cache_hits,
              count(*) FILTER (WHERE fallback <> 'none') AS fallbacks,
              sum(prompt_tokens) AS prompt_tokens, sum(cached_prompt_tokens) AS cached_prompt_tokens,
              sum(completion_tokens) AS completion_tokens, sum(cost_nano_usd) AS cost_nano_usd
         FROM llm_usage
        WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
        GROUP BY model, served_by
        ORDER BY model, served_by NULLS FIRST`,
      [tenantId, new Date(range.fromMs), new Date(range.toMs)],
    );
    return rows.map((r) => ({
      model: String(r.model),
      servedBy: r.served_by === null ? null : String(r.served_by),
      requests: Number(r.requests),
      cacheHits: Number(r.cache_hits),
      fallbacks: Number(r.fallbacks),
      promptTokens: Number(r.prompt_tokens),
      cachedPromptTokens: Number(r.cached_prompt_tokens),
      completionTokens: Number(r.completion_tokens),
      costNanoUsd: Number(r.cost_nano_usd),
    }));
  }
}
