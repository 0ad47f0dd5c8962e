/**
 * The acceptance test of `casebook up`'s closing block, on the real systems: payments,
 * webhooks, cache and rate-limiter start on free ports with fresh embedded data; below the
 * table the CLI prints the API keys this start created (plainly, not inside JSON), the cache's
 * RESP address, and one command per system — and each printed command, run as printed by a
 * shell against the started systems, works. The engine column says what each really uses.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cliEnv, freePort, startCli } from "./fixtures.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const SYSTEMS = ["payments", "webhooks", "cache", "rate-limiter"];
/** Four systems, two of them opening PGlite, on a loaded 2-core machine. */
const START_TIMEOUT_MS = 300_000;
/** Bound on one pasted command. */
const COMMAND_TIMEOUT_MS = 30_000;

function shell(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", command], { timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The closing block's lines, by system: `name   first line` then indented continuation lines. */
function tryBlock(stdout: string): Map<string, string[]> {
  const start = stdout.indexOf("To try each system:\n");
  assert.notEqual(start, -1, `no closing block in:\n${stdout.slice(-3_000)}`);
  const block = new Map<string, string[]>();
  let current: string | undefined;
  for (const line of stdout.slice(start).split("\n").slice(1)) {
    if (line.trim() === "") break;
    const head = /^ {2}(\S+) +(.*)$/.exec(line);
    if (head && SYSTEMS.includes(head[1]!)) {
      current = head[1]!;
      block.set(current, [head[2]!]);
    } else if (current !== undefined) block.get(current)!.push(line.trim());
  }
  return block;
}

test("up: keys, the RESP address and a pasteable first command per system — each command works", async (t) => {
  const data = mkdtempSync(join(tmpdir(), "casebook-up-try-"));
  t.after(() => rmSync(data, { recursive: true, force: true }));
  const ports = await Promise.all(SYSTEMS.map(() => freePort()));
  const respPort = await freePort();
  const env = cliEnv(REPO, {
    CASEBOOK_DATA: data,
    CACHE_PORT: String(respPort),
    LOG_LEVEL: "info",
    ...Object.fromEntries(
      SYSTEMS.map((s, i) => [`CASEBOOK_PORT_${s.toUpperCase().replace("-", "_")}`, String(ports[i])]),
    ),
  });
  // The embedded demo tenant and merchant are made only without an admin API.
  for (const key of ["PAYMENTS_ADMIN_TOKEN", "WEBHOOKS_ADMIN_TOKEN", "REDIS_CLUSTER_NODES", "ACQUIRER_URL"])
    delete env[key];
  const cli = startCli(
    ["up", ...SYSTEMS, "--logs", "raw", "--health-timeout-ms", String(START_TIMEOUT_MS)],
    env,
    START_TIMEOUT_MS + 120_000,
  );
  t.after(async () => {
    cli.child.kill("SIGTERM");
    await cli.exited;
  });
  await cli.waitFor(/system\(s\) up/, START_TIMEOUT_MS + 30_000);

  const out = cli.stdout();
  const table = out.slice(out.lastIndexOf("\nsystem "));
  assert.match(table, /payments\s+\S+\s+pglite \(embedded\)/);
  assert.match(table, /webhooks\s+\S+\s+pglite \(embedded\)/);
  assert.match(table, /cache\s+\S+\s+own memory/);
  assert.match(table, /rate-limiter\s+\S+\s+in-process \(embedded\)/);

  const block = tryBlock(out);
  const closing = out.slice(out.indexOf("To try each system:"));
  assert.doesNotMatch(closing, /\\"/, "no JSON escapes in what is meant to be pasted");
  const line = (system: string, prefix: string) => {
    const found = block.get(system)?.find((l) => l.startsWith(prefix));
    assert.ok(found, `${system}: no "${prefix}" line in\n${closing}`);
    return found.slice(prefix.length).trim();
  };
  assert.match(line("payments", "API key (shown only now):"), /^sk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  assert.match(line("webhooks", "API key (shown only now):"), /^whk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  assert.equal(line("cache", "RESP:"), `redis://127.0.0.1:${respPort}`);

  const payments = await shell(line("payments", "try:"));
  assert.equal(payments.code, 0, payments.stderr);
  assert.ok(Array.isArray(JSON.parse(payments.stdout).items), payments.stdout);
  const webhooks = await shell(line("webhooks", "try:"));
  assert.equal(webhooks.code, 0, webhooks.stderr);
  assert.match(JSON.parse(webhooks.stdout).id, /^msg_/, webhooks.stdout);
  const cache = await shell(line("cache", "try:"));
  assert.equal(cache.code, 0, cache.stderr);
  assert.equal(cache.stdout.trim(), "OK");
  const limiter = await shell(line("rate-limiter", "try:"));
  assert.equal(limiter.code, 0, limiter.stderr);
  assert.equal(JSON.parse(limiter.stdout).allowed, true, limiter.stdout);
});
