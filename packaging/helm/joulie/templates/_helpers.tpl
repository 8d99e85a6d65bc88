{{/*
Names. Every object is prefixed with the release's full name, which is the
release name alone when it already contains the chart's name ("joulie"
installed as "joulie" gives joulie-controller, joulie-extender, ...).
*/}}
{{- define "joulie.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "joulie.fullname" -}}
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

{{/* Component names; 63 characters leave room for the suffixes. */}}
{{- define "joulie.controller.fullname" -}}
{{- printf "%s-controller" (include "joulie.fullname" . | trunc 52 | trimSuffix "-") }}
{{- end }}

{{- define "joulie.extender.fullname" -}}
{{- printf "%s-extender" (include "joulie.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{- define "joulie.agent.fullname" -}}
{{- printf "%s-agent" (include "joulie.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{/* The BMC Secrets' namespace: <fullname>-bmc unless set, so that two
releases do not share one. */}}
{{- define "joulie.bmcNamespace" -}}
{{- default (printf "%s-bmc" (include "joulie.fullname" .)) .Values.controller.parking.ipmi.secretNamespace }}
{{- end }}

{{- define "joulie.leaseName" -}}
{{- default (include "joulie.controller.fullname" .) .Values.controller.leaderElection.leaseName }}
{{- end }}

{{- define "joulie.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "joulie.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: joulie
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: include with (list $ "controller"). */}}
{{- define "joulie.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "joulie.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "joulie.componentLabels" -}}
{{ include "joulie.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "joulie.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) }}
{{- end }}

{{/*
Configuration file lines "key: value" from a list of (key, value) pairs,
for the programs' --config file. A value left empty or null is left out,
so the program keeps its own default. Strings are quoted (JSON strings are
YAML); whole numbers print without a decimal point or exponent.
*/}}
{{- define "joulie.configList" -}}
{{- range . }}
{{- $value := index . 1 }}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value ""))) }}
{{ index . 0 }}: {{ if kindIs "string" $value }}{{ toJson $value }}{{ else }}{{ include "joulie.scalar" $value }}{{ end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "joulie.scalar" -}}
{{- if kindIs "float64" . -}}
{{- if eq (float64 (int64 .)) . -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end }}

{{/* Hardening shared by both Deployments. */}}
{{- define "joulie.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "joulie.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "joulie.extender.scheme" -}}
{{- if .Values.extender.tls.secretName }}https{{ else }}http{{ end }}
{{- end }}

{{- define "joulie.extender.urlPrefix" -}}
{{- if .Values.extender.scheduler.urlPrefix }}
{{- .Values.extender.scheduler.urlPrefix }}
{{- else }}
{{- printf "%s://%s.%s.svc:%d" (include "joulie.extender.scheme" .) (include "joulie.extender.fullname" .) .Release.Namespace (int .Values.extender.port) }}
{{- end }}
{{- end }}

{{/*
The KubeSchedulerConfiguration kube-scheduler needs: a profile whose
NodeResourcesFit scores with extender.scheduler.nodeResourcesFit (the other
plugins keep kube-scheduler's defaults), and the extender.
*/}}
{{- define "joulie.schedulerConfiguration" -}}
{{- $fit := .Values.extender.scheduler.nodeResourcesFit -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {{ .Values.extender.scheduler.schedulerName }}
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: {{ $fit.scoringStrategy }}
        resources:
        {{- range $fit.resources }}
        - name: {{ .name }}
          weight: {{ .weight }}
        {{- end }}
extenders:
- urlPrefix: {{ include "joulie.extender.urlPrefix" . | quote }}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: {{ .Values.extender.scheduler.weight }}
  enableHTTPS: {{ ne (include "joulie.extender.scheme" .) "http" }}
  {{- if .Values.extender.tls.secretName }}
  # Give the scheduler the CA that signed the extender's certificate:
  # tlsConfig: {caFile: /path/to/ca.crt} or caData.
  {{- end }}
  nodeCacheCapable: {{ .Values.extender.scheduler.nodeCacheCapable }}
  ignorable: {{ .Values.extender.scheduler.ignorable }}
  httpTimeout: {{ .Values.extender.scheduler.httpTimeout }}
  # Joulie manages no extended resources: the scheduler keeps its own
  # resource checks.
  managedResources: []
{{- end }}
