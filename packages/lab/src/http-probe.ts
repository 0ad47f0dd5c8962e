/**
 * One bounded HTTP request on 127.0.0.1, for spawners' readiness checks and tests' first
 * request: resolves the status, headers and body, or undefined when the connection fails,
 * closes or times out (a probe never throws).
 *
 * @example
 * const answer = await httpProbe(port, "/-/ready", { timeoutMs: 1_000 });
 * answer?.status; // 200
 */
import { request } from "node:http";

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface HttpProbeOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Bound on the whole exchange. Default 1 000 ms. */
  timeoutMs?: number;
  /** Bytes of body kept. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** See the module's example. */
export function httpProbe(
  port: number,
  path: string,
  options: HttpProbeOptions = {},
): Promise<HttpAnswer | undefined> {
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        headers: options.headers,
        agent: false,
        timeout: options.timeoutMs ?? 1_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          if (size < maxBody) chunks.push(chunk);
          size += chunk.length;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).subarray(0, maxBody).toString("utf8"),
          }),
        );
        res.on("error", () => resolve(undefined));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end(options.body);
  });
}
