/**
 * A TCP port that was free a moment ago: bind port 0 on the host, read the port the
 * kernel chose, release it. Another process may take it before the caller binds it,
 * so callers that start a server on it retry on "address in use" (the spawners do).
 *
 * @example
 * const port = await freePort(); // e.g. 43817
 */
import { createServer } from "node:net";

export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close((error) => (error ? reject(error) : resolve(port)));
    });
  });
}
