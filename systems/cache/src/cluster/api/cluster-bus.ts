/**
 * The cluster bus listener: the port peers connect to for gossip, votes, replication
 * and key migration (Redis's cluster bus, by default the client port + 10000). It only
 * accepts and wraps connections; the runtime decides what each link carries.
 *
 * @example
 * const bus = new ClusterBusServer({ host: "127.0.0.1", port: 17000, onLink: (link) => runtime.adopt(link) });
 * const port = await bus.listen();
 * await bus.close();
 */
import { createServer, type Server } from "node:net";
import { BusLink, type BusLinkOptions } from "./cluster-bus-link.ts";

export interface ClusterBusOptions extends BusLinkOptions {
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Inbound links open at once; past it new ones are refused (a bound on peers and tools). */
  readonly maxLinks?: number;
  readonly onLink: (link: BusLink) => void;
}

export const DEFAULT_MAX_BUS_LINKS = 1_024;

export class ClusterBusServer {
  readonly #options: ClusterBusOptions;
  readonly #server: Server;
  readonly #links = new Set<BusLink>();

  constructor(options: ClusterBusOptions) {
    this.#options = options;
    this.#server = createServer({ noDelay: true, keepAlive: true }, (socket) => {
      if (this.#links.size >= (options.maxLinks ?? DEFAULT_MAX_BUS_LINKS)) {
        socket.destroy();
        return;
      }
      const link = new BusLink(socket, true, options);
      this.#links.add(link);
      socket.once("close", () => this.#links.delete(link));
      options.onLink(link);
    });
  }

  get linkCount(): number {
    return this.#links.size;
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen({ host: this.#options.host, port: this.#options.port, exclusive: true }, () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const address = this.#server.address();
    return typeof address === "object" && address !== null ? address.port : 0;
  }

  /** Stops accepting and drops every inbound link. */
  async close(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const link of this.#links) link.close();
    await stopped;
  }
}
