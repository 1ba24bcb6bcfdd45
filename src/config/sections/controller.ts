import { z } from "zod";
import { dnsLabel } from "../dnsLabel.js";

/** The Kubernetes controller (`controller:`). */
export const controllerSchema = z.strictObject({
  /** Namespace watched for LightNodePools; empty means every namespace. */
  namespace: z.string().default(""),
  /**
   * Label selector of the LightNodePools this controller runs (`lightfleet.io/class=prod`), as an IngressClass picks
   * Ingresses: several controllers (releases) share a cluster, each taking only its own pools. Empty: every pool seen.
   */
  poolSelector: z.string().default(""),
  /** The Lease through which the controller's replicas elect the one that acts (in the controller's namespace). */
  lease: z
    .strictObject({
      /** One per release: two releases on one Lease would let only one of them act. */
      name: dnsLabel.default("lightfleet-controller"),
      /** Set on the Lease when the controller creates it, and added to one it takes. */
      labels: z.record(z.string(), z.string()).default({}),
    })
    .prefault({}),
  /**
   * The gateway's Service: for `scaling.source: gateway`, the controller scrapes the `/metrics` of each ready gateway
   * pod behind it (found through its EndpointSlices). Without it, pools that read the gateway get no rate and are
   * never scaled down.
   */
  gatewayService: z
    .strictObject({
      name: dnsLabel,
      /** Defaults to the controller's own namespace (POD_NAMESPACE), else `default`. */
      namespace: dnsLabel.optional(),
      /** Service port name of the gateway's admin endpoint (`/metrics`). */
      port: z.string().min(1).default("admin"),
    })
    .optional(),
});
export type ControllerConfig = z.infer<typeof controllerSchema>;
