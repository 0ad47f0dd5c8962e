/**
 * A local HTTP server for outbound clients' tests (infra's outbound client, webhooks'
 * sender): a node:http server on 127.0.0.1 whose paths misbehave on purpose (redirect,
 * never answer, stall the body, huge body with or without a Content-Length, reset in the
 * middle of the body, throttle), recording every request it gets. Plus a TCP server that
 * accepts and never speaks, which stalls a TLS handshake deterministically.
 *
 * | path | answer |
 * |---|---|
 * | `/ok` | 200 `ok <request body length>` |
 * | `/redirect` | 302 to `/target` |
 * | `/throttle` | 503 with `Retry-After: 7` |
 * | `/slow-headers` | nothing, ever (a headers timeout) |
 * | `/slow-body` | a 200 head and a first chunk, then nothing (a body timeout) |
 * | `/big` | 200 with 1 MiB of `x`, Content-Length declared |
 * | `/big-chunked` | 200 with 1 MiB of `x` in 64 KiB chunks, no Content-Length |
 * | `/reset-body` | a 200 head and a first chunk, then the connection is destroyed |
 * | `/reset-headers` | the request is read, then the connection is destroyed: no head |
 *
 * @example
 * const server = await startMisbehavingServer();
 * await client.request({ method: "GET", url: server.url("/slow-body") }); // rejects: body timeout
 * server.received.at(-1)?.path; // "/slow-body"
 * await server.close();
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";

export interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  remoteAddress: string | undefined;
  /** When the whole request had arrived (Date.now()): a receiver's side of a latency. */
  atMs: number;
}

export interface MisbehavingServer {
  port: number;
  url(path: string): string;
  received: Received[];
  close(): Promise<void>;
}

const BIG_BODY_BYTES = 1024 * 1024;
const CHUNK_BYTES = 64 * 1024;

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  switch (req.url) {
    case "/ok":
      res.writeHead(200, { "content-type": "text/plain" }).end(`ok ${body.length}`);
      return;
    case "/redirect":
      res.writeHead(302, { location: "/target" }).end();
      return;
    case "/throttle":
      res.writeHead(503, { "retry-after": "7" }).end("busy");
      return;
    case "/slow-headers":
      return; // never answers: the sender's headers timeout must end it
    case "/slow-body":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("the beginning and then nothing");
      return;
    case "/big":
      res.writeHead(200, { "content-type": "text/plain", "content-length": BIG_BODY_BYTES });
      res.end(Buffer.alloc(BIG_BODY_BYTES, "x"));
      return;
    case "/big-chunked":
      res.writeHead(200, { "content-type": "text/plain" });
      for (let sent = 0; sent < BIG_BODY_BYTES; sent += CHUNK_BYTES)
        res.write(Buffer.alloc(CHUNK_BYTES, "x"));
      res.end();
      return;
    case "/reset-headers":
      res.socket?.destroy();
      return;
    case "/reset-body":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("the beginning and then a reset", () => res.socket?.destroy());
      return;
    default:
      res.writeHead(404).end();
  }
}

function listening<T extends Server | TcpServer>(server: T, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}

/**
 * Starts the server on `host` (default 127.0.0.1), on a free port.
 *
 * @example
 * const server = await startMisbehavingServer(); server.url("/ok"); // "http://127.0.0.1:<port>/ok"
 */
export async function startMisbehavingServer(host = "127.0.0.1"): Promise<MisbehavingServer> {
  const received: Received[] = [];
  const server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({
        path: req.url ?? "",
        headers: req.headers,
        body,
        remoteAddress: req.socket.remoteAddress,
        atMs: Date.now(),
      });
      route(req, res, body);
    });
  });
  const port = await listening(server, host);
  return {
    port,
    url: (path) => `http://${host}:${port}${path}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A TCP server that accepts connections and never sends a byte (a TLS handshake stalls on it).
 *
 * @example
 * const silent = await startSilentServer(); // https://127.0.0.1:<silent.port>/ never connects
 */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {}); // the client destroying its end is expected
    socket.on("close", () => sockets.delete(socket));
  });
  const port = await listening(server, "127.0.0.1");
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
