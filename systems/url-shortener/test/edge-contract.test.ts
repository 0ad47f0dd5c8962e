/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on POST /v1/links, started by
 * main() as in production on PGlite, authenticated with a workspace key made through the
 * admin API. The state probe reads the workspace's links through the API and counts the rows.
 */
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { apiWorld } from "./api-fixture.ts";

let apiKey = "";

edgeContractSuite({
  name: "url-shortener links",
  open: async () => {
    const world = await apiWorld();
    apiKey = await world.workspace("edge");
    return {
      subject: {
        service: world.running.service,
        stateProbe: async () => {
          const listed = await world.request("GET", "/v1/links?limit=100", { key: apiKey });
          const { rows } = await world.running.db.query("SELECT count(*)::int AS links FROM links");
          return { listed: listed.json, rows: rows[0] };
        },
      },
      close: () => world.close(),
    };
  },
  write: {
    method: "POST",
    url: "/v1/links",
    body: {
      url: "https://example.com/edge",
      status: 302,
      cacheMaxAgeS: 60,
      forwardQuery: true,
      tags: ["edge"],
    },
  },
  fields: {
    "/url": "string",
    "/status": "integer",
    "/cacheMaxAgeS": "integer",
    "/forwardQuery": "boolean",
    "/tags": "array",
  },
  stringField: "/url",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${apiKey}`,
    wrong: "Bearer usk_0000000000000000_not-a-real-key",
  },
});
