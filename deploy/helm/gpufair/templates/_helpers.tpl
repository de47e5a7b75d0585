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

{{/* Layout separate: gpufair in its own Deployment behind the webhook Service. */}}
{{- define "gpufair.separate" -}}
{{- if eq .Values.layout "separate" -}}true{{- end -}}
{{- end -}}

{{/* The webhook Service's DNS name, which gpufair's certificate carries in layout separate. */}}
{{- define "gpufair.webhookHost" -}}
{{- printf "%s-webhook.%s.svc" (include "gpufair.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* Where kube-scheduler calls the extender. */}}
{{- define "gpufair.extenderUrl" -}}
{{- if include "gpufair.separate" . -}}
{{- printf "https://%s:%v" (include "gpufair.webhookHost" .) .Values.gpufair.port -}}
{{- else -}}
{{- printf "%s://127.0.0.1:%v" (include "gpufair.scheme" .) .Values.gpufair.port -}}
{{- end -}}
{{- end -}}

{{/* --client-allowed-names: tls.clientNames, or in layout separate the scheduler's certificate
name and gpufair's own (its probes present it). Empty: any certificate of the client CA. */}}
{{- define "gpufair.clientNames" -}}
{{- if .Values.tls.clientNames -}}
{{- join "," .Values.tls.clientNames -}}
{{- else if include "gpufair.separate" . -}}
{{- printf "%s-scheduler,%s" (include "gpufair.fullname" .) (include "gpufair.webhookHost" .) -}}
{{- end -}}
{{- end -}}

{{/* The scheduler pods' selector: in layout separate they and gpufair's pods differ by component. */}}
{{- define "gpufair.schedulerSelectorLabels" -}}
{{ include "gpufair.selectorLabels" . }}
{{- if include "gpufair.separate" . }}
app.kubernetes.io/component: scheduler
{{- end }}
{{- end -}}

{{- define "gpufair.extenderSelectorLabels" -}}
{{ include "gpufair.selectorLabels" . }}
app.kubernetes.io/component: extender
{{- end -}}

{{/* gpufair's TLS flags (both layouts). */}}
{{- define "gpufair.tlsArgs" -}}
{{- $tlsDir := include "gpufair.tlsDir" . -}}
- --tls-cert={{ $tlsDir }}/tls.crt
- --tls-key={{ $tlsDir }}/tls.key
{{- if .Values.tls.clientAuth }}
- --client-ca={{ $tlsDir }}/ca.crt
{{- with include "gpufair.clientNames" . }}
- --client-allowed-names={{ . }}
{{- end }}
{{- end }}
{{- end -}}
