//go:build tools

// Package controlplane pins the Kubernetes control plane that the cluster tests run against, and the kubelet that
// runs their pods in real containers. Nothing here is part of lightfleet: test/support/kube/controlPlaneBinaries.ts
// builds these commands once per version into a cache outside the work tree.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
