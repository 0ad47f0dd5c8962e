/**
 * The floor of Node's socket I/O, for the bench: a TCP server that answers `+PONG` to
 * every read without parsing anything. Under unpipelined `PING` traffic (one request per
 * read) it is a correct Redis server, and no Node program using `node:net` can answer
 * faster: what separates it from redis-server is the runtime's per-read and per-write
 * cost (a fresh Buffer per read, stream callbacks, a write request per reply), not ours.
 *
 * @example
 * // node systems/cache/bench/net-floor-server.ts 7100   → then redis-benchmark -p 7100 -t ping_mbulk
 */
import { createServer } from "node:net";

const PONG = Buffer.from("+PONG\r\n");

export function startNetFloorServer(port: number, host = "127.0.0.1") {
  const server = createServer({ noDelay: true }, (socket) => {
    socket.on("data", () => socket.write(PONG));
    socket.on("error", () => socket.destroy());
  });
  return new Promise<typeof server>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host }, () => resolve(server));
  });
}

if (import.meta.main) {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write("usage: net-floor-server.ts <port>\n");
    process.exit(2);
  }
  const server = await startNetFloorServer(port);
  process.once("SIGTERM", () => server.close(() => process.exit(0)));
}
