/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * feed started by main() as in production, for its write route POST /v1/users/{id}/posts:
 * wrong JSON types, NUL and lone surrogates, an oversize body, a wrong method with Allow, and
 * a refused request changing nothing (the author feed is the state probe), and no key or a
 * wrong one refused with 401 (user 7's key is issued at open).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";
import { createUserWithKey } from "../src/store/user-keys.ts";

let key = "";

edgeContractSuite({
  name: "feed",
  open: async () => {
    const dir = await mkdtemp(join(tmpdir(), "casebook-feed-edge-"));
    const running = await main(
      { PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dir },
      { startWorker: false },
    );
    key = (await createUserWithKey(running.db, 7n, { nowMs: Date.now(), randomBytes })).apiKey.key;
    return {
      subject: {
        service: running.service,
        stateProbe: async () =>
          (await running.service.app.inject({ url: "/v1/users/7/posts?limit=100" })).json(),
      },
      close: async () => {
        await running.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  write: { method: "POST", url: "/v1/users/7/posts", body: { text: "hello" } },
  fields: { "/text": "string" },
  stringField: "/text",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${key}`,
    wrong: `Bearer fdk_0123456789abcdef_${"A".repeat(43)}`,
  },
});
