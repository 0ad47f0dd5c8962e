/**
 * The `reconcile` tool as a user meets it: a missing, unreadable or malformed file is answered
 * in one line with a non-zero exit and no stack (in-process and as the real process), and the
 * demo path — an acquirer simulator started with ACQUIRER_SETTLEMENT=immediate, payments made
 * through the service, then `reconcile --date today` — reconciles today's payments in one sitting.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../src/main.ts";
import { main as acquirerMain } from "../src/sim/acquirer-main.ts";
import { SETTLEMENT_COLUMNS } from "../src/sim/settlement-file.ts";
import { runReconcileCli } from "../src/tools/reconcile.ts";

const cliPath = fileURLToPath(new URL("../src/tools/reconcile.ts", import.meta.url));

async function run(argv: string[], env: Record<string, string>): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runReconcileCli(argv, env, (line) => out.push(line));
  return { code, out };
}

function assertOneLine(out: readonly string[], pattern: RegExp): void {
  assert.equal(out.length, 1, `one answer: ${JSON.stringify(out)}`);
  assert.ok(!out[0]!.includes("\n"), `one line: ${out[0]}`);
  assert.doesNotMatch(out[0]!, /\bat .*:\d+:\d+/, "no stack");
  assert.match(out[0]!, pattern);
}

test("reconcile: a missing file, a directory, a bad header, a malformed row → one line, exit 1", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "reconcile-cli-files-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const env = { CASEBOOK_DATA: dir };
  const missing = await run([join(dir, "settlement-2026-10-22.csv")], env);
  assert.equal(missing.code, 1);
  assertOneLine(missing.out, /^reconciliation failed: cannot read settlement file .*: no such file$/);
  const directory = await run([dir, "--date", "2026-10-22"], env);
  assert.equal(directory.code, 1);
  assertOneLine(directory.out, /cannot read settlement file .*: is a directory$/);
  const header = join(dir, "settlement-2026-10-23.csv");
  await writeFile(header, "not,a,settlement,file\n1,2,3,4\n");
  const badHeader = await run([header], env);
  assert.equal(badHeader.code, 1);
  assertOneLine(badHeader.out, /line 1 is not the header idempotency_key,authorization_id,/);
  const row = join(dir, "rows.csv");
  await writeFile(
    row,
    `${SETTLEMENT_COLUMNS.join(",")}\nk1,auth_1,capture,12x0,USD,0,2026-10-22T10:00:00.000Z\n`,
  );
  const badRow = await run([row], env);
  assert.equal(badRow.code, 1);
  assertOneLine(badRow.out, /rows\.csv: settlement file: malformed row on line 2$/);
});

test("reconcile as a process: a missing file prints one line on stdout, nothing on stderr, exit 1", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "reconcile-cli-proc-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const child = spawnSync(process.execPath, [cliPath, join(dir, "nope.csv")], {
    env: { PATH: process.env.PATH, CASEBOOK_DATA: dir },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(child.status, 1);
  assert.equal(child.stderr, "");
  assert.match(
    child.stdout,
    /^reconciliation failed: cannot read settlement file .*nope\.csv: no such file\n$/,
  );
});

test("reconcile demo: ACQUIRER_SETTLEMENT=immediate, a payment, then `--date today` matches it in one sitting", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "reconcile-cli-demo-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const acquirer = await acquirerMain({ PORT: "0", ACQUIRER_SETTLEMENT: "immediate", LOG_LEVEL: "silent" });
  t.after(() => acquirer.close());
  const env = { PORT: "0", CASEBOOK_DATA: dir, ACQUIRER_URL: acquirer.url, LOG_LEVEL: "silent" };
  const payments = await main(env);
  let today: string;
  try {
    const paid = await fetch(`${payments.url}/v1/payments`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${payments.bootstrap!.apiKey}`,
        "content-type": "application/json",
        "idempotency-key": "demo-1",
      },
      body: JSON.stringify({ amountMinor: "1250", currency: "USD", cardToken: "tok_visa", capture: true }),
    });
    assert.equal(paid.status, 201);
    assert.equal(((await paid.json()) as { status: string }).status, "captured");
    today = new Date().toISOString().slice(0, 10);
  } finally {
    // The embedded database is held by one process: the tool runs once the service is stopped.
    await payments.close();
  }
  const { code, out } = await run(["--date", "today"], { CASEBOOK_DATA: dir, ACQUIRER_URL: acquirer.url });
  assert.equal(code, 0, out.join("\n"));
  const table = Object.fromEntries(
    out[0]!.split("\n").map((line) => line.split(/\s{2,}/) as [string, string]),
  );
  if (table.date !== today) {
    t.diagnostic(`UTC midnight passed during the test (${today} → ${table.date}); the match is not checked`);
    return;
  }
  assert.equal(table["file rows"], "1");
  assert.equal(table.matched, "1");
  assert.equal(table["exceptions (total)"], "0");
});

test("the simulator refuses today's file by default (D+1), and the setting is validated", async () => {
  const acquirer = await acquirerMain({ PORT: "0", LOG_LEVEL: "silent" });
  try {
    const today = new Date().toISOString().slice(0, 10);
    const res = await fetch(`${acquirer.url}/v1/settlements/${today}.csv`);
    assert.equal(res.status, 409);
    await res.body?.cancel();
  } finally {
    await acquirer.close();
  }
  await assert.rejects(acquirerMain({ PORT: "0", ACQUIRER_SETTLEMENT: "now" }), /ACQUIRER_SETTLEMENT/);
});
