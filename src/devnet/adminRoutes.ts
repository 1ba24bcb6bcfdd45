import express from "express";
import type { NextFunction, Request, Response, Router } from "express";
import type { Devnet } from "./devnet.js";
import { DevnetInputError } from "./errors.js";
import { parseFault } from "./faults.js";

export interface DevnetRouterOptions {
  /**
   * Heal of a node the devnet does not drive now (in `up`, a light node that is down and detached, e.g. one left in
   * CrashLoop): asks its owner to start it again. Returns false when there is no such node.
   */
  restartUndriven?: (node: string) => boolean;
}

/**
 * Devnet admin routes, mounted on the admin port by `lightfleet up` and `lightfleet devnet`:
 *   GET  /devnet/status          nodes, heads and faults
 *   POST /devnet/faults/:node    {"kind": "lag"|"slow"|"stall"|"fork"|"kill"|"heal", "blocks"?: N,
 *                                 "profile"?: "light"|"mild"|"severe", "seed"?: N}  (blocks: lag; profile, seed: slow)
 *   POST /devnet/mine            {"network"?: NAME}: one block now
 *   POST /devnet/reorg           {"network": NAME, "depth": N}: replace the newest N blocks
 * Errors are JSON {"error": message}: 400 bad input, 404 unknown node or network or route, 500 a failure to act.
 */
export function devnetAdminRouter(devnet: Devnet, options: DevnetRouterOptions = {}): Router {
  const router = express.Router();
  // Every body here is JSON, whatever its content type says: `curl -d` sends form-urlencoded, and some clients none.
  router.use("/devnet", express.json({ limit: "16kb", strict: false, type: () => true }));

  router.get("/devnet/status", (_req, res) => {
    res.json(devnet.status());
  });

  router.post("/devnet/faults/:node", async (req: Request<{ node: string }>, res, next) => {
    try {
      const fault = parseFault(req.body);
      const driven = devnet.status().nodes.some((n) => n.name === req.params.node);
      if (!driven && fault.kind === "heal" && options.restartUndriven?.(req.params.node)) {
        res.json({ node: req.params.node, applied: fault, status: null, restart: "requested" });
        return;
      }
      await devnet.fault(req.params.node, fault);
      const node = devnet.status().nodes.find((n) => n.name === req.params.node) ?? null;
      res.json({ node: req.params.node, applied: fault, status: node });
    } catch (error) {
      next(error);
    }
  });

  router.post("/devnet/mine", async (req, res, next) => {
    try {
      const body: unknown = req.body ?? {};
      const network = body && typeof body === "object" ? (body as { network?: unknown }).network : undefined;
      if (network !== undefined && typeof network !== "string") {
        throw new DevnetInputError("network must be a network name");
      }
      await devnet.mine(network);
      res.json({ networks: devnet.status().networks });
    } catch (error) {
      next(error);
    }
  });

  router.post("/devnet/reorg", async (req, res, next) => {
    try {
      const body: unknown = req.body;
      if (!body || typeof body !== "object" || Array.isArray(body)) {
        throw new DevnetInputError('expected a JSON object such as {"network": "devnet", "depth": 2}');
      }
      const { network, depth } = body as { network?: unknown; depth?: unknown };
      if (typeof network !== "string") throw new DevnetInputError("network must be a network name");
      if (typeof depth !== "number") throw new DevnetInputError("depth must be a number of blocks");
      const head = await devnet.reorg(network, depth);
      res.json({ network, depth, head });
    } catch (error) {
      next(error);
    }
  });

  router.all("/devnet/{*rest}", (req, res) => {
    res.status(404).json({ error: `no devnet route ${req.method} ${req.path}` });
  });

  router.use("/devnet", (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { status, message } = describeError(error, req.path);
    res.status(status).json({ error: message });
  });
  return router;
}

/** What each route's body looks like, for the message about a body that is not JSON. */
const BODY_EXAMPLES: Array<[RegExp, string]> = [
  [/^\/faults\//, '{"kind": "lag", "blocks": 5}'],
  [/^\/reorg/, '{"network": "devnet", "depth": 2}'],
  [/^\/mine/, '{"network": "devnet"}'],
];

function describeError(error: unknown, path: string): { status: number; message: string } {
  if (error instanceof DevnetInputError) return { status: error.status, message: error.message };
  const e = error as { type?: string; status?: number; message?: string };
  if (e?.type === "entity.parse.failed") {
    const example = BODY_EXAMPLES.find(([route]) => route.test(path))?.[1];
    return {
      status: 400,
      message: `the body is not valid JSON${example ? `: expected a JSON object such as ${example}` : ""}`,
    };
  }
  if (e?.type === "entity.too.large") return { status: 413, message: "the body is too large" };
  if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
    return { status: e.status, message: e.message ?? "bad request" };
  }
  return { status: 500, message: `the devnet could not do it: ${e?.message ?? String(error)}` };
}
