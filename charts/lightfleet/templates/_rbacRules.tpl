{{/* The controller's API calls: pods and their readiness condition, evictions, scaling (and the HPAs and KEDA ScaledObjects it must not fight), pools, nodes, events, leases, the gateway pods. */}}
{{- define "lightfleet.rules.controller" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch]
- apiGroups: [""]
  resources: [pods/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
- apiGroups: [apps]
  resources: [statefulsets/scale, deployments/scale]
  verbs: [get, patch]
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [list]
- apiGroups: [keda.sh]
  resources: [scaledobjects]
  verbs: [list]
- apiGroups: [lightfleet.io]
  resources: [lightnodepools]
  verbs: [list, watch]
- apiGroups: [lightfleet.io]
  resources: [lightnodepools/status, lightnodes/status]
  verbs: [patch]
- apiGroups: [lightfleet.io]
  resources: [lightnodes]
  verbs: [list, create]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create]
{{- end }}

{{/* The controller's calls in the release namespace: its own Lease (by name), created again when it is gone (a create
carries no name RBAC could check, so that rule covers the namespace; without it a deleted Lease left no leader until
the next upgrade), and the gateway pods behind the gateway Service, whose /metrics the autoscaler reads. */}}
{{- define "lightfleet.rules.controllerLocal" -}}
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [{{ include "lightfleet.leaseName" . }}]
  verbs: [get, update]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
{{- if .Values.gateway.enabled }}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
{{- end }}
{{- end }}

{{/* A Role (or ClusterRole) and its binding to a component's ServiceAccount. */}}
{{- define "lightfleet.roleAndBinding" -}}
{{- $kind := ternary "ClusterRole" "Role" .clusterWide }}
{{- /* Cluster-scoped names carry the release namespace: one release name in two namespaces must not share them. */}}
{{- $name := ternary (printf "%s-%s" .root.Release.Namespace .name) .name .clusterWide }}
{{- $ctx := dict "root" .root "component" .component }}
{{- range $object := list $kind (printf "%sBinding" $kind) }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $object }}
metadata:
  name: {{ $name }}
  {{- if not $.clusterWide }}
  namespace: {{ $.namespace }}
  {{- end }}
  labels:
    {{- include "lightfleet.componentLabels" $ctx | nindent 4 }}
{{- if eq $object $kind }}
rules:
  {{- $.rules | nindent 2 }}
{{- else }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ $kind }}
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $.serviceAccount }}
    namespace: {{ $.root.Release.Namespace }}
{{- end }}
{{- end }}
{{- end }}

{{/* Namespaces of the Services whose EndpointSlices the gateway follows: the release's, and any a network names. */}}
{{- define "lightfleet.gatewayNamespaces" -}}
{{- $namespaces := list .Release.Namespace }}
{{- range .Values.networks }}
{{- if and .gateway .gateway.service .gateway.service.namespace }}
{{- $namespaces = append $namespaces .gateway.service.namespace }}
{{- end }}
{{- end }}
{{- $namespaces | uniq | toJson }}
{{- end }}

{{/* The gateway's API calls: the EndpointSlices of each pool's Service. */}}
{{- define "lightfleet.rules.gateway" -}}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
{{- end }}
