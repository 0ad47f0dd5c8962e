/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * metrics started by main() as in production, on its write route for the agent's JSON batch
 * (`POST /api/v1/push`), errors in Prometheus's shape under /api/v1/: wrong JSON types, bad
 * text, unknown fields, size, method, media type and credentials — each a 4xx naming the
 * field, nothing stored (the probe lists the tenant's series through /api/v1/series).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";

let apiKey = "";
const NOW_MS = Date.UTC(2026, 0, 1);

edgeContractSuite({
  name: "metrics",
  open: async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-edge-"));
    // The direct path: the contract's state probe reads right after the write's answer.
    const running = await main({
      PORT: "0",
      LOG_LEVEL: "silent",
      CASEBOOK_DATA: dataDir,
      METRICS_INGEST_PATH: "direct",
    });
    apiKey = running.bootstrap!.apiKey;
    const stateProbe = async () => {
      const res = await running.service.app.inject({
        url: "/api/v1/series?match[]=%7B__name__%3D~%22.%2B%22%7D",
        headers: { authorization: `Bearer ${apiKey}` },
      });
      return JSON.parse(res.body);
    };
    return {
      subject: { service: running.service, stateProbe },
      close: async () => {
        await running.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  write: {
    method: "POST",
    url: "/api/v1/push",
    body: { timeseries: [{ labels: { __name__: "up", job: "api" }, samples: [{ t: NOW_MS, v: 1 }] }] },
  },
  fields: {
    "/timeseries": "array",
    "/timeseries/0/labels": "object",
    "/timeseries/0/labels/job": "string",
    "/timeseries/0/samples": "array",
    "/timeseries/0/samples/0/t": "integer",
    "/timeseries/0/samples/0/v": ["1", true, [1], { n: 1 }],
  },
  stringField: "/timeseries/0/labels/job",
  bodyLimitBytes: 10 * 1024 * 1024,
  wrongMethod: { method: "PUT", allow: "POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${apiKey}`,
    wrong: "Bearer mtk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
  },
  errorShape: {
    contentType: /^application\/json/,
    read: (body) => {
      const error = body as { httpStatus: number; code: string; errors?: unknown };
      return { status: error.httpStatus, code: error.code, errors: error.errors };
    },
  },
});
