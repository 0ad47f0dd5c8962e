/**
 * The floors' relay (`relay-floor.ts`, `edge-floor.ts`): one chat request's JSON sent to the
 * provider through an undici pool, and the provider's bytes written to the client as they
 * arrive — the head with the provider's status and content type, each chunk as it comes, the
 * end with the provider's; the client leaving aborts the upstream request. Nothing parsed.
 *
 * @example
 * const { pool, chatPath } = floorUpstream(); // FLOOR_UPSTREAM_URL, the provider's base (…/v1)
 * relayToProvider(pool, chatPath, res, { authorization: "Bearer sk-bench", body });
 */
import type { ServerResponse } from "node:http";
import { Pool } from "undici";

/** The provider's pool and chat path, from `FLOOR_UPSTREAM_URL` (its base, …/v1). */
export function floorUpstream(): { pool: Pool; chatPath: string } {
  const upstream = new URL(process.env.FLOOR_UPSTREAM_URL ?? "http://127.0.0.1:8161/v1");
  return {
    pool: new Pool(upstream.origin, { connections: 1_024 }),
    chatPath: `${upstream.pathname.replace(/\/$/, "")}/chat/completions`,
  };
}

export function relayToProvider(
  pool: Pool,
  path: string,
  res: ServerResponse,
  request: { authorization: string; body: Buffer },
): void {
  pool.dispatch(
    {
      path,
      method: "POST",
      headers: {
        "content-type": "application/json",
        "content-length": String(request.body.length),
        authorization: request.authorization,
      },
      body: request.body,
    },
    {
      onConnect(abort) {
        res.once("close", () => {
          if (!res.writableFinished) abort(new Error("client left"));
        });
      },
      onHeaders(statusCode, rawHeaders, resume) {
        res.on("drain", resume);
        // Raw headers alternate name, value: look at the names only.
        let type = "text/plain";
        for (let i = 0; i + 1 < rawHeaders.length; i += 2)
          if (rawHeaders[i]?.toString("latin1").toLowerCase() === "content-type")
            type = rawHeaders[i + 1]?.toString("latin1") ?? type;
        res.writeHead(statusCode, { "content-type": type });
        return true;
      },
      onData: (chunk) => res.write(chunk),
      onComplete: () => res.end(),
      onError: () => res.destroy(),
    },
  );
}
