/**
 * Keep-alive agents, one per origin, with bounded sockets (webhooks issue 4, shared by
 * every outbound client since issue 10): reusing a
 * connection saves a TCP and TLS handshake per attempt, and a per-origin socket bound
 * keeps one busy receiver from taking every file descriptor. Origins are bounded too:
 * the least recently used idle agent is closed when a new origin would pass the bound.
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
  readonly #options: AgentPoolOptions;
  /** Insertion order is recency: agentFor moves an origin to the end. */
  readonly #agents = new Map<string, HttpAgent>();

  constructor(options: AgentPoolOptions) {
    for (const name of ["maxOrigins", "maxSocketsPerOrigin", "idleSocketTimeoutMs"] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1)
        throw new RangeError(`${name} must be >= 1`);
    }
    this.#options = options;
  }

  /** The agent for `url`'s origin, created on first use. */
  agentFor(url: URL): HttpAgent {
    const origin = url.origin;
    const known = this.#agents.get(origin);
    if (known !== undefined) {
      this.#agents.delete(origin);
      this.#agents.set(origin, known);
      return known;
    }
    this.#evictIdle();
    const common = {
      keepAlive: true,
      maxSockets: this.#options.maxSocketsPerOrigin,
      maxFreeSockets: this.#options.maxSocketsPerOrigin,
      timeout: this.#options.idleSocketTimeoutMs,
      scheduling: "lifo" as const,
    };
    const agent =
      url.protocol === "https:"
        ? new HttpsAgent({ ...common, ...(this.#options.ca === undefined ? {} : { ca: this.#options.ca }) })
        : new HttpAgent(common);
    this.#agents.set(origin, agent);
    return agent;
  }

  /** Origins holding an agent now. */
  get size(): number {
    return this.#agents.size;
  }

  /** Closes every agent and its sockets. */
  close(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  /** Closes least recently used agents with no request in flight until there is room. */
  #evictIdle(): void {
    for (const [origin, agent] of this.#agents) {
      if (this.#agents.size < this.#options.maxOrigins) return;
      const busy = Object.keys(agent.sockets).length > 0 || Object.keys(agent.requests).length > 0;
      if (busy) continue;
      agent.destroy();
      this.#agents.delete(origin);
    }
    // Every agent busy: go over the bound rather than kill in-flight attempts; the
    // caller's in-flight bound caps how far (at most one origin per in-flight call).
  }
}
