/**
 * The operator's side of `@casebook/webhooks/client`: the setup another system needs before it
 * can publish — a tenant and its first API key — through the admin API (`/v1/admin/*`, open
 * only when the service runs with `WEBHOOKS_ADMIN_TOKEN`). Same transport, bounds and errors as
 * `WebhooksClient`; creating a tenant is not retried once it may have been sent (unless `id` is
 * given: then a repeat is refused as a duplicate instead of making a second tenant).
 *
 * @example
 * const admin = new WebhooksAdminClient({ url: "http://127.0.0.1:8113", adminToken: process.env.WEBHOOKS_ADMIN_TOKEN! });
 * const { tenant, apiKey } = await admin.createTenant({ name: "metrics alerts" });
 * const webhooks = new WebhooksClient({ url: "http://127.0.0.1:8113", apiKey: apiKey.key });
 * admin.close();
 */
import { ApiTransport, type ApiTransportOptions } from "./api-transport.ts";

export interface WebhooksAdminClientOptions extends Omit<ApiTransportOptions, "bearer"> {
  /** The service's `WEBHOOKS_ADMIN_TOKEN`. */
  readonly adminToken: string;
}

export interface TenantInput {
  readonly name: string;
  /** Default: `ten_<32 hex>`. */
  readonly id?: string;
  /** Share of delivery capacity under weighted fair scheduling. */
  readonly weight?: number;
  /** Retry window of each delivery, ≤ 24 h. */
  readonly deliveryWindowS?: number;
}

export interface CreatedTenant {
  readonly tenant: {
    readonly id: string;
    readonly name: string;
    readonly weight: number;
    readonly createdAt: string;
  };
  /** The tenant's first API key: shown now, never again. */
  readonly apiKey: { readonly key: string; readonly prefix: string };
}

export class WebhooksAdminClient {
  readonly #api: ApiTransport;

  constructor(options: WebhooksAdminClientOptions) {
    const { adminToken, ...transport } = options;
    this.#api = new ApiTransport({ ...transport, bearer: adminToken });
  }

  createTenant(input: TenantInput): Promise<CreatedTenant> {
    return this.#api.call<CreatedTenant>({ method: "POST", path: "/v1/admin/tenants", body: input });
  }

  close(): void {
    this.#api.close();
  }
}
