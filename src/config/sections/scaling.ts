import { z } from "zod";

/** Autoscaling of one pool (`networks[].scaling:`). */
export const scalingSchema = z.strictObject({
  minReplicas: z.number().int().min(0).default(1),
  maxReplicas: z.number().int().min(1).default(10),
});
export type ScalingConfig = z.infer<typeof scalingSchema>;
