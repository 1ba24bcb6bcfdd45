/**
 * `npm run controlplane` (part of `npm test`): builds the pinned kube-apiserver, kube-controller-manager, etcd and kubelet once
 * into ~/.cache/lightfleet, or reuses them. Without Go it fails in CI and only warns elsewhere (the real-cluster
 * tests then skip with the same message).
 */
import { controlPlaneCacheDir, ensureControlPlane, missingGo } from "./controlPlaneBinaries.js";

const goMissing = await missingGo();
if (goMissing) {
  console.error(`controlplane: ${goMissing}`);
  process.exit(process.env.CI ? 1 : 0);
}
const started = Date.now();
const binaries = await ensureControlPlane((line) => console.log(`controlplane: ${line}`));
console.log(
  `controlplane: Kubernetes ${binaries.kubernetesVersion} ready in ${controlPlaneCacheDir()} (${Math.round((Date.now() - started) / 1000)} s)`,
);
