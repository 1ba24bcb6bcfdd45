import type { AdminServer } from "../admin/adminServer.js";
import type { Config } from "../config/schema.js";
import type { Controller } from "../controller/controller.js";
import type { Devnet } from "../devnet/devnet.js";
import type { ProcessFleet } from "../fleet/process/processFleet.js";
import type { Logger } from "../log/logger.js";
import type { Scaler } from "../scaling/scaler.js";
import type { RequestCounters } from "../scaling/sources/inProcessGatewaySource.js";
import type { Registry } from "prom-client";

/** `lightfleet up` flags that components may honour. */
export interface UpFlags {
  /** `--port`: the public RPC gateway's port (default gateway.port, 8545). */
  port?: number;
  /** `--admin-port`: the one admin port of every component. */
  adminPort?: number;
}

/**
 * What `up` has built so far, handed to each component in order. A component reads what the earlier ones set and may
 * set its own field for the later ones (the devnet sets `devnet`, the fleet `fleet`, the controller `controller`).
 */
export interface UpContext {
  config: Config;
  /** The config file `up` runs on (absolute), for hints that name it. */
  configFile: string;
  flags: UpFlags;
  logger: Logger;
  /** One registry for every component; served at /metrics on the admin port. */
  registry: Registry;
  /** The one admin server: add readiness/liveness checks and routes to it. */
  admin: AdminServer;
  devnet?: Devnet;
  fleet?: ProcessFleet;
  controller?: Controller;
  /** The public RPC gateway; its request counters feed the autoscaler. */
  gateway?: RequestCounters;
  scaler?: Scaler;
}

/** A line of the start-up banner: what serves where. */
export interface Endpoint {
  label: string;
  url: string;
  note?: string;
}

export interface RunningComponent {
  endpoints?: Endpoint[];
  /** Whether it serves now, for `/readyz` (default: serving once started). */
  ready?: () => { ok: boolean; message?: string };
  /** Stops it cleanly (drain, close connections, stop children). Called in reverse start order. */
  stop(): Promise<void>;
}

/**
 * One part of the single-host system. `start` returns undefined when the config does not ask for this part (no
 * devnet: section, say). Components start in list order and stop in reverse.
 */
export interface UpComponent {
  name: string;
  start(context: UpContext): Promise<RunningComponent | undefined>;
}
