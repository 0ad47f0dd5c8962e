/**
 * Clicks survive a graceful shutdown and a restart (issue 18: "flushed on graceful
 * shutdown"; "N clicks … across a restart of the service → N in the rollup"): visits still in
 * the buffer when close() is called are written before the pool closes, and the next start on
 * the same data directory counts every one of them.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { main } from "../src/main.ts";

const ENV = {
  PORT: "0",
  LOG_LEVEL: "silent",
  // The flusher would otherwise write on its own: here only the shutdown may.
  URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS: "600s",
};

test("US-15 visits buffered at shutdown are flushed by close(), and counted after a restart", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-restart-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const first = await main({ ...ENV, CASEBOOK_DATA: dir });
  const apiKey = first.bootstrap!.apiKey;
  const made = await fetch(`${first.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/restart" }),
  });
  const { code } = (await made.json()) as { code: string };
  for (let i = 0; i < 40; i++) {
    const hop = await fetch(`${first.url}/${code}`, { redirect: "manual" });
    assert.equal(hop.status, 302);
  }
  assert.equal(first.clicks!.buffer.size, 40);
  await first.close();

  const second = await main({ ...ENV, CASEBOOK_DATA: dir });
  try {
    for (let i = 0; i < 10; i++) await fetch(`${second.url}/${code}`, { redirect: "manual" });
    await second.clicks!.flusher.flushOnce();
    await second.clicks!.rollup.runOnce();
    const { rows } = await second.clicksDb.query<{ n: number }>(
      "SELECT coalesce(sum(click_count), 0)::int AS n FROM clicks WHERE code = $1",
      [code],
    );
    assert.equal(rows[0]!.n, 50);
    const { rows: rolled } = await second.clicksDb.query<{ n: number }>(
      "SELECT sum(clicks)::int AS n FROM click_rollups WHERE code = $1 AND granularity = 'day'",
      [code],
    );
    assert.equal(rolled[0]!.n, 50);
  } finally {
    await second.close();
  }
});
