import { z } from "zod";
import { dnsLabel } from "../dnsLabel.js";

/** The Kubernetes controller (`controller:`). */
export const controllerSchema = z.strictObject({
  /** Namespace watched for LightNodePools; empty means every namespace. */
  namespace: z.string().default(""),
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
