/**
 * FS-12: the waiting page is static — the same bytes for every visitor, with cache headers a
 * CDN obeys (public, s-maxage, a strong ETag and 304, nothing per visitor) — and it works:
 * headless Chromium (lab's browser harness) goes from join through the queue to admission, a
 * hold and a paid order on the page alone. A screenshot is saved.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { requireBrowser } from "@casebook/lab/browser";
import { sha256 } from "../src/api/join-challenges.ts";
import { WAITING_PAGE_CACHE_CONTROL } from "../src/api/waiting-page.ts";
import { solveChallenge } from "../src/domain/join-challenge.ts";
import { main, type RunningSystem } from "../src/main.ts";

const ADMIN = "flash-admin-token-for-tests-0123";
let running: RunningSystem;
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "casebook-flash-page-"));
  running = await main({
    PORT: "0",
    CASEBOOK_DATA: dir,
    LOG_LEVEL: "silent",
    FLASH_SALE_ADMIN_TOKEN: ADMIN,
    FLASH_SALE_ADMIT_PER_S: "2",
    FLASH_SALE_MAX_ACTIVE: "1",
    FLASH_SALE_ROOM_TICK_MS: "50",
    // bia's page sees its turn through the room's 1 s cacheable poll and then asks for it: up to
    // ~3 s after the tick that admits her, more on a loaded host. A grace shorter than that
    // frees her slot before she claims it (ADMISSION_EXPIRED on her page), so 6 s.
    FLASH_SALE_GRACE_MS: "6000",
    FLASH_SALE_JOIN_POW_BITS: "8",
  });
});
after(async () => {
  await running?.close();
  await rm(dir, { recursive: true, force: true });
});

test("FS-12 the waiting page and its script are the same bytes for everyone, cacheable by a CDN for a day, revalidated by ETag", async () => {
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${running.url}${path}`, { headers });
  for (const path of ["/wait/", "/wait/wait.js"]) {
    const [a, b] = [await get(path, { cookie: "a=1" }), await get(path, { cookie: "b=2" })];
    assert.equal(a.status, 200);
    assert.equal(a.headers.get("cache-control"), WAITING_PAGE_CACHE_CONTROL);
    assert.match(a.headers.get("cache-control")!, /\bpublic\b.*\bs-maxage=86400\b/);
    assert.equal(a.headers.get("set-cookie"), null, "nothing per visitor");
    assert.equal(a.headers.get("vary"), null);
    assert.equal(await a.text(), await b.text(), "the same bytes for every visitor");
    const etag = a.headers.get("etag")!;
    assert.match(etag, /^"[\w-]{27}"$/);
    const again = await get(path, { "if-none-match": etag });
    assert.equal(again.status, 304);
  }
  const html = await (await get("/wait/")).text();
  assert.doesNotMatch(html, /gig|secret|token=/, "no sale, user or secret baked into the page");
});

test("FS-12 FS-14 FS-20 in headless Chromium: a proof of work, join, wait in line with position and estimate, admission, a hold, payment, the order", async (t) => {
  const browser = await requireBrowser(t);
  if (!browser) return;
  const created = await fetch(`${running.url}/v1/admin/sales`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "gig", name: "gig", tickets: 10, priceMinor: 5_000, currency: "USD" }),
  });
  assert.equal(created.status, 201);
  // One slot in checkout: "ana" takes it and never buys, so "bia" waits her turn in line.
  const post = (path: string, body: unknown) =>
    fetch(`${running.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const { challenge } = (await (await post("/v1/sales/gig/challenge", { user: "ana" })).json()) as {
    challenge: string;
  };
  const first = await post("/v1/sales/gig/entrants", {
    user: "ana",
    challenge,
    nonce: solveChallenge(challenge, 8, sha256),
  });
  assert.equal(first.status, 201);
  const { secret } = (await first.json()) as { secret: string };
  // ana keeps her slot alive (asking for her admission is a sign of life) until bia's page shows
  // the line: on a loaded machine, the browser's start may take longer than the grace.
  let anaAlive = true;
  const keepAna = (async () => {
    while (anaAlive) {
      await fetch(`${running.url}/v1/sales/gig/entrants/ana/admission`, {
        method: "POST",
        headers: { "x-entrant-secret": secret },
      });
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const page = await browser.openPage(`${running.url}/wait/#sale=gig&user=bia`);
  try {
    await page.waitForSelector("#queue:not([hidden])", { timeout: 60_000 });
  } finally {
    anaAlive = false;
    await keepAna;
  }
  assert.equal(await page.textContent("#position"), "2");
  assert.match((await page.textContent("#wait")) ?? "", /^\d+ s$/);
  await page.screenshot({ path: join(tmpdir(), "casebook-flash-sale-waiting.png") });
  // ana's slot frees itself after the grace (she never came back): bia is let in.
  // A step that fails shows its reason in #error: a timeout says it.
  const shown = async (selector: string) => {
    try {
      await page.waitForSelector(selector, { timeout: 60_000 });
    } catch (error) {
      throw new Error(`${selector} not shown; the page's #error says: ${await page.textContent("#error")}`, {
        cause: error,
      });
    }
  };
  await shown("#checkout:not([hidden])");
  await page.click("#buy");
  await shown("#hold:not([hidden])");
  assert.match((await page.textContent("#numbers")) ?? "", /^\d+$/);
  await page.click("#pay");
  await shown("#paid:not([hidden])");
  assert.match((await page.textContent("#order")) ?? "", /^local_/);
  assert.equal(await page.textContent("#error"), "");
  const png = await page.screenshot({ path: join(tmpdir(), "casebook-flash-sale-paid.png") });
  assert.ok(png.length > 1_000);
});
