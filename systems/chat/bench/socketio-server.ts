/**
 * The bench's peer: a socket.io 4 server with `@socket.io/redis-streams-adapter` (the adapter
 * that supports connection-state recovery), run as its own process like a chat gateway, one
 * per "gateway" slot, all on the same Redis stream. It does the same fan-out as chat without
 * writing anything durable: `join` puts the socket in its rooms, `send` emits the body to
 * the room's other sockets through the adapter (every server reads the stream and delivers to
 * its local members) and acknowledges the sender. `/readyz` answers once the adapter is
 * attached; `/metrics` prints the process's resident memory the way prom-client names it, so
 * the bench reads memory per connection from both sides the same way.
 *
 * @example
 * // PORT=8190 REDIS_URL=redis://127.0.0.1:6379 SIO_STREAM=chat:bench:socket.io node systems/chat/bench/socketio-server.ts
 */
import { createServer } from "node:http";
import { createAdapter } from "@socket.io/redis-streams-adapter";
import { Redis } from "ioredis";
import { Server } from "socket.io";

/** The adapter's stream trim (its default): how far back a recovering client can be replayed. */
const STREAM_MAX_LEN = 10_000;
/** The recovery window of socket.io's connection-state recovery (its documented default). */
const RECOVERY_WINDOW_MS = 2 * 60_000;
const MAX_ROOMS_PER_JOIN = 64;

const port = Number(process.env.PORT ?? "0");
const host = process.env.HOST ?? "127.0.0.1";
const redisUrl = process.env.REDIS_URL;
const streamName = process.env.SIO_STREAM ?? "chat:bench:socket.io";
if (redisUrl === undefined) throw new Error("REDIS_URL is unset: the streams adapter needs Redis");

const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3, connectTimeout: 5_000 });
const http = createServer((req, res) => {
  if (req.url === "/readyz" || req.url === "/healthz") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
  } else if (req.url === "/metrics") {
    res
      .writeHead(200, { "content-type": "text/plain" })
      .end(
        `process_resident_memory_bytes ${process.memoryUsage().rss}\nsio_connections ${io.engine.clientsCount}\n`,
      );
  } else if (!req.url?.startsWith("/socket.io/")) {
    res.writeHead(404).end();
  }
});
const io = new Server(http, {
  transports: ["websocket"],
  serveClient: false,
  perMessageDeflate: false,
  adapter: createAdapter(redis, { streamName, maxLen: STREAM_MAX_LEN }),
  connectionStateRecovery: { maxDisconnectionDuration: RECOVERY_WINDOW_MS, skipMiddlewares: true },
});

interface SendPayload {
  room: string;
  body: string;
}

io.on("connection", (socket) => {
  socket.on("join", (rooms: unknown, ack: unknown) => {
    if (Array.isArray(rooms) && rooms.length <= MAX_ROOMS_PER_JOIN) {
      socket.join(rooms.filter((room): room is string => typeof room === "string"));
    }
    if (typeof ack === "function") ack(true);
  });
  socket.on("send", (payload: SendPayload, ack: unknown) => {
    if (typeof payload?.room === "string" && typeof payload.body === "string") {
      socket.to(payload.room).emit("message", payload.body);
    }
    if (typeof ack === "function") ack(true);
  });
});

http.listen(port, host);
const stop = () => {
  void io.close(() => {
    void redis.quit().finally(() => process.exit(0));
  });
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
