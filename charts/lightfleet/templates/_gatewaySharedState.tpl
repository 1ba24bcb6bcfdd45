{{/* The gateway's shared-state backend once `auto` is decided: redis with several replicas or the HPA, else memory. */}}
{{- define "lightfleet.gatewaySharedBackend" -}}
{{- $shared := .Values.gateway.sharedState -}}
{{- if ne $shared.backend "auto" -}}
{{ $shared.backend }}
{{- else if or (gt (int .Values.gateway.replicas) 1) .Values.gateway.autoscaling.enabled -}}
redis
{{- else -}}
memory
{{- end -}}
{{- end }}

{{/* "true" when the chart runs its own small Redis for the gateway (redis chosen, no external one named). */}}
{{- define "lightfleet.gatewayBundledRedis" -}}
{{- $shared := .Values.gateway.sharedState -}}
{{- if and .Values.gateway.enabled (eq (include "lightfleet.gatewaySharedBackend" .) "redis") (not $shared.existingSecret) (not $shared.url) -}}
true
{{- end -}}
{{- end }}

{{/*
gateway.sharedState of the config file, as JSON. With existingSecret the URL comes from REDIS_URL, which only the
gateway pods get (from the Secret); the other components read the same file and never connect, so theirs falls back to
a placeholder.
*/}}
{{- define "lightfleet.gatewaySharedStateConfig" -}}
{{- $shared := .Values.gateway.sharedState -}}
{{- if eq (include "lightfleet.gatewaySharedBackend" .) "memory" -}}
{{ dict "backend" "memory" | toJson }}
{{- else if $shared.existingSecret -}}
{{ dict "backend" "redis" "url" "${REDIS_URL:-redis://gateway-only.invalid:6379}" | toJson }}
{{- else if $shared.url -}}
{{ dict "backend" "redis" "url" $shared.url | toJson }}
{{- else -}}
{{ dict "backend" "redis" "url" (printf "redis://%s-gateway-redis:6379" (include "lightfleet.fullname" .)) | toJson }}
{{- end -}}
{{- end }}

{{/* Several gateway replicas with in-process state would each keep their own filters and limits: refused. */}}
{{- define "lightfleet.validateGatewaySharedState" -}}
{{- $gateway := .Values.gateway -}}
{{- $replicated := or (gt (int $gateway.replicas) 1) $gateway.autoscaling.enabled -}}
{{- if and $gateway.enabled $replicated (eq (include "lightfleet.gatewaySharedBackend" .) "memory") (not $gateway.sharedState.allowInProcessWithReplicas) -}}
{{- fail "gateway.sharedState.backend is memory with more than one gateway replica (gateway.replicas > 1 or gateway.autoscaling.enabled): each replica would keep its own filters, rate limits and caps, and clients would get \"filter not found\" and N times the limits. Use backend redis (existingSecret or url for your Redis, or neither for a small one the chart runs), or set gateway.sharedState.allowInProcessWithReplicas: true to accept it" -}}
{{- end -}}
{{- end }}
