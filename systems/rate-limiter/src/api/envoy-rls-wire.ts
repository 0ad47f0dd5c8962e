/**
 * The wire contract of Envoy's v3 rate limit service: where our .proto subset lives,
 * how it is loaded, and the message shapes as proto-loader hands them to us.
 */
import { fileURLToPath } from "node:url";
import type * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

// ---------------------------------------------------------------- wire contract

/** Where the .proto files live and which one declares the service. */
export const ENVOY_RLS_PROTO = {
  includeDir: fileURLToPath(new URL("./proto", import.meta.url)),
  file: "envoy/service/ratelimit/v3/rls.proto",
} as const;

/**
 * proto-loader options shared by the server and test clients: snake_case field names
 * as on the wire, uint64 as strings (no precision loss), enums by name, and absent
 * fields left undefined so an unset `hits_addend` wrapper is told apart from 0.
 */
export const ENVOY_RLS_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
};

export type EnvoyCode = "UNKNOWN" | "OK" | "OVER_LIMIT";
export type EnvoyUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "MONTH" | "YEAR";

/** A decoded request descriptor; uint64 `hits_addend` arrives as a decimal string. */
export interface RlsDescriptor {
  entries?: { key?: string; value?: string }[];
  hits_addend?: { value?: string } | null;
}

/** A decoded RateLimitRequest (absent fields are undefined). */
export interface RlsRequest {
  domain?: string;
  descriptors?: RlsDescriptor[];
  hits_addend?: number;
}

export interface RlsDescriptorStatus {
  code: EnvoyCode;
  current_limit?: { name: string; requests_per_unit: number; unit: EnvoyUnit };
  limit_remaining?: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface RlsResponse {
  overall_code: EnvoyCode;
  statuses: RlsDescriptorStatus[];
  response_headers_to_add: { key: string; value: string }[];
}

/**
 * The RateLimitService definition, loaded from our .proto files.
 *
 * @example
 * const Client = grpc.makeGenericClientConstructor(loadEnvoyRlsService(), "RateLimitService");
 */
export function loadEnvoyRlsService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(ENVOY_RLS_PROTO.file, {
    ...ENVOY_RLS_LOADER_OPTIONS,
    includeDirs: [ENVOY_RLS_PROTO.includeDir],
  });
  const service = definition["envoy.service.ratelimit.v3.RateLimitService"];
  if (service === undefined || "format" in service)
    throw new Error("RateLimitService missing from rls.proto");
  return service as unknown as grpc.ServiceDefinition;
}
