import { ApiException, AutoscalingV2Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import type { HorizontalPodAutoscalerLike, ScaledObjectLike } from "../../scaling/scalingConflicts.js";

export interface Autoscalers {
  horizontalPodAutoscalers: HorizontalPodAutoscalerLike[];
  scaledObjects: ScaledObjectLike[];
}

/**
 * Lists the HPAs (autoscaling/v2) and KEDA ScaledObjects (keda.sh/v1alpha1) of a namespace, for
 * findScalingConflicts. A cluster without KEDA (404 on scaledobjects) has none; any other failure throws, and the
 * caller should then not scale (it cannot tell whether another autoscaler owns the workload).
 * RBAC: `list` on autoscaling horizontalpodautoscalers and keda.sh scaledobjects.
 */
export async function listAutoscalers(kubeConfig: KubeConfig, namespace: string): Promise<Autoscalers> {
  const [hpas, scaledObjects] = await Promise.all([
    makeApiClient(kubeConfig, AutoscalingV2Api).listNamespacedHorizontalPodAutoscaler({ namespace }),
    makeApiClient(kubeConfig, CustomObjectsApi)
      .listNamespacedCustomObject({
        group: "keda.sh",
        version: "v1alpha1",
        namespace,
        plural: "scaledobjects",
      })
      .then(
        (list: { items?: ScaledObjectLike[] }) => list.items ?? [],
        (error: unknown) => {
          if (error instanceof ApiException && error.code === 404) return [];
          throw error;
        },
      ),
  ]);
  return { horizontalPodAutoscalers: hpas.items, scaledObjects };
}
