{{/* Chart name, truncated to fit Kubernetes name limits. */}}
{{- define "lightfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource name prefix: <release>-lightfleet, or the release name when it already contains the chart name. */}}
{{- define "lightfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lightfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that never change over an upgrade: used in selectors. */}}
{{- define "lightfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lightfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object; the chart version stays out of selectors. */}}
{{- define "lightfleet.labels" -}}
helm.sh/chart: {{ include "lightfleet.chart" . }}
{{ include "lightfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: lightfleet
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of a pod template besides its selector labels: commonLabels with the component's podLabels over them.
Call with (dict "root" $ "podLabels" .Values.gateway.podLabels). */}}
{{- define "lightfleet.podExtraLabels" -}}
{{- with mustMergeOverwrite (deepCopy (default dict .root.Values.commonLabels)) (deepCopy (default dict .podLabels)) }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Labels and selector labels of one component: call with (dict "root" $ "component" "gateway"). */}}
{{- define "lightfleet.componentLabels" -}}
{{ include "lightfleet.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- define "lightfleet.componentSelectorLabels" -}}
{{ include "lightfleet.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "lightfleet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* ServiceAccount name of a component: (dict "root" $ "component" "controller" "sa" .Values.controller.serviceAccount) */}}
{{- define "lightfleet.serviceAccountName" -}}
{{- if .sa.create }}
{{- default (printf "%s-%s" (include "lightfleet.fullname" .root) .component) .sa.name }}
{{- else }}
{{- default "default" .sa.name }}
{{- end }}
{{- end }}

{{/* The namespace the controller watches: its own, or every namespace with rbac.clusterWide. */}}
{{- define "lightfleet.watchNamespace" -}}
{{- if .Values.rbac.clusterWide }}{{ "" }}{{ else }}{{ .Release.Namespace }}{{ end }}
{{- end }}

{{/* One network of the lightfleet config: the config-format keys of a networks[] entry, chart-only keys left out. */}}
{{- define "lightfleet.configNetwork" -}}
{{- $network := dict "name" .name }}
{{- range $key := list "preset" "chainId" "blockTime" "health" "gateway" "scaling" }}
{{- if hasKey $ $key }}
{{- $_ := set $network $key (get $ $key) }}
{{- end }}
{{- end }}
{{- $peers := list }}
{{- range .reservedPeers }}
{{- $peers = append $peers (omit . "enode") }}
{{- end }}
{{- $_ := set $network "reservedPeers" $peers }}
{{- toYaml $network }}
{{- end }}

{{/* The shared lightfleet config file (lightfleet's own YAML format, checked by `lightfleet config check`). */}}
{{- define "lightfleet.config" -}}
{{- $networks := list }}
{{- range .Values.networks }}
{{- $network := include "lightfleet.configNetwork" . | fromYaml }}
{{- /* The chart-wide target per node, as the LightNodePool gets it. */}}
{{- $scaling := default dict $network.scaling }}
{{- if not (hasKey $scaling "targetRequestsPerNode") }}
{{- $_ := set $scaling "targetRequestsPerNode" $.Values.autoscaling.targetRequestsPerNode }}
{{- end }}
{{- $_ := set $network "scaling" $scaling }}
{{- if ne (include "lightfleet.autoscalingMode" $) "controller" }}
{{- /* Another autoscaler (or nobody) sizes the pools; the controller still exports the rate and desired size. */}}
{{- $_ := set $network "scaling" (merge (dict "enabled" false) (default dict $network.scaling)) }}
{{- end }}
{{- $w := include "lightfleet.workload" (dict "root" $ "network" .) | fromYaml }}
{{- $gateway := default dict $network.gateway }}
{{- if and $w.enabled (not $gateway.upstreams) (not $gateway.service) }}
{{- /* The gateway reaches the pool through its Service, which lists only in-sync pods (the readiness gate): by
its EndpointSlices (each pod an upstream), or by its one address. */}}
{{- if eq $.Values.gateway.upstreamDiscovery "endpointslices" }}
{{- $_ := set $gateway "service" (dict "name" (include "lightfleet.nodeName" (dict "root" $ "network" .)) "namespace" $.Release.Namespace) }}
{{- else }}
{{- $svc := printf "%s.%s.svc" (include "lightfleet.nodeName" (dict "root" $ "network" .)) $.Release.Namespace }}
{{- $upstream := dict "name" (include "lightfleet.nodeName" (dict "root" $ "network" .)) "http" (printf "http://%s:%v" $svc $w.ports.http) "ws" (printf "ws://%s:%v" $svc (default $w.ports.http $w.ports.ws)) }}
{{- $_ := set $gateway "upstreams" (list $upstream) }}
{{- end }}
{{- $_ := set $network "gateway" $gateway }}
{{- end }}
{{- $networks = append $networks $network }}
{{- end }}
{{- $base := dict
  "dataDir" "/data"
  "admin" (dict "host" "0.0.0.0" "port" (int .Values.adminPort))
  "gateway" (dict "host" "0.0.0.0" "port" (int .Values.gateway.port) "workers" (include "lightfleet.gatewayWorkers" . | fromJson).workers "shutdownDelay" (printf "%ds" (int .Values.gateway.shutdownDelaySeconds)) "sharedState" (include "lightfleet.gatewaySharedStateConfig" . | fromJson))
  "keys" (dict "host" "0.0.0.0" "port" (int .Values.keys.port))
  "controller" (dict
    "namespace" (include "lightfleet.watchNamespace" .)
    "poolSelector" (printf "lightfleet.io/class=%s" (include "lightfleet.poolClass" .))
    "lease" (dict "name" (include "lightfleet.leaseName" .) "labels" (include "lightfleet.componentSelectorLabels" (dict "root" . "component" "controller") | fromYaml)))
}}
{{- if .Values.gateway.enabled }}
{{- /* The autoscaler's `source: gateway` scrapes the gateway pods found behind this Service. */}}
{{- $_ := set $base.controller "gatewayService" (dict "name" (printf "%s-gateway-admin" (include "lightfleet.fullname" .)) "namespace" .Release.Namespace "port" "admin") }}
{{- end }}
{{- if and .Values.keys.enabled .Values.keys.ingress.enabled }}
{{- /* The chart's ingress fronts the key API: its X-Forwarded-For and -Proto are the client's (the login throttle
counts per client, the page's origin check sees https). config.keys.trustProxy, when given, wins. */}}
{{- $_ := set $base.keys "trustProxy" 1 }}
{{- end }}
{{- $config := mustMergeOverwrite $base (deepCopy .Values.config) }}
{{- $_ := set $config "networks" $networks }}
{{- toYaml $config }}
{{- end }}

{{/* A network's light-node workload values: workloadDefaults with the network's `workload` merged over them. */}}
{{- define "lightfleet.workload" -}}
{{- toYaml (mustMergeOverwrite (deepCopy .root.Values.workloadDefaults) (deepCopy (default dict .network.workload))) }}
{{- end }}

{{- define "lightfleet.nodeName" -}}
{{- printf "%s-%s" (include "lightfleet.fullname" .root) .network.name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Settings every lightfleet container shares: image, security, config mount, admin port and probes. */}}
{{- define "lightfleet.containerCommon" -}}
image: {{ include "lightfleet.image" .root | quote }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
securityContext:
  {{- toYaml .root.Values.securityContext | nindent 2 }}
{{- $values := get .root.Values (ternary "keys" .component (eq .component "keys-api")) }}
{{- $probes := mustMergeOverwrite (deepCopy .root.Values.probes) (deepCopy (default dict $values.probes)) }}
startupProbe:
  httpGet:
    path: /healthz
    port: admin
  {{- toYaml $probes.startup | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: admin
  {{- toYaml $probes.liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: admin
  {{- toYaml $probes.readiness | nindent 2 }}
{{- end }}

{{/* Environment of every lightfleet container. */}}
{{- define "lightfleet.env" -}}
- name: LIGHTFLEET_DATA_DIR
  value: /data
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/* Config, data and tmp volumes: the root filesystem stays read-only. */}}
{{- define "lightfleet.volumeMounts" -}}
- name: config
  mountPath: /etc/lightfleet
  readOnly: true
- name: data
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- end }}
{{- define "lightfleet.configVolume" -}}
- name: config
  configMap:
    name: {{ include "lightfleet.fullname" . }}-config
- name: tmp
  emptyDir: {}
{{- end }}

{{/* Pod annotations that roll a component's pods when the part of the config it reads changes: call with (dict "root" $
"component" "controller"). The controller reads its pools from the LightNodePools (a network change reaches it there,
with no restart and no leader change), the gateway the networks, the key API neither; so a health tweak never
restarts the key API. */}}
{{- define "lightfleet.configChecksum" -}}
{{- $config := include "lightfleet.config" .root | fromYaml }}
{{- $unread := dict "controller" (list "networks" "gateway" "keys") "gateway" (list "controller" "keys") "keys-api" (list "networks" "gateway" "controller") }}
{{- $skip := get $unread .component }}
{{- $own := dict }}
{{- range $key, $value := $config }}
{{- if not (has $key $skip) }}{{ $_ := set $own $key $value }}{{ end }}
{{- end }}
checksum/config: {{ toYaml $own | sha256sum }}
{{- end }}

{{/* A duration as the config format writes it ("2s", "500ms", or a number of seconds) in milliseconds. */}}
{{- define "lightfleet.durationMs" -}}
{{- if kindIs "string" . }}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 }}
{{- $number := regexReplaceAll "^([0-9]+(?:\\.[0-9]+)?)(ms|s|m|h)$" . "${1}" }}
{{- $unit := regexReplaceAll "^([0-9]+(?:\\.[0-9]+)?)(ms|s|m|h)$" . "${2}" }}
{{- mulf (float64 $number) (get $units $unit) }}
{{- else }}
{{- mulf (float64 .) 1000 }}
{{- end }}
{{- end }}

{{/* The config format's cross-field rules of a network (src/config/sections/network.ts), which a JSON Schema cannot
state: helm stops with the option's path before any object changes. test/chart/oneValidation.test.ts holds them to
the config format's own verdicts, preset by preset. */}}
{{- define "lightfleet.validateNetworks" -}}
{{- $presets := dict
  "mainnet" (dict "chainId" 1 "blockTimeMs" 12000)
  "sepolia" (dict "chainId" 11155111 "blockTimeMs" 12000)
  "holesky" (dict "chainId" 17000 "blockTimeMs" 12000)
  "hoodi" (dict "chainId" 560048 "blockTimeMs" 12000)
  "rinkeby" (dict "chainId" 4 "blockTimeMs" 15000)
  "goerli" (dict "chainId" 5 "blockTimeMs" 12000)
  "ropsten" (dict "chainId" 3 "blockTimeMs" 12000 "deprecated" true) }}
{{- range $network := .Values.networks }}
{{- $where := printf "networks[%s]" $network.name }}
{{- $preset := dict }}
{{- if $network.preset }}{{ $preset = get $presets $network.preset }}{{ end }}
{{- if or $preset.deprecated (eq (int64 (default 0 $network.chainId)) 3) }}
{{- fail (printf "%s: ropsten (chain id 3) is deprecated and shut down; use sepolia or hoodi instead" $where) }}
{{- end }}
{{- if and $preset (hasKey $network "chainId") (ne (int64 $network.chainId) (int64 $preset.chainId)) }}
{{- fail (printf "%s.chainId: is %d but preset %s has chain id %d" $where (int64 $network.chainId) $network.preset (int64 $preset.chainId)) }}
{{- end }}
{{- $blockTimeMs := 12000.0 }}
{{- if hasKey $network "blockTime" }}{{ $blockTimeMs = include "lightfleet.durationMs" $network.blockTime | float64 }}
{{- else if $preset }}{{ $blockTimeMs = float64 $preset.blockTimeMs }}{{ end }}
{{- $health := default dict $network.health }}
{{- range $option, $words := dict "peerHaltAfter" "the ordinary wait for the next block would read as a network halt" "stallAfter" "a node waiting for the next block would read as stalled" }}
{{- if hasKey $health $option }}
{{- if lt (include "lightfleet.durationMs" (get $health $option) | float64) (mulf 2 $blockTimeMs) }}
{{- fail (printf "%s.health.%s: is %v, within two block intervals (blockTime %vms): %s" $where $option (get $health $option) $blockTimeMs $words) }}
{{- end }}
{{- end }}
{{- end }}
{{- $scaling := default dict $network.scaling }}
{{- /* The config format's defaults: minReplicas 1, maxReplicas 10. */}}
{{- $min := ternary $scaling.minReplicas 1 (hasKey $scaling "minReplicas") }}
{{- $max := ternary $scaling.maxReplicas 10 (hasKey $scaling "maxReplicas") }}
{{- if gt (int $min) (int $max) }}
{{- fail (printf "%s.scaling.minReplicas: must not exceed maxReplicas" $where) }}
{{- end }}
{{- range $i, $floor := $scaling.cronFloors }}
{{- if gt (int $floor.minReplicas) (int $max) }}
{{- fail (printf "%s.scaling.cronFloors[%d].minReplicas: must not exceed maxReplicas (%d)" $where $i (int $max)) }}
{{- end }}
{{- end }}
{{- /* The gateway's own bounds, in milliseconds, with the config format's defaults (src/config/sections/latency.ts). */}}
{{- $gateway := default dict $network.gateway }}
{{- range $option, $bounds := dict "hedge" (list "minDelay" 20.0 "maxDelay" 1000.0) "hungNodes" (list "min" 300.0 "max" 1500.0) }}
{{- $given := default dict (get $gateway $option) }}
{{- $low := index $bounds 1 }}{{ $high := index $bounds 3 }}
{{- if hasKey $given (index $bounds 0) }}{{ $low = include "lightfleet.durationMs" (get $given (index $bounds 0)) | float64 }}{{ end }}
{{- if hasKey $given (index $bounds 2) }}{{ $high = include "lightfleet.durationMs" (get $given (index $bounds 2)) | float64 }}{{ end }}
{{- if gt $low $high }}
{{- fail (printf "%s.gateway.%s.%s: must not exceed %s (%vms over %vms)" $where $option (index $bounds 0) (index $bounds 2) $low $high) }}
{{- end }}
{{- end }}
{{- $names := list }}
{{- range $i, $peer := $network.reservedPeers }}
{{- if has $peer.name $names }}
{{- fail (printf "%s.reservedPeers[%d].name: duplicate peer name %s" $where $i $peer.name) }}
{{- end }}
{{- $names = append $names $peer.name }}
{{- end }}
{{- end }}
{{- end }}

{{/* Validation of combinations that values.schema.json cannot express. */}}
{{- define "lightfleet.validate" -}}
{{- if and .Values.keys.enabled (gt (int .Values.keys.replicas) 1) (not .Values.keys.database.existingSecret) }}
{{- fail "keys.replicas > 1 needs PostgreSQL: set keys.database.existingSecret (a Secret with DATABASE_URL); a SQLite file cannot be shared" }}
{{- end }}
{{- include "lightfleet.validateNetworks" . }}
{{- if and .Values.config .Values.config.gateway (hasKey .Values.config.gateway "replicas") }}
{{- fail (printf "config.gateway.replicas: is read by `lightfleet up` only, and the chart runs each gateway pod as one replica; set gateway.replicas (the Deployment's replicas, now %d) instead" (int .Values.gateway.replicas)) }}
{{- end }}
{{- if and .Values.gateway.enabled (lt (int .Values.gateway.terminationGracePeriodSeconds) (add (int .Values.gateway.shutdownDelaySeconds) 10)) }}
{{- fail (printf "gateway.terminationGracePeriodSeconds (%d) must cover gateway.shutdownDelaySeconds (%d) and the 10 s drain: set at least %d" (int .Values.gateway.terminationGracePeriodSeconds) (int .Values.gateway.shutdownDelaySeconds) (add (int .Values.gateway.shutdownDelaySeconds) 10)) }}
{{- end }}
{{- $defaults := list }}
{{- range .Values.networks }}{{ if and .gateway .gateway.default }}{{ $defaults = append $defaults .name }}{{ end }}{{ end }}
{{- if gt (len $defaults) 1 }}
{{- fail (printf "networks: only one network may be the gateway default (found %s)" (join ", " $defaults)) }}
{{- end }}
{{- $names := dict }}
{{- range .Values.networks }}
{{- if hasKey $names .name }}
{{- fail (printf "networks: duplicate network name %s" .name) }}
{{- end }}
{{- $_ := set $names .name true }}
{{- $workload := include "lightfleet.workload" (dict "root" $ "network" .) | fromYaml }}
{{- $sts := printf "%s-%s" (include "lightfleet.fullname" $) .name }}
{{- if and $workload.enabled (gt (len $sts) 52) }}
{{- fail (printf "networks[%s]: the StatefulSet name %s has %d characters; its pods' controller-revision-hash label (name, '-', 10 characters) allows 52: shorten the network name, or the release name (fullnameOverride)" .name $sts (len $sts)) }}
{{- end }}
{{- if and $workload.enabled (not $workload.image.repository) }}
{{- fail (printf "networks[%s].workload.image.repository is required when the workload is enabled" .name) }}
{{- end }}
{{- if and (not $workload.enabled) (not (and .pool .pool.workload)) }}
{{- fail (printf "networks[%s]: enable workload, or name an existing workload in pool.workload (kind, name) and pool.selector" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* A network's chain id: given, or from its preset (the table of src/config/presets.ts). */}}
{{- define "lightfleet.chainId" -}}
{{- $presets := dict "mainnet" 1 "sepolia" 11155111 "holesky" 17000 "hoodi" 560048 "rinkeby" 4 "goerli" 5 }}
{{- if .chainId }}{{ .chainId }}{{ else if .preset }}{{ get $presets .preset }}{{ else }}{{ fail (printf "networks[%s]: set preset or chainId" .name) }}{{ end }}
{{- end }}

{{/* autoscaling.mode; an unquoted `off` reads as false in YAML 1.1 (as Helm parses values), so false means off. */}}
{{- define "lightfleet.autoscalingMode" -}}
{{- $mode := .Values.autoscaling.mode }}
{{- if kindIs "bool" $mode }}off{{ else }}{{ $mode }}{{ end }}
{{- end }}

{{/* The controller's Lease: one per release, so that two releases in a namespace each elect their own leader. */}}
{{- define "lightfleet.leaseName" -}}
{{- printf "%s-controller" (include "lightfleet.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The pool class: the controller runs the LightNodePools labelled lightfleet.io/class with it (as IngressClass). */}}
{{- define "lightfleet.poolClass" -}}
{{- default (include "lightfleet.fullname" .) .Values.controller.poolClass }}
{{- end }}

{{/*
gateway.workers as the config takes it: "auto" or a count.
*/}}
{{- define "lightfleet.gatewayWorkers" -}}
{{- if eq (toString .Values.gateway.workers) "auto" -}}
{{- dict "workers" "auto" | toJson -}}
{{- else -}}
{{- dict "workers" (int .Values.gateway.workers) | toJson -}}
{{- end -}}
{{- end }}

{{/*
The gateway container's resources: gateway.resources, with the CPU following the workers where it does not say: a
count of workers requests that many cores; `auto` requests and limits gateway.cores (the limit is the cgroup quota the
gateway reads to count its workers).
*/}}
{{- define "lightfleet.gatewayResources" -}}
{{- $resources := deepCopy (.Values.gateway.resources | default dict) }}
{{- $requests := $resources.requests | default dict }}
{{- $limits := $resources.limits | default dict }}
{{- $auto := eq (toString .Values.gateway.workers) "auto" }}
{{- $cores := ternary (toString .Values.gateway.cores) (toString (int .Values.gateway.workers)) $auto }}
{{- if not (hasKey $requests "cpu") }}{{- $_ := set $requests "cpu" $cores }}{{- end }}
{{- if and $auto (not (hasKey $limits "cpu")) }}{{- $_ := set $limits "cpu" $cores }}{{- end }}
{{- $_ := set $resources "requests" $requests }}
{{- if $limits }}{{- $_ := set $resources "limits" $limits }}{{- end }}
{{- toYaml $resources }}
{{- end }}
