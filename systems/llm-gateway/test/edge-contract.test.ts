/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * the gateway started by main() as in production, pointed at the provider simulator — in
 * OpenAI's error shape, which is what clients get on /v1/chat/completions (the shared edge
 * with infra's per-path error format, `api/error-formats.ts`). What a refused request must
 * not change: the provider's count of requests (nothing was sent upstream).
 */
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let fixture: GatewayFixture | undefined;

edgeContractSuite({
  name: "llm-gateway",
  open: async () => {
    const f = await startGateway();
    fixture = f;
    return {
      subject: {
        service: f.gateway.service,
        stateProbe: async () =>
          ((await (await fetch(`${f.simUrl}/admin/stats`)).json()) as { requests: number }).requests,
      },
      close: () => f.close(),
    };
  },
  write: {
    method: "POST",
    url: "/v1/chat/completions",
    body: {
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 3,
      stream: false,
      temperature: 0,
    },
  },
  fields: {
    "/model": "string",
    "/messages": "array",
    "/max_tokens": "integer",
    "/stream": "boolean",
    "/temperature": "number",
  },
  stringField: "/messages/0/content",
  bodyLimitBytes: 1_048_576,
  wrongMethod: { method: "PUT", allow: "POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${fixture?.apiKey}`,
    wrong: "Bearer llm_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
  },
  errorShape: {
    contentType: /^application\/json/,
    read: (body) => {
      const error = (body as { error: { status: number; code: string; errors?: unknown } }).error;
      return { status: error.status, code: error.code.toUpperCase(), errors: error.errors };
    },
  },
});
