import express from "express";
import type { Router } from "express";
import type { ProcessFleet } from "../fleet/process/processFleet.js";

/**
 * Node routes of `up`, on the admin port:
 *   POST /nodes/:node/restart   202 {"node", "network", "restart": "requested"}; 404 {"error"} for an unknown node
 * The controller carries the restart out on its next round (at once: the request triggers one), outside the restart
 * budget; a node in CrashLoop leaves it once Healthy again. `lightfleet node restart NODE` calls it.
 */
export function nodeAdminRouter(fleet: ProcessFleet): Router {
  const router = express.Router();
  router.post("/nodes/:node/restart", (req, res) => {
    const network = fleet.requestRestart(req.params.node);
    if (network === undefined) {
      res.status(404).json({
        error: `no light node named ${req.params.node} (nodes: ${fleet.memberNames().join(", ") || "none"})`,
      });
      return;
    }
    res.status(202).json({ node: req.params.node, network, restart: "requested" });
  });
  router.all("/nodes/{*rest}", (req, res) => {
    res.status(404).json({ error: `no node route ${req.method} ${req.path}` });
  });
  return router;
}
