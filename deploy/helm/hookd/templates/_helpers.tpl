{{/* The release's name for every object: "<release>-hookd", or the release name when it already says hookd. */}}
{{- define "hookd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hookd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hookd.labels" -}}
{{ include "hookd.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "hookd.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "hookd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "hookd.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The Secrets holding the master key and the database URL: yours, or the chart's. */}}
{{- define "hookd.masterKeySecret" -}}
{{- if .Values.masterKey.existingSecret -}}
{{- .Values.masterKey.existingSecret -}}
{{- else if .Values.masterKey.value -}}
{{- printf "%s-master-key" (include "hookd.fullname" .) -}}
{{- else -}}
{{- fail "masterKey: set masterKey.existingSecret (a Secret whose key master-key holds base64 of 32 random bytes: `openssl rand -base64 32`), or masterKey.value. Every pod needs the same key; endpoint secrets are sealed with it" -}}
{{- end -}}
{{- end -}}

{{- define "hookd.databaseSecret" -}}
{{- if .Values.database.existingSecret -}}
{{- .Values.database.existingSecret -}}
{{- else if .Values.database.url -}}
{{- printf "%s-database" (include "hookd.fullname" .) -}}
{{- else -}}
{{- fail "database: mode postgres needs database.existingSecret (a Secret whose key url holds the postgres:// URL) or database.url; for one pod without PostgreSQL set mode: sqlite" -}}
{{- end -}}
{{- end -}}

{{/* The environment every hookd container shares. */}}
{{- define "hookd.env" -}}
{{- if eq .Values.mode "postgres" }}
- name: HOOKD_DATABASE
  valueFrom:
    secretKeyRef:
      name: {{ include "hookd.databaseSecret" . }}
      key: {{ .Values.database.secretKey }}
{{- with .Values.database.schema }}
- name: HOOKD_SCHEMA
  value: {{ . | quote }}
{{- end }}
{{- else }}
- name: HOOKD_DATABASE
  value: /data/hookd.db
{{- end }}
# The key is read from a file, never put in the environment.
- name: HOOKD_MASTER_KEY_FILE
  value: /etc/hookd/master-key/{{ .Values.masterKey.secretKey }}
- name: HOOKD_LOG_FORMAT
  value: {{ .Values.config.logFormat | quote }}
- name: HOOKD_LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
{{- with .Values.config.egressAllow }}
- name: HOOKD_EGRESS_ALLOW
  value: {{ . | quote }}
{{- end }}
{{- with .Values.config.catalog }}
- name: HOOKD_CATALOG
  value: {{ . | quote }}
{{- end }}
{{- if .Values.config.metricsOwnerLabels }}
- name: HOOKD_METRICS_OWNER_LABELS
  value: "true"
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Non-root, read-only root filesystem, no privileges: the image's user (distroless nonroot). */}}
{{- define "hookd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "hookd.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The volumes every hookd pod mounts: the master key (read-only) and a scratch /tmp. */}}
{{- define "hookd.volumes" -}}
- name: master-key
  secret:
    secretName: {{ include "hookd.masterKeySecret" . }}
    defaultMode: 0400
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{- define "hookd.volumeMounts" -}}
- name: master-key
  mountPath: /etc/hookd/master-key
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Scheduling and pod-level settings shared by every pod. */}}
{{- define "hookd.podSpecCommon" -}}
serviceAccountName: {{ include "hookd.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
  {{- include "hookd.podSecurityContext" . | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Liveness and readiness on a named port. */}}
{{- define "hookd.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: {{ . }}}
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
startupProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 2
  failureThreshold: 60
{{- end -}}
