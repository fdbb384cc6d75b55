{{/* The chart's name, for labels. */}}
{{- define "approvalbot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's resource names. */}}
{{- define "approvalbot.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "approvalbot.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "approvalbot.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "approvalbot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "approvalbot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "approvalbot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "approvalbot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret the bot's secrets come from. */}}
{{- define "approvalbot.secretName" -}}
{{- .Values.secret.existingSecret | default (include "approvalbot.fullname" .) }}
{{- end }}

{{- define "approvalbot.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
REDIS_URL from .Values.redis (docs/configuration.md, REDIS_URL). The password
is $(REDIS_PASSWORD): Kubernetes substitutes the Secret's REDIS_PASSWORD key.
*/}}
{{- define "approvalbot.redisURL" -}}
{{- $r := .Values.redis }}
{{- $scheme := ternary "rediss" "redis" (eq (toString $r.tls) "true") }}
{{- $user := "" }}
{{- if or $r.username $r.passwordFromSecret }}
{{- $user = printf "%s%s@" ($r.username | default "") (ternary ":$(REDIS_PASSWORD)" "" (eq (toString $r.passwordFromSecret) "true")) }}
{{- end }}
{{- if not $r.addresses }}
{{- fail "redis.addresses must name at least one address (host:port)" }}
{{- end }}
{{- $hosts := join "," $r.addresses }}
{{- $query := ternary (printf "?%s" $r.params) "" (ne ($r.params | default "") "") }}
{{- if eq $r.mode "standalone" }}
{{- if ne (len $r.addresses) 1 }}
{{- fail "redis.mode standalone takes exactly one address in redis.addresses (use sentinel or cluster for more)" }}
{{- end }}
{{- printf "%s://%s%s/%d%s" $scheme $user $hosts (int $r.db) $query }}
{{- else if eq $r.mode "sentinel" }}
{{- if not $r.masterName }}
{{- fail "redis.mode sentinel needs redis.masterName (the master's name in the Sentinels' configuration)" }}
{{- end }}
{{- printf "%s+sentinel://%s%s/%s/%d%s" $scheme $user $hosts $r.masterName (int $r.db) $query }}
{{- else if eq $r.mode "cluster" }}
{{- if ne (int $r.db) 0 }}
{{- fail "redis.mode cluster has only database 0: set redis.db to 0" }}
{{- end }}
{{- printf "%s+cluster://%s%s/%s" $scheme $user $hosts $query }}
{{- else }}
{{- fail (printf "redis.mode must be standalone, sentinel, cluster or secret, got %q" $r.mode) }}
{{- end }}
{{- end }}

{{/* terminationGracePeriodSeconds: the preStop sleep, the drain and the shutdown, and a margin. */}}
{{- define "approvalbot.gracePeriod" -}}
{{- $s := .Values.shutdown }}
{{- add (int $s.preStopSleepSeconds) (int $s.drainDelaySeconds) (int $s.timeoutSeconds) (int $s.graceMarginSeconds) }}
{{- end }}
