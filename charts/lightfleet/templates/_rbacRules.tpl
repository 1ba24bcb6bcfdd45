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
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
{{- if .Values.gateway.enabled }}
{{- /* The gateway pods behind the gateway Service, whose /metrics the autoscaler reads. */}}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
{{- end }}
{{- end }}

{{/* The gateway's API calls: the EndpointSlices of each pool's Service. */}}
{{- define "lightfleet.rules.gateway" -}}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
{{- end }}
