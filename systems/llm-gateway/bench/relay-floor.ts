/**
 * The bench's floor: the least a Node gateway can be — node:http in, undici out (the same
 * client our gateway uses), the request's JSON read and written again (a gateway must read
 * the model to route it), the provider's bytes relayed as they arrive. No edge (no key, no
 * validation, no request id), no routing, no accounting, no SSE parsing. What it adds to the
 * direct call is what one more Node process on the path costs here; what our gateway adds
 * beyond it is ours. Its own process, started by the bench like the others (PORT, HOST, and
 * `/readyz` for the readiness poll); `FLOOR_UPSTREAM_URL` is the provider's base (…/v1).
 *
 * @example
 * // FLOOR_UPSTREAM_URL=http://127.0.0.1:8161/v1 PORT=8163 node systems/llm-gateway/bench/relay-floor.ts
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { floorUpstream, relayToProvider } from "./floor-relay.ts";

const { pool, chatPath } = floorUpstream();

function relay(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  let out: Buffer;
  try {
    out = Buffer.from(JSON.stringify(JSON.parse(body.toString("utf8"))));
  } catch {
    res.writeHead(400).end();
    return;
  }
  relayToProvider(pool, chatPath, res, { authorization: req.headers.authorization ?? "", body: out });
}

const server = createServer((req, res) => {
  if (req.url === "/readyz") {
    res.writeHead(200).end("ok");
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => relay(req, res, Buffer.concat(chunks)));
});
server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1");
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void pool.close().finally(() => process.exit(0));
});
