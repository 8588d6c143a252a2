{{/* The name of the Deployment, Service and Prometheus Operator objects. */}}
{{- define "gpuops.name" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{/* The service account, and the names of its judges' rights. */}}
{{- define "gpuops.serviceAccount" -}}
{{ include "gpuops.name" . }}-judge-serve
{{- end -}}

{{/* The label of every object, as kustomize/deploy/base sets it. */}}
{{- define "gpuops.labels" -}}
app.kubernetes.io/name: gpuops
{{- end -}}

{{/* A binding's subject: the service account. */}}
{{- define "gpuops.subject" -}}
subjects:
- kind: ServiceAccount
  name: {{ include "gpuops.serviceAccount" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* Whether the Prometheus Operator's CRDs are served. */}}
{{- define "gpuops.monitoring" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end -}}
{{- end -}}
