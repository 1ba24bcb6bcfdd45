import { z } from "zod";

/** The Kubernetes controller (`controller:`). */
export const controllerSchema = z.strictObject({
  /** Namespace watched for LightNodePools; empty means every namespace. */
  namespace: z.string().default(""),
});
export type ControllerConfig = z.infer<typeof controllerSchema>;
