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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* `commonAnnotations` as a metadata block (nothing when there are none). */}}
{{- define "promhpa.commonAnnotations" -}}
{{- with .Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The namespace of every namespaced object: namespaceOverride, else the release's. */}}
{{- define "promhpa.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/* prometheus.url (templated, as the community chart's), with prometheus.port and
prometheus.path when they are set. */}}
{{- define "promhpa.prometheusURL" -}}
{{- tpl .Values.prometheus.url . }}{{ with .Values.prometheus.port }}:{{ . }}{{ end }}{{ .Values.prometheus.path }}
{{- end }}

{{/*
prometheus-adapter's community chart values (prometheus-community/prometheus-adapter 5.3.0),
mapped onto ours once per render, so a values file written for it installs promhpa unchanged
(docs/migration.md lists every value). Every template includes this first; it changes
.Values in place and marks them done. A value the community chart sets at its own default
where promhpa's default is better for promhpa (its probes, its log level) is left to ours.
*/}}
{{- define "promhpa.community" -}}
{{- $v := .Values -}}
{{- if not (hasKey $v "promhpaCommunityApplied") -}}
{{- $_ := set $v "promhpaCommunityApplied" true -}}
{{- $a := $v.adapter -}}
{{- range $k := list "affinity" "nodeSelector" "tolerations" "topologySpreadConstraints" "priorityClassName" "podLabels" "podAnnotations" "env" "extraVolumes" "extraVolumeMounts" "resources" "dnsConfig" "dnsPolicy" "extraContainers" "deploymentAnnotations" "revisionHistoryLimit" "automountServiceAccountToken" -}}
{{- if and (hasKey $v $k) (not (kindIs "invalid" (get $v $k))) (or (get $v $k) (kindIs "bool" (get $v $k))) -}}
{{- $_ := set $a $k (get $v $k) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $v "replicas" }}{{ $_ := set $a "replicas" $v.replicas }}{{ end -}}
{{- if hasKey $v "listenPort" }}{{ $_ := set $a "port" $v.listenPort }}{{ end -}}
{{- if hasKey $v "metricsRelistInterval" }}{{ $_ := set $a "relistInterval" $v.metricsRelistInterval }}{{ end -}}
{{- if and (hasKey $v "logLevel") (ne (int $v.logLevel) 4) }}{{ $_ := set $a "extraArgs" (append $a.extraArgs (printf "--v=%d" (int $v.logLevel))) }}{{ end -}}
{{- with $v.extraArguments }}{{ $_ := set $a "extraArgs" (concat $a.extraArgs .) }}{{ end -}}
{{- range $k := list "livenessProbe" "readinessProbe" "startupProbe" -}}
{{- $given := get $v $k -}}
{{- $theirs := dict "httpGet" (dict "path" "/healthz" "port" "https" "scheme" "HTTPS") "initialDelaySeconds" 30 "timeoutSeconds" 5 -}}
{{- if and $given (ne (toJson $given) (toJson $theirs)) }}{{ $_ := set $a $k $given }}{{ end -}}
{{- end -}}
{{- with $v.strategy -}}
{{- $theirs := dict "type" "RollingUpdate" "rollingUpdate" (dict "maxUnavailable" "25%" "maxSurge" "25%") -}}
{{- if ne (toJson .) (toJson $theirs) }}{{ $_ := set $a "strategy" . }}{{ end -}}
{{- end -}}
{{- if hasKey $v "hostNetwork" }}{{ $_ := set $a "hostNetwork" (dig "enabled" false $v.hostNetwork) }}{{ end -}}
{{- with $v.serviceAccount }}{{ $_ := set $a "serviceAccount" (mergeOverwrite (deepCopy $a.serviceAccount) (omit . "name") (dict "name" (default "" .name))) }}{{ end -}}
{{- with $v.service }}{{ $_ := set $a "service" (mergeOverwrite (deepCopy $a.service) (pick . "type" "annotations" "port")) }}{{ end -}}
{{- with $v.podDisruptionBudget }}{{ $_ := set $a "podDisruptionBudget" (mergeOverwrite (deepCopy $a.podDisruptionBudget) (pick . "enabled" "minAvailable" "maxUnavailable" "unhealthyPodEvictionPolicy")) }}{{ end -}}
{{- with $v.customLabels }}{{ $_ := set $v "commonLabels" (mergeOverwrite (deepCopy (default dict $v.commonLabels)) .) }}{{ end -}}
{{- with $v.customAnnotations }}{{ $_ := set $v "commonAnnotations" (mergeOverwrite (deepCopy (default dict $v.commonAnnotations)) .) }}{{ end -}}
{{- with $v.rules }}{{ with .existing }}{{ $_ := set $v.rules "existingConfigMap" . }}{{ end }}{{ end -}}
{{- with $v.certManager }}{{ if .enabled }}{{ $_ := set $v.tls "mode" "certManager" }}{{ with .certDuration }}{{ $_ := set $v.tls.certManager "duration" . }}{{ end }}{{ end }}{{ end -}}
{{- if and $v.tls (dig "enable" false $v.tls) -}}
{{- fail "tls.enable (prometheus-adapter's certificate in values): put tls.crt and tls.key in a Secret and set tls.mode=existingSecret with tls.existingSecret.name and tls.existingSecret.caBundle (did you mean tls.existingSecret?)" -}}
{{- end -}}
{{- if $v.psp }}{{ if $v.psp.create }}{{ fail "psp.create: PodSecurityPolicy was removed in Kubernetes 1.25; promhpa's pods run as non-root with a read-only root file system (remove psp)" }}{{ end }}{{ end -}}
{{- if and $v.image (contains "prometheus-adapter" (default "" $v.image.repository)) -}}
{{- fail (printf "image.repository is prometheus-adapter's image (%s): promhpa runs from its own image, which is not published anywhere. Build it from the repository (make image, or make release) and set image.registry, image.repository and image.tag to where you pushed it (docs/migration.md)" $v.image.repository) -}}
{{- end -}}
{{- with $v.image }}{{ with .pullSecrets }}{{ $_ := set $v "imagePullSecrets" (concat $v.imagePullSecrets .) }}{{ end }}{{ end -}}
{{- end -}}
{{- end }}

{{/* Selector labels of one component: call with (dict "ctx" $ "component" "adapter"). */}}
{{- define "promhpa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "promhpa.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image: the registry (global.imageRegistry, else image.registry) before the
repository -- replacing the repository's own registry host when it names one -- then the
digest when given (it wins over the tag), else the tag (default: the chart's appVersion). */}}
{{- define "promhpa.image" -}}
{{- $global := dig "imageRegistry" "" (default dict .Values.global) -}}
{{- $repo := .Values.image.repository -}}
{{- if not $repo -}}
{{- fail "image.repository is not set: promhpa publishes no image. Build it from the repository (make image, or make release for the chart and image together), push it to a registry your cluster pulls from, and set image.registry, image.repository and image.tag (README.md, \"Install in a cluster\")" -}}
{{- end -}}
{{- $first := first (splitList "/" $repo) -}}
{{- $hasHost := and (gt (len (splitList "/" $repo)) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- if and $hasHost $global -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" $global) (join "/" (rest (splitList "/" $repo))) -}}
{{- else if not $hasHost -}}
{{- $registry := default .Values.image.registry $global -}}
{{- if $registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo }}{{ end -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end -}}
{{- end }}

{{/* The DNS name the aggregator verifies the serving certificate against. */}}
{{- define "promhpa.adapter.dnsName" -}}
{{- printf "%s.%s.svc" (include "promhpa.adapter.fullname" .) (include "promhpa.namespace" .) }}
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
A serving certificate in helm mode, as a dict {ca, crt, key} (base64 PEM), for a dict of
ctx, secret (its Secret's name), dns (the name it is for) and memo (a key in .Values). It is
generated once and then reused from the Secret already in the cluster, so an upgrade neither
rotates it nor leaves a caBundle out of step. Memoised in .Values so the Secret and every
registration see the same certificate within one render.
*/}}
{{- define "promhpa.generatedTLS" -}}
{{- $ctx := .ctx }}
{{- if not (hasKey $ctx.Values .memo) }}
{{- $existing := lookup "v1" "Secret" (include "promhpa.namespace" $ctx) .secret }}
{{- $reuse := false }}
{{- if and $existing $existing.data }}
{{- if and (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") }}
{{- $reuse = true }}
{{- end }}
{{- end }}
{{- if $reuse }}
{{- $_ := set $ctx.Values .memo (dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key")) }}
{{- else }}
{{- $short := trimSuffix (printf ".%s.svc" (include "promhpa.namespace" $ctx)) .dns }}
{{- $ca := genCA (printf "%s-ca" $short) (int $ctx.Values.tls.validityDays) }}
{{- $cert := genSignedCert .dns nil (list .dns (printf "%s.cluster.local" .dns) $short) (int $ctx.Values.tls.validityDays) $ca }}
{{- $_ := set $ctx.Values .memo (dict "ca" ($ca.Cert | b64enc) "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc)) }}
{{- end }}
{{- end }}
{{- toYaml (get $ctx.Values .memo) }}
{{- end }}

{{/* The adapter's serving certificate in helm mode (promhpa.generatedTLS). */}}
{{- define "promhpa.adapter.generatedTLS" -}}
{{- include "promhpa.generatedTLS" (dict "ctx" . "secret" (include "promhpa.adapter.tlsSecretName" .) "dns" (include "promhpa.adapter.dnsName" .) "memo" "__promhpaTLS") }}
{{- end }}

{{/* The controller's admission webhook: registered only where the controller runs and
reconciles promhpa's own kind. */}}
{{- define "promhpa.controller.webhook" -}}
{{- $c := .Values.controller -}}
{{- if and $c.enabled $c.admissionWebhook.enabled (ne $c.ownKind "off") -}}true{{- end -}}
{{- end }}

{{- define "promhpa.controller.webhookService" -}}
{{- printf "%s-webhook" (include "promhpa.controller.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "promhpa.controller.dnsName" -}}
{{- printf "%s.%s.svc" (include "promhpa.controller.webhookService" .) (include "promhpa.namespace" .) }}
{{- end }}

{{/* The Secret holding the webhook's certificate: tls.existingSecret's in that mode. */}}
{{- define "promhpa.controller.tlsSecretName" -}}
{{- if eq .Values.tls.mode "existingSecret" }}
{{- include "promhpa.adapter.tlsSecretName" . }}
{{- else }}
{{- printf "%s-webhook-tls" (include "promhpa.controller.fullname" .) }}
{{- end }}
{{- end }}

{{/* The webhook's serving certificate in helm mode (promhpa.generatedTLS). */}}
{{- define "promhpa.controller.generatedTLS" -}}
{{- include "promhpa.generatedTLS" (dict "ctx" . "secret" (include "promhpa.controller.tlsSecretName" .) "dns" (include "promhpa.controller.dnsName" .) "memo" "__promhpaControllerTLS") }}
{{- end }}

{{/* The webhook's caBundle (empty in certManager mode: cert-manager injects it). */}}
{{- define "promhpa.controller.caBundle" -}}
{{- if eq .Values.tls.mode "helm" }}
{{- (include "promhpa.controller.generatedTLS" . | fromYaml).ca }}
{{- else }}
{{- include "promhpa.caBundle" . }}
{{- end }}
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
{{- if .Values.externalEndpoint.enabled }}{{ .Values.externalEndpoint.port }}{{ else }}{{ .Values.adapter.service.port }}{{ end }}
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

{{/* The API groups of the HPAs the controller reconciles: the built-in one, and promhpa's own
kind unless controller.ownKind is off. */}}
{{- define "promhpa.controller.hpaGroups" -}}
{{- if eq .Values.controller.ownKind "off" -}}
[autoscaling]
{{- else -}}
[autoscaling, autoscaling.promhpa.io]
{{- end -}}
{{- end }}

{{/* The issuer of cert-manager's certificates: tls.certManager.issuerRef, else the CA Issuer
the chart makes beside the adapter (templates/adapter/certmanager.yaml). */}}
{{- define "promhpa.certManager.issuer" -}}
{{- default (dict "kind" "Issuer" "name" (printf "%s-ca" (include "promhpa.adapter.fullname" .))) .Values.tls.certManager.issuerRef | toYaml }}
{{- end }}
