/**
 * The SSRF guard at send time (issue 4, architecture rule 8): loopback refused without
 * the allow list, a host name resolving to loopback refused, every address of a name
 * checked, the connection made to the address that was checked, and https by default.
 * The resolver is injected to play a hostile DNS; the receiver is a real local server.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { hostileDns } from "@casebook/lab/hostile-dns";
import { type MisbehavingServer, startMisbehavingServer } from "@casebook/lab/misbehaving-http-server";
import { attemptResultOf, HttpSender } from "../src/clients/http-sender.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";
import { deliveryErrors } from "../src/errors.ts";

const SECRET = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;
const timeouts = { connectMs: 1_000, headersMs: 1_000, bodyMs: 1_000 };
let receiver: MisbehavingServer;

before(async () => {
  receiver = await startMisbehavingServer();
});

after(() => receiver.close());

async function attempt(sender: HttpSender, url: string): Promise<unknown> {
  try {
    return await sender.send({ url, messageId: "msg_guard", body: "{}", secrets: [SECRET] });
  } catch (error) {
    return error;
  } finally {
    sender.close();
  }
}

const refusedAs = (addressClass: string) => (e: unknown) =>
  outboundErrors.is(e, "OUTBOUND_ADDRESS_REFUSED") && e.fields.addressClass === addressClass;

test("loopback is refused without the allow list: nothing reaches the receiver", async () => {
  const before = receiver.received.length;
  const open = createUrlPolicy({ allowHttp: true });
  for (const url of [
    receiver.url("/ok"),
    `http://[::1]:${receiver.port}/ok`,
    `http://[::ffff:127.0.0.1]:${receiver.port}/ok`,
  ]) {
    const error = await attempt(new HttpSender({ policy: open, timeouts }), url);
    assert.ok(deliveryErrors.is(error, "WEBHOOK_URL_FORBIDDEN"), `${url}: ${String(error)}`);
    assert.deepEqual(attemptResultOf(error), { kind: "address_refused", addressClass: "loopback" });
  }
  assert.equal(receiver.received.length, before);
});

test("a host name resolving to 127.0.0.1 is refused at send time, before any connection", async () => {
  const before = receiver.received.length;
  const dns = hostileDns(() => ["127.0.0.1"]);
  const sender = new HttpSender({ policy: createUrlPolicy({ allowHttp: true }), timeouts, resolver: dns });
  const error = await attempt(sender, `http://hooks.test:${receiver.port}/ok`);
  assert.ok(refusedAs("loopback")(error), String(error));
  assert.equal(receiver.received.length, before);
});

test("one forbidden address refuses the whole name (no race between a public and a private answer)", async () => {
  const dns = hostileDns(() => ["8.8.8.8", "169.254.169.254"]);
  const sender = new HttpSender({ policy: createUrlPolicy({ allowHttp: true }), timeouts, resolver: dns });
  const error = await attempt(sender, "http://metadata.test/latest/meta-data");
  assert.ok(refusedAs("link-local")(error), String(error));
});

test("with the allow list the name is reached: one resolution, connected to the checked address, Host kept", async () => {
  const dns = hostileDns((call) => (call === 1 ? ["127.0.0.1"] : ["10.0.0.1"]));
  const policy = createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] });
  const response = await attempt(
    new HttpSender({ policy, timeouts, resolver: dns }),
    `http://hooks.test:${receiver.port}/ok`,
  );
  assert.equal((response as { status: number }).status, 200);
  assert.equal((response as { remoteAddress: string }).remoteAddress, "127.0.0.1");
  assert.equal(dns.calls, 1, "resolved once: the socket connects to what was checked, no second lookup");
  assert.equal(receiver.received.at(-1)!.headers.host, `hooks.test:${receiver.port}`);
  // The rebinding answer comes on the next resolution, and is refused there.
  const error = await attempt(
    new HttpSender({ policy, timeouts, resolver: dns }),
    `http://hooks.test:${receiver.port}/ok`,
  );
  assert.ok(refusedAs("private")(error), String(error));
});

test("https is required unless configured", async () => {
  const strict = createUrlPolicy({ allow: ["127.0.0.1/32"] });
  const error = await attempt(new HttpSender({ policy: strict, timeouts }), receiver.url("/ok"));
  assert.ok(deliveryErrors.is(error, "WEBHOOK_URL_INSECURE"), String(error));
});

const run = promisify(execFile);

test("https end to end: TLS to a resolved, checked address, with the URL's name for SNI and the certificate", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "webhooks-tls-"));
  try {
    try {
      await run("openssl", [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        "/CN=hooks.test",
        "-addext",
        "subjectAltName=DNS:hooks.test",
        "-days",
        "1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ]);
    } catch (error) {
      t.skip(`openssl could not make a test certificate: ${(error as Error).message}`);
      return;
    }
    const [key, cert] = await Promise.all([readFile(join(dir, "key.pem")), readFile(join(dir, "cert.pem"))]);
    const server = createServer({ key, cert }, (_req, res) => res.writeHead(204).end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const policy = createUrlPolicy({ allow: ["127.0.0.1/32"] });
      const dns = hostileDns(() => ["127.0.0.1"]);
      const response = await attempt(
        new HttpSender({ policy, timeouts, resolver: dns, ca: cert }),
        `https://hooks.test:${port}/in`,
      );
      assert.equal((response as { status: number }).status, 204, String(response));
      assert.ok(
        (response as { timings: { connectMs: number } }).timings.connectMs > 0,
        "the handshake is in the connect phase",
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
