{{/* Names ------------------------------------------------------------------ */}}

{{- define "copse.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: the release name if it contains the
chart name, else <release>-<chart>. */}}
{{- define "copse.fullname" -}}
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

{{/* The operator: Deployment, ClusterRole, bindings, leader-election Role. */}}
{{- define "copse.operatorName" -}}
{{- printf "%s-operator" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "copse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "copse.operatorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "copse.configMapName" -}}
{{- printf "%s-config" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "copse.webhookServiceName" -}}
{{- printf "%s-webhook" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "copse.metricsServiceName" -}}
{{- printf "%s-metrics" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "copse.certificateName" -}}
{{- printf "%s-webhook" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "copse.issuerName" -}}
{{- printf "%s-selfsigned" (include "copse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels ----------------------------------------------------------------- */}}

{{- define "copse.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "copse.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: copse
{{- end }}

{{- define "copse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "copse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Image ------------------------------------------------------------------ */}}

{{- define "copse.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Webhooks --------------------------------------------------------------- */}}

{{/* copse.webhookEndpoints: one entry per webhook.Endpoints() in
internal/webhook/endpoints.go. Names, paths and resources must match it
exactly; charts/copse/rbac_test.go checks the rendered configurations
against that function. Rendered as YAML; read with fromYamlArray. */}}
{{- define "copse.webhookEndpoints" -}}
- name: default.podcliquesets.grove.io
  path: /mutate-grove-io-v1alpha1-podcliqueset
  mutating: true
  group: grove.io
  resource: podcliquesets
  scope: Namespaced
  trainJob: false
- name: validate.podcliquesets.grove.io
  path: /validate-grove-io-v1alpha1-podcliqueset
  mutating: false
  group: grove.io
  resource: podcliquesets
  scope: Namespaced
  trainJob: false
- name: validate.podcliques.grove.io
  path: /validate-grove-io-v1alpha1-podclique
  mutating: false
  group: grove.io
  resource: podcliques
  scope: Namespaced
  trainJob: false
- name: validate.podcliquescalinggroups.grove.io
  path: /validate-grove-io-v1alpha1-podcliquescalinggroup
  mutating: false
  group: grove.io
  resource: podcliquescalinggroups
  scope: Namespaced
  trainJob: false
- name: validate-scale.podcliques.grove.io
  path: /validate-grove-io-v1alpha1-podclique-scale
  mutating: false
  group: grove.io
  resource: podcliques/scale
  scope: Namespaced
  trainJob: false
- name: validate-scale.podcliquescalinggroups.grove.io
  path: /validate-grove-io-v1alpha1-podcliquescalinggroup-scale
  mutating: false
  group: grove.io
  resource: podcliquescalinggroups/scale
  scope: Namespaced
  trainJob: false
- name: validate.clustertopologybindings.grove.io
  path: /validate-grove-io-v1alpha1-clustertopologybinding
  mutating: false
  group: grove.io
  resource: clustertopologybindings
  scope: Cluster
  trainJob: false
- name: default.trainjobs.trainer.kubeflow.org
  path: /mutate-trainer-kubeflow-org-v1alpha1-trainjob
  mutating: true
  group: trainer.kubeflow.org
  resource: trainjobs
  scope: Namespaced
  trainJob: true
- name: validate.trainjobs.trainer.kubeflow.org
  path: /validate-trainer-kubeflow-org-v1alpha1-trainjob
  mutating: false
  group: trainer.kubeflow.org
  resource: trainjobs
  scope: Namespaced
  trainJob: true
- name: validate.trainingruntimes.trainer.kubeflow.org
  path: /validate-trainer-kubeflow-org-v1alpha1-trainingruntime
  mutating: false
  group: trainer.kubeflow.org
  resource: trainingruntimes
  scope: Namespaced
  trainJob: true
- name: validate.clustertrainingruntimes.trainer.kubeflow.org
  path: /validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime
  mutating: false
  group: trainer.kubeflow.org
  resource: clustertrainingruntimes
  scope: Cluster
  trainJob: true
{{- end }}

{{/* copse.webhookURLBase: localMode.webhookURL without a trailing slash,
checked to be https://host:port. */}}
{{- define "copse.webhookURLBase" -}}
{{- $url := required "localMode.webhookURL is required when localMode.enabled is true (e.g. https://127.0.0.1:9443)" .Values.localMode.webhookURL | trimSuffix "/" }}
{{- if not (regexMatch "^https://[^/:]+:[0-9]+$" $url) }}
{{- fail (printf "localMode.webhookURL %q must be https://<host>:<port>, without a path" .Values.localMode.webhookURL) }}
{{- end }}
{{- $url }}
{{- end }}

{{/* Host and port of localMode.webhookURL. */}}
{{- define "copse.localWebhookHost" -}}
{{- regexReplaceAll ":[0-9]+$" (include "copse.webhookURLBase" . | trimPrefix "https://") "" }}
{{- end }}
{{- define "copse.localWebhookPort" -}}
{{- include "copse.webhookURLBase" . | regexFind "[0-9]+$" }}
{{- end }}

{{/* The webhook's clientConfig for one endpoint (the argument is a dict with
"root" and "endpoint"). */}}
{{- define "copse.webhookClientConfig" -}}
{{- $root := .root }}
{{- if $root.Values.localMode.enabled }}
url: {{ printf "%s%s" (include "copse.webhookURLBase" $root) .endpoint.path | quote }}
{{- else }}
service:
  name: {{ include "copse.webhookServiceName" $root }}
  namespace: {{ $root.Release.Namespace }}
  path: {{ .endpoint.path | quote }}
  port: 443
{{- end }}
{{- if eq $root.Values.webhook.certificate.mode "secret" }}
caBundle: {{ required "webhook.certificate.secret.caBundle (the CA's PEM) is required when webhook.certificate.mode is secret" $root.Values.webhook.certificate.secret.caBundle | b64enc }}
{{- end }}
{{- end }}

{{/* Certificates ----------------------------------------------------------- */}}

{{/* The operator's certificates.mode for the chart's webhook.certificate.mode. */}}
{{- define "copse.operatorCertificateMode" -}}
{{- if eq .Values.webhook.certificate.mode "selfManaged" }}SelfManaged{{ else }}Provided{{ end }}
{{- end }}

{{/* Checks of value combinations the schema cannot express. */}}
{{- define "copse.validate" -}}
{{- if and .Values.localMode.enabled (ne .Values.webhook.certificate.mode "selfManaged") }}
{{- fail "localMode.enabled needs webhook.certificate.mode selfManaged: the local operator issues a certificate for the webhook URL's host" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled" }}
{{- end }}
{{- end }}
