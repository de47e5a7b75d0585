{{/*
Names and labels shared by the templates.
*/}}

{{/* The release's base name: the release name, or "<release>-gpufair" when it lacks "gpufair". */}}
{{- define "gpufair.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpufair.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* helm.sh/chart and app.kubernetes.io/managed-by exist only in the chart's render. */}}
{{- define "gpufair.labels" -}}
{{ include "gpufair.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpufair
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gpufair.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Where the scheduler configuration and the TLS files are mounted. */}}
{{- define "gpufair.configDir" -}}/etc/gpufair/config{{- end -}}
{{- define "gpufair.tlsDir" -}}/etc/gpufair/tls{{- end -}}

{{/* The webhooks' scheme: https when TLS is enabled. */}}
{{- define "gpufair.scheme" -}}
{{- if .Values.tls.enabled -}}https{{- else -}}http{{- end -}}
{{- end -}}
