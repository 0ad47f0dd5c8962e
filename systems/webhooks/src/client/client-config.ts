/**
 * The cross-field rule every system that publishes to the webhooks service applies to its
 * settings: `WEBHOOKS_URL` needs `WEBHOOKS_API_KEY` beside it — the service takes no event
 * without a tenant's key, so a start without one would publish 401s forever. One rule, one
 * place (metrics and payments both check it at start, through their config's ConfigError).
 *
 * @example
 * const problems = [...webhooksConfigProblems(config), ...ownProblems(config)];
 * if (problems.length > 0) throw new ConfigError(problems);
 */
import type { ConfigProblem } from "@casebook/kit/config";

export function webhooksConfigProblems(config: {
  readonly webhooksUrl?: string | undefined;
  readonly webhooksApiKey?: string | undefined;
}): ConfigProblem[] {
  if (config.webhooksUrl === undefined || config.webhooksApiKey !== undefined) return [];
  return [
    {
      setting: "webhooksApiKey",
      env: "WEBHOOKS_API_KEY",
      source: "missing",
      value: undefined,
      expected: "a webhooks API key (whk_…) when WEBHOOKS_URL is set",
      message:
        "WEBHOOKS_API_KEY is required when WEBHOOKS_URL is set (a key from the webhooks admin API or `npx casebook webhooks new-key`)",
    },
  ];
}
