/**
 * A local webhook receiver for the sender's tests: a node:http server on 127.0.0.1 whose
 * paths misbehave on purpose (redirect, never answer, stall the body, huge body,
 * throttle), recording every request it gets. Plus a TCP server that accepts and never
 * speaks, which stalls a TLS handshake deterministically.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";

export interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  remoteAddress: string | undefined;
}

export interface Receiver {
  port: number;
  url(path: string): string;
  received: Received[];
  close(): Promise<void>;
}

const BIG_BODY_BYTES = 1024 * 1024;

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

/** Starts the receiver on `host` (default 127.0.0.1). */
export async function startReceiver(host = "127.0.0.1"): Promise<Receiver> {
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

/** A TCP server that accepts connections and never sends a byte (a TLS handshake stalls on it). */
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
