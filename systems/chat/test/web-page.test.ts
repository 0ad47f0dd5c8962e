/**
 * The web chat page in headless Chromium (playwright-core, Debian's chromium): two browser
 * users talk; one closes the app, the other keeps writing; the first comes back and sees
 * everything once, in order (CH-01, CH-18 by the page's own sync). A screenshot is saved.
 */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { requireBrowser } from "@casebook/lab/browser";
import { startSystem, type TestSystem } from "./system-fixture.ts";

let sys: TestSystem;
before(async () => {
  sys = await startSystem();
});
after(async () => {
  await sys?.close();
});

test("CH-01 two browser users talk; one goes away and comes back to everything once, in order", async (t) => {
  const browser = await requireBrowser(t);
  if (!browser) return;
  const ana = await sys.token("ana", "browser");
  const bruno = await sys.token("bruno", "browser");
  const { json: chat } = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["bruno"],
  });
  const pageUrl = (token: string) => `${sys.running.url}/app#token=${token}&chat=${chat.id}`;
  const anaPage = await browser.openPage(pageUrl(ana));
  let brunoPage = await browser.openPage(pageUrl(bruno));
  const items = (page: typeof anaPage) => page.locator("#messages li").allTextContents();
  const say = async (page: typeof anaPage, text: string) => {
    await page.fill("#text", text);
    await page.click("#send");
  };
  await anaPage.waitForSelector("#status:text('open')");
  await brunoPage.waitForSelector("#status:text('open')");
  await say(anaPage, "oi bruno");
  await brunoPage.waitForSelector("#messages li:nth-child(1)");
  await say(brunoPage, "oi ana");
  await anaPage.waitForSelector("#messages li:nth-child(2)");
  await brunoPage.close(); // bruno closes the app
  for (const text of ["você sumiu", "volta", "três"]) await say(anaPage, text);
  await anaPage.waitForSelector("#messages li:nth-child(5)");
  brunoPage = await browser.openPage(pageUrl(bruno)); // and opens it again
  await brunoPage.waitForSelector("#messages li:nth-child(5)");
  const expected = ["ana: oi bruno", "bruno: oi ana", "ana: você sumiu", "ana: volta", "ana: três"];
  assert.deepEqual(await items(brunoPage), expected);
  assert.deepEqual(await items(anaPage), expected);
  const seqs = await brunoPage
    .locator("#messages li")
    .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-seq")));
  assert.deepEqual(seqs, ["1", "2", "3", "4", "5"]);
  // Edit and delete arrive as events: the line they name changes, no line is added.
  const firstId = await anaPage.locator("#messages li").first().getAttribute("data-id");
  const lastId = await anaPage.locator("#messages li").last().getAttribute("data-id");
  const messages = `/v1/conversations/${chat.id}/messages`;
  const edited = await sys.api(ana, "PUT", `${messages}/${firstId}`, {
    clientMsgId: crypto.randomUUID(),
    body: "olá bruno",
  });
  assert.equal(edited.status, 201);
  assert.equal((await sys.api(ana, "DELETE", `${messages}/${lastId}`)).status, 201);
  await brunoPage.waitForSelector("#messages li:text('ana: (deleted)')");
  await brunoPage.waitForSelector("#messages li:text('ana: olá bruno (edited)')");
  assert.equal((await items(brunoPage)).length, 5);
  const png = await brunoPage.screenshot({ path: join(tmpdir(), "casebook-chat-web-page.png") });
  assert.ok(png.length > 1_000);
});
