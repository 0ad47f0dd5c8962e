/**
 * The agent process's own HTTP API, on loopback (the applications of the host are its only
 * callers): `POST /v1/records` takes a client's flush (`domain/agent-wire.ts`) into the
 * aggregator — synchronous, in memory, answered 202 at once whatever the ingest is doing —
 * and `GET /v1/agent/status` says what the agent holds, sent and lost.
 *
 * @example
 * // curl -X POST localhost:8125/v1/records -H 'content-type: application/json' \
 * //   -d '{"records":[{"kind":"counter","name":"hits_total","labels":{"path":"/"},"value":3}]}'
 */

import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import type { AgentAggregator, AgentRecord } from "../domain/agent-aggregator.ts";
import {
  checkAgentRecords,
  MAX_AGENT_RECORDS_PER_REQUEST,
  MAX_HISTOGRAM_BUCKETS,
} from "../domain/agent-wire.ts";
import { errors } from "../errors.ts";

const labels = {
  type: "object",
  maxProperties: 40,
  additionalProperties: { type: "string", maxLength: 2_048 },
} as const;
const name = { type: "string", minLength: 1, maxLength: 256 } as const;

const recordsBody = {
  type: "object",
  required: ["records"],
  additionalProperties: false,
  properties: {
    records: {
      type: "array",
      maxItems: MAX_AGENT_RECORDS_PER_REQUEST,
      items: {
        oneOf: [
          {
            type: "object",
            required: ["kind", "name", "labels", "value"],
            additionalProperties: false,
            properties: { kind: { enum: ["counter", "gauge"] }, name, labels, value: { type: "number" } },
          },
          {
            type: "object",
            required: ["kind", "name", "labels", "bounds", "counts", "sum"],
            additionalProperties: false,
            properties: {
              kind: { const: "histogram" },
              name,
              labels,
              bounds: { type: "array", maxItems: MAX_HISTOGRAM_BUCKETS, items: { type: "number" } },
              counts: { type: "array", maxItems: MAX_HISTOGRAM_BUCKETS + 1, items: { type: "integer" } },
              sum: { type: "number" },
            },
          },
        ],
      },
    },
  },
} as const;

export interface AgentRoutesOptions {
  readonly aggregator: AgentAggregator;
  readonly clock: Clock;
  readonly bodyLimitBytes: number;
  readonly onRecords: (count: number) => void;
  readonly status: () => Record<string, unknown>;
}

export async function registerAgentRoutes(app: FastifyInstance, options: AgentRoutesOptions): Promise<void> {
  app.post<{ Body: { records: AgentRecord[] } }>(
    "/v1/records",
    {
      bodyLimit: options.bodyLimitBytes,
      schema: {
        summary: "An application's flush: counter increments, gauge values, histogram bucket counts",
        tags: ["agent"],
        body: recordsBody,
      },
    },
    async (request, reply) => {
      const checked = checkAgentRecords(request.body.records);
      if (!checked.ok) {
        throw errors.create("METRICS_AGENT_RECORD_INVALID", {
          detail: `${checked.field}: ${checked.reason}`,
          fields: { field: checked.field },
        });
      }
      const now = options.clock.nowMs();
      for (const record of checked.records) options.aggregator.record(record, now);
      options.onRecords(checked.records.length);
      return reply.code(202).send({ accepted: checked.records.length });
    },
  );
  app.get(
    "/v1/agent/status",
    { schema: { summary: "What the agent holds, has sent and has lost", tags: ["agent"] } },
    async () => options.status(),
  );
}
