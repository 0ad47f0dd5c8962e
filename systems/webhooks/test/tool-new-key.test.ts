/**
 * `casebook webhooks new-key` (src/tools/new-key.ts) as a process against the service as a
 * process (embedded PGlite, WEBHOOKS_ADMIN_TOKEN set, so no demo tenant): the start log says
 * in one line how to make the first tenant; the tool creates it and prints a key that works,
 * a second run adds one, `--rotate` ends the older keys after its overlap; against a closed
 * port it prints one line saying how to start the service.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { spawnChild } from "@casebook/lab/spawn-child";

const TOKEN = "test-webhooks-admin-token-0123";
const MAIN = new URL("../src/main.ts", import.meta.url);
const TOOL = new URL("../src/tools/new-key.ts", import.meta.url).pathname;
/** Bound on one run of the tool (Node's start on a loaded machine dominates). */
const TOOL_TIMEOUT_MS = 60_000;

function runTool(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [TOOL, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: TOOL_TIMEOUT_MS },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function status(url: string, key: string): Promise<number> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

test("new-key against the running service: the first tenant, another key, a rotation", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "webhooks-new-key-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const port = String(await freePort());
  const service = await spawnChild(MAIN, {
    env: {
      ...process.env,
      PORT: port,
      HOST: "127.0.0.1",
      CASEBOOK_DATA: dir,
      WEBHOOKS_ADMIN_TOKEN: TOKEN,
      WEBHOOKS_WORKERS: "off",
      LOG_LEVEL: "info",
    },
    ready: (line) => line.includes("no tenant yet"),
    readyTimeoutMs: 120_000,
    test: t,
  });
  assert.equal(JSON.parse(service.readyLine).try, "npx casebook webhooks new-key --tenant demo");
  const subscriptions = `http://127.0.0.1:${port}/v1/subscriptions`;
  const env = { PORT: port, WEBHOOKS_ADMIN_TOKEN: TOKEN };

  const first = await runTool(["--tenant", "acme"], env);
  assert.equal(first.code, 0, first.stderr);
  const key = first.stdout.trim();
  assert.match(key, /^whk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  assert.match(first.stderr, /a new tenant and its first key for tenant acme/);
  assert.equal(await status(subscriptions, key), 200);

  const rotated = await runTool(["--tenant", "acme", "--rotate", "--expires-in-s", "0"], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stderr, /rotated: a new key \(the others work until /);
  assert.equal(await status(subscriptions, rotated.stdout.trim()), 200, "the new key works");
  assert.equal(await status(subscriptions, key), 401, "--expires-in-s 0: the old key stopped now");

  const usage = await runTool(["--expires-in-s", "5"], env);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--expires-in-s goes with --rotate/);
});

test("new-key against a closed port: one line saying how to start webhooks", async () => {
  const closed = String(await freePort());
  const down = await runTool([], { PORT: closed, WEBHOOKS_ADMIN_TOKEN: TOKEN });
  assert.equal(down.code, 1);
  assert.equal(down.stdout, "");
  assert.equal(down.stderr.trim().split("\n").length, 1, down.stderr);
  assert.match(
    down.stderr,
    /webhooks is not running at http:\/\/127\.0\.0\.1:\d+: start it with `WEBHOOKS_ADMIN_TOKEN=<16\+ chars> npx casebook run webhooks`/,
  );
});
