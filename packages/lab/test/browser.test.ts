import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { launchBrowser, openPage, requireBrowser, screenshot } from "../src/browser.ts";
import { labErrors } from "../src/lab-errors.ts";

const PAGE = `<!doctype html><html><head><title>casebook lab</title></head>
<body style="margin:0;background:#0a64c8"><h1 id="greeting">hello from node:http</h1>
<script>document.getElementById("greeting").dataset.ran = "yes";</script></body></html>`;

async function servePage(t: { after(fn: () => unknown): void }): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url !== "/") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

test("Chromium loads a page served from node:http: its text, its script ran, and a PNG screenshot", async (t) => {
  const url = await servePage(t);
  const browser = await requireBrowser(t);
  if (!browser) return;
  const page = await browser.openPage(url);
  assert.equal(await page.title(), "casebook lab");
  assert.equal(await page.textContent("#greeting"), "hello from node:http");
  assert.equal(await page.getAttribute("#greeting", "data-ran"), "yes");
  const png = await screenshot(page);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG");
  assert.equal(png.readUInt32BE(16), 1280, "the viewport's width");
  assert.ok(existsSync(browser.userDataDir), "a profile dir of its own");
  await browser.close();
  assert.equal(existsSync(browser.userDataDir), false, "removed on close");
});

test("openPage gives a page and closes its own browser; a missing binary is LAB_BROWSER_MISSING", async (t) => {
  const url = await servePage(t);
  const probe = await requireBrowser(t);
  if (!probe) return;
  await probe.close();
  const opened = await openPage(url);
  assert.equal(await opened.page.textContent("h1"), "hello from node:http");
  assert.ok((await opened.screenshot({ fullPage: true })).length > 100);
  await opened.close();
  await assert.rejects(launchBrowser({ executablePath: "/nonexistent/chromium" }), (error: unknown) =>
    labErrors.is(error, "LAB_BROWSER_MISSING"),
  );
});
