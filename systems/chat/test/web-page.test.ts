/**
 * The web chat page in headless Chromium (playwright-core, Debian's chromium): two browser
 * users talk; one closes the app, the other keeps writing; the first comes back and sees
 * everything once, in order (CH-01, CH-18 by the page's own sync). Edit and delete from the
 * buttons on one's own messages (none on the other's); unread counts in the conversation list;
 * a reload resumes after the cursor kept in sessionStorage. A screenshot is saved.
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

test("CH-01 CH-05 two browser users talk; one goes away and comes back to everything once, in order; edit/delete buttons, unread counts, who is online, a reload resuming after its cursor", async (t) => {
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
  const items = (page: typeof anaPage) => page.locator("#messages li .text").allTextContents();
  const say = async (page: typeof anaPage, text: string) => {
    await page.fill("#text", text);
    await page.click("#send");
  };
  await anaPage.waitForSelector("#status:text('open')");
  await brunoPage.waitForSelector("#status:text('open')");
  // CH-16: each page shows who is online, pushed as the other connects and leaves.
  await anaPage.waitForSelector('#online[data-online="ana,bruno"]');
  await say(anaPage, "oi bruno");
  await brunoPage.waitForSelector("#messages li:nth-child(1)");
  await say(brunoPage, "oi ana");
  await anaPage.waitForSelector("#messages li:nth-child(2)");
  await brunoPage.close(); // bruno closes the app
  await anaPage.waitForSelector('#online[data-online="ana"]');
  assert.equal(await anaPage.textContent("#online"), "online: ana");
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
  // Edit and delete from the buttons on one's own messages; each arrives as an event: the line
  // it names changes, no line is added.
  const firstId = await anaPage.locator("#messages li").first().getAttribute("data-id");
  const lastId = await anaPage.locator("#messages li").last().getAttribute("data-id");
  assert.equal(
    await brunoPage.locator(`#messages li[data-id="${firstId}"] button`).count(),
    0,
    "no buttons on another's message",
  );
  assert.equal(
    await anaPage.locator("#messages li:nth-child(2) button").count(),
    0,
    "nor on bruno's, in ana's page",
  );
  await anaPage.click(`#messages li[data-id="${firstId}"] button.edit`);
  assert.equal(await anaPage.inputValue("#text"), "oi bruno", "the edit starts from the text");
  await anaPage.fill("#text", "olá bruno");
  await anaPage.click("#send");
  await anaPage.click(`#messages li[data-id="${lastId}"] button.delete`);
  await brunoPage.waitForSelector("#messages li:has-text('ana: (deleted)')");
  await brunoPage.waitForSelector("#messages li:has-text('ana: olá bruno (edited)')");
  const changed = [
    "ana: olá bruno (edited)",
    "bruno: oi ana",
    "ana: você sumiu",
    "ana: volta",
    "ana: (deleted)",
  ];
  assert.deepEqual(await items(brunoPage), changed);
  await anaPage.waitForSelector("#messages li:has-text('ana: (deleted)')");
  assert.equal(
    await anaPage.locator(`#messages li[data-id="${lastId}"] button`).count(),
    0,
    "a tombstone has no buttons",
  );

  // Unread counts: ana writes twice in a group with bruno while bruno's page shows their direct chat.
  const { json: group } = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "group",
    title: "trio",
    members: ["bruno", "carla"],
  });
  for (const body of ["um", "dois"]) {
    const sent = await sys.api(ana, "POST", `/v1/conversations/${group.id}/messages`, {
      clientMsgId: crypto.randomUUID(),
      body,
    });
    assert.equal(sent.status, 201);
  }
  await brunoPage.waitForSelector(`#conversations li[data-chat="${group.id}"][data-unread="2"]`);
  assert.match(
    String(await brunoPage.locator(`#conversations li[data-chat="${group.id}"]`).textContent()),
    /trio\s+2 unread/,
  );
  assert.equal(
    await brunoPage.locator(`#conversations li[data-chat="${chat.id}"]`).getAttribute("data-unread"),
    "0",
    "the open conversation is read as it shows",
  );
  assert.deepEqual(await items(brunoPage), changed, "the group's messages are not shown in the direct chat");

  // A reload resumes after the kept cursor (7: five messages, an edit, a delete) and shows the same lines.
  await brunoPage.reload();
  await brunoPage.waitForSelector("#status:text('open')");
  assert.equal(await brunoPage.locator("body").getAttribute("data-resumed-from"), "7");
  assert.deepEqual(await items(brunoPage), changed);
  await say(anaPage, "de volta");
  await brunoPage.waitForSelector("#messages li:nth-child(6)");
  assert.deepEqual(await items(brunoPage), [...changed, "ana: de volta"]);
  const png = await brunoPage.screenshot({ path: join(tmpdir(), "casebook-chat-web-page.png") });
  assert.ok(png.length > 1_000);
});
