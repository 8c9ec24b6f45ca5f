{{/* Names, labels and the adapter's serving certificate, shared by every template. */}}

{{- define "promhpa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "promhpa.fullname" -}}
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

{{- define "promhpa.adapter.fullname" -}}
{{- printf "%s-adapter" (include "promhpa.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "promhpa.controller.fullname" -}}
{{- printf "%s-controller" (include "promhpa.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "promhpa.adapter.serviceAccountName" -}}
{{- default (include "promhpa.adapter.fullname" .) .Values.adapter.serviceAccount.name }}
{{- end }}

{{- define "promhpa.controller.serviceAccountName" -}}
{{- default (include "promhpa.controller.fullname" .) .Values.controller.serviceAccount.name }}
{{- end }}

{{- define "promhpa.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "promhpa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: call with (dict "ctx" $ "component" "adapter"). */}}
{{- define "promhpa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "promhpa.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "promhpa.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The DNS name the aggregator verifies the serving certificate against. */}}
{{- define "promhpa.adapter.dnsName" -}}
{{- printf "%s.%s.svc" (include "promhpa.adapter.fullname" .) .Release.Namespace }}
{{- end }}

{{- define "promhpa.adapter.tlsSecretName" -}}
{{- if eq .Values.tls.mode "existingSecret" }}
{{- required "tls.existingSecret.name is required with tls.mode=existingSecret" .Values.tls.existingSecret.name }}
{{- else }}
{{- printf "%s-tls" (include "promhpa.adapter.fullname" .) }}
{{- end }}
{{- end }}

{{- define "promhpa.adapter.rulesConfigMap" -}}
{{- default (printf "%s-rules" (include "promhpa.adapter.fullname" .)) .Values.rules.existingConfigMap }}
{{- end }}

{{/*
The serving certificate in helm mode, as a dict {ca, crt, key} (base64 PEM). It is generated
once and then reused from the Secret already in the cluster, so an upgrade neither rotates
it nor leaves the APIServices' caBundle out of step. Memoised in .Values so the Secret and
every APIService see the same certificate within one render.
*/}}
{{- define "promhpa.adapter.generatedTLS" -}}
{{- if not (hasKey .Values "__promhpaTLS") }}
{{- $name := include "promhpa.adapter.tlsSecretName" . }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name }}
{{- $dns := include "promhpa.adapter.dnsName" . }}
{{- $reuse := false }}
{{- if and $existing $existing.data }}
{{- if and (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") }}
{{- $reuse = true }}
{{- end }}
{{- end }}
{{- if $reuse }}
{{- $_ := set .Values "__promhpaTLS" (dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key")) }}
{{- else }}
{{- $ca := genCA (printf "%s-ca" (include "promhpa.adapter.fullname" .)) (int .Values.tls.validityDays) }}
{{- $cert := genSignedCert $dns nil (list $dns (printf "%s.cluster.local" $dns) (include "promhpa.adapter.fullname" .)) (int .Values.tls.validityDays) $ca }}
{{- $_ := set .Values "__promhpaTLS" (dict "ca" ($ca.Cert | b64enc) "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc)) }}
{{- end }}
{{- end }}
{{- toYaml (get .Values "__promhpaTLS") }}
{{- end }}

{{/* The caBundle of the APIServices (empty in certManager mode: cert-manager injects it). */}}
{{- define "promhpa.caBundle" -}}
{{- if eq .Values.tls.mode "helm" }}
{{- (include "promhpa.adapter.generatedTLS" . | fromYaml).ca }}
{{- else if eq .Values.tls.mode "existingSecret" }}
{{- required "tls.existingSecret.caBundle (PEM) is required with tls.mode=existingSecret" .Values.tls.existingSecret.caBundle | b64enc }}
{{- end }}
{{- end }}

{{- define "promhpa.adapter.servicePort" -}}
{{- if .Values.externalEndpoint.enabled }}{{ .Values.externalEndpoint.port }}{{ else }}443{{ end }}
{{- end }}

{{- define "promhpa.validate" -}}
{{- if not (has .Values.tls.mode (list "helm" "certManager" "existingSecret")) }}
{{- fail (printf "tls.mode must be helm, certManager or existingSecret, not %q" .Values.tls.mode) }}
{{- end }}
{{- if and .Values.externalEndpoint.enabled (not .Values.externalEndpoint.host) }}
{{- fail "externalEndpoint.host is required with externalEndpoint.enabled (the outside adapter's DNS name or IP)" }}
{{- end }}
{{- if and .Values.adapter.enabled (not .Values.externalEndpoint.enabled) (not .Values.prometheus.url) }}
{{- fail "prometheus.url is required: the Prometheus the adapter queries, e.g. --set prometheus.url=http://prometheus-operated.monitoring.svc:9090" }}
{{- end }}
{{- if and .Values.controller.enabled (gt (int .Values.controller.replicas) 1) (not .Values.controller.leaderElect) }}
{{- fail "controller.replicas > 1 needs controller.leaderElect=true: two active HPA controllers would fight" }}
{{- end }}
{{- end }}

{{/* The controller's mode: `controller.dryRun`, when set, wins over `controller.mode`. */}}
{{- define "promhpa.controller.shadow" -}}
{{- $c := .Values.controller -}}
{{- if kindIs "bool" $c.dryRun -}}{{ ternary "true" "" $c.dryRun }}{{- else if eq $c.mode "shadow" -}}true{{- else if eq $c.mode "active" -}}{{- else -}}{{ fail (printf "controller.mode must be shadow or active, not %q" $c.mode) }}{{- end -}}
{{- end }}
