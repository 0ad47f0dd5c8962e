/**
 * The devices' push tokens (CH-18, CH-22): one per (user, device), replaced when the app
 * registers a new one, deleted when the provider says the token is gone.
 *
 * @example
 * await tokens.register({ userId: "bruno", deviceId: "phone", platform: "fcm", token, nowMs });
 * await tokens.tokensOf(["bruno"]); // [{ userId, deviceId, platform, token }]
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { DeviceToken, PushTokens } from "../domain/push-path.ts";

export class PushTokenStore implements PushTokens {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async register(input: DeviceToken & { nowMs: number }): Promise<void> {
    await this.#db.query(
      `INSERT INTO push_tokens (user_id, device_id, platform, token, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (user_id, device_id) DO UPDATE SET platform = $3, token = $4, updated_at = $5`,
      [input.userId, input.deviceId, input.platform, input.token, new Date(input.nowMs)],
    );
  }

  async tokensOf(userIds: readonly string[]): Promise<DeviceToken[]> {
    if (userIds.length === 0) return [];
    const { rows } = await this.#db.query<{
      user_id: string;
      device_id: string;
      platform: "apns" | "fcm";
      token: string;
    }>("SELECT user_id, device_id, platform, token FROM push_tokens WHERE user_id = ANY($1::text[])", [
      [...userIds],
    ]);
    return rows.map((r) => ({
      userId: r.user_id,
      deviceId: r.device_id,
      platform: r.platform,
      token: r.token,
    }));
  }

  async forget(token: string): Promise<void> {
    await this.#db.query("DELETE FROM push_tokens WHERE token = $1", [token]);
  }
}
