/**
 * The notes `casebook up` prints below its table, from the systems' start log lines: keys
 * shown plainly, the RESP URL from `respPort`, the service's own `try` before the manifest's
 * template, `next` when there is no command, and nothing for a system with nothing to say.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { SystemPlan } from "../src/launch-plan.ts";
import { StartNotes } from "../src/start-notes.ts";

function plan(name: string, port: number, tryTemplate?: string): SystemPlan {
  const url = `http://127.0.0.1:${port}`;
  return {
    name,
    title: name,
    dir: "/x",
    entry: "/x/main.ts",
    args: [],
    host: "127.0.0.1",
    port,
    url,
    engine: "own memory",
    dataDir: "/x/data",
    env: {},
    ...(tryTemplate === undefined ? {} : { tryTemplate }),
  };
}

test("keys, RESP URL, try (the service's first) and next, from JSON log lines only", () => {
  const notes = new StartNotes();
  const pay = { apiKey: "sk_1_x", try: `curl -s -H 'Authorization: Bearer sk_1_x' http://h/v1/accounts` };
  notes.observe("payments", JSON.stringify({ msg: "bootstrap merchant created", ...pay }));
  notes.observe("payments", "not json {");
  notes.observe("cache", JSON.stringify({ msg: "cache node listening", respPort: 7001 }));
  notes.observe("webhooks", JSON.stringify({ msg: "no tenant yet", next: "set WEBHOOKS_ADMIN_TOKEN" }));
  notes.observe("quiet", "[1, 2]");
  const text = notes.render([
    plan("payments", 8104, "curl {url}/never"),
    plan("cache", 8114, "redis-cli -u {resp} PING"),
    plan("webhooks", 8113),
    plan("quiet", 8199),
  ]);
  assert.equal(
    text,
    "To try each system:\n" +
      "  payments  API key (shown only now): sk_1_x\n" +
      `            try:  curl -s -H 'Authorization: Bearer sk_1_x' http://h/v1/accounts\n` +
      "  cache     RESP: redis://127.0.0.1:7001\n" +
      "            try:  redis-cli -u redis://127.0.0.1:7001 PING\n" +
      "  webhooks  next: set WEBHOOKS_ADMIN_TOKEN\n",
  );
  assert.equal(new StartNotes().render([plan("quiet", 8199, "curl {resp}")]), "", "no RESP port: no command");
});
