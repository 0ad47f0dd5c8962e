/**
 * Keep-alive agents, one per origin, with bounded sockets (webhooks issue 4, shared by
 * every outbound client since issue 10): reusing a
 * connection saves a TCP and TLS handshake per attempt, and a per-origin socket bound
 * keeps one busy receiver from taking every file descriptor. Origins are bounded too
 * (`origin-lru.ts`): the least recently used idle agent is closed when a new origin would
 * pass the bound.
 * Requests beyond `maxSocketsPerOrigin` wait inside the agent; the outbound client's connect
 * timer runs during that wait, so the wait is bounded as well.
 *
 * @example
 * const pool = new AgentPool({ maxOrigins: 1_000, maxSocketsPerOrigin: 8, idleSocketTimeoutMs: 4_000 });
 * http.request({ …, agent: pool.agentFor(url) });
 * pool.close();
 */
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { OriginLru } from "./origin-lru.ts";

export interface AgentPoolOptions {
  maxOrigins: number;
  maxSocketsPerOrigin: number;
  /**
   * Idle keep-alive sockets close after this; below the common 5 s server default so we
   * rarely reuse a socket the server is closing (a reset, then a needless retry).
   */
  idleSocketTimeoutMs: number;
  /** Extra CAs for https (tests with a self-signed receiver). */
  ca?: string | Buffer;
}

export class AgentPool {
  readonly #agents: OriginLru<HttpAgent>;

  constructor(options: AgentPoolOptions) {
    for (const name of ["maxSocketsPerOrigin", "idleSocketTimeoutMs"] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1)
        throw new RangeError(`${name} must be >= 1`);
    }
    const common = {
      keepAlive: true,
      maxSockets: options.maxSocketsPerOrigin,
      maxFreeSockets: options.maxSocketsPerOrigin,
      timeout: options.idleSocketTimeoutMs,
      scheduling: "lifo" as const,
    };
    const destroy = (agent: HttpAgent) => agent.destroy();
    this.#agents = new OriginLru({
      maxOrigins: options.maxOrigins,
      open: (_origin, url) =>
        url.protocol === "https:"
          ? new HttpsAgent({ ...common, ...(options.ca === undefined ? {} : { ca: options.ca }) })
          : new HttpAgent(common),
      busy: (agent) => Object.keys(agent.sockets).length > 0 || Object.keys(agent.requests).length > 0,
      close: destroy,
      destroy,
    });
  }

  /** The agent for `url`'s origin, created on first use. */
  agentFor(url: URL): HttpAgent {
    return this.#agents.for(url);
  }

  /** Origins holding an agent now. */
  get size(): number {
    return this.#agents.size;
  }

  /** Closes every agent and its sockets. */
  close(): void {
    this.#agents.destroyAll();
  }
}
