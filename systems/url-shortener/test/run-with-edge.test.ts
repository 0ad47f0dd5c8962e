/**
 * `casebook run url-shortener --edge` (src/edge/run-with-edge.ts): the launcher starts nginx
 * and the service wired to each other — short URLs point at the edge, clicks through it are
 * counted from its access log (once), an edit purges it — and close() stops both.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { isEdgeLaunch, mainWithEdge, type RunningWithEdge } from "../src/edge/run-with-edge.ts";
import { main } from "../src/main.ts";
import { hop } from "./edge-fixture.ts";

test("US-09 --edge runs the service behind its nginx edge: short URLs point at the edge, its clicks are counted once, an edit purges it", async (t) => {
  assert.equal(isEdgeLaunch(["--edge"]), true);
  assert.equal(isEdgeLaunch(["--nodes", "3"]), false);
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-run-edge-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const running: RunningWithEdge | undefined = await spawnOrSkip(t, () =>
    mainWithEdge(main, { PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dir }),
  );
  if (!running) return;
  let closed = false;
  t.after(() => (closed ? undefined : running.close()));
  const apiKey = running.bootstrap!.apiKey;
  const create = await fetch(`${running.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/via-edge" }),
  });
  const link = (await create.json()) as { code: string; shortUrl: string; domain: string };
  const edgePort = new URL(running.edgeUrl).port;
  assert.equal(link.shortUrl, `http://localhost:${edgePort}/${link.code}`, "short URLs point at the edge");
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await hop(`${running.edgeUrl}/${link.code}`));
  assert.deepEqual(
    answers.map((a) => [a.status, a.cache]),
    [[302, "MISS"], ...Array.from({ length: 5 }, () => [302, "HIT"])],
  );
  const patched = await fetch(`${running.url}/v1/links/${link.domain}/${link.code}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/moved" }),
  });
  assert.equal(patched.status, 200);
  assert.equal((await hop(`${running.edgeUrl}/${link.code}`)).location, "https://example.com/moved");
  // nginx writes a request's access-log line after it has sent the response, so the last hop's
  // line may not be in the log yet: ingest and count until the 7 are in (or more — a click
  // counted twice fails the assertion below rather than being waited past).
  const clicks = await eventually(
    async () => {
      await running.clicks!.edge!.ingestOnce();
      const { rows } = await running.clicksDb.query<{ n: number }>(
        "SELECT coalesce(sum(click_count), 0)::int AS n FROM clicks WHERE code = $1",
        [link.code],
      );
      return rows[0]!.n;
    },
    {
      what: "the edge's 7 clicks to be ingested from its access log",
      timeoutMs: 10_000,
      accept: (n) => n >= 7,
    },
  );
  assert.equal(clicks, 7, "6 clicks before the edit, 1 after: each once, from the edge's log");
  closed = true;
  await running.close();
  await assert.rejects(fetch(`${running.edgeUrl}/${link.code}`), "the edge stopped with the service");
});
