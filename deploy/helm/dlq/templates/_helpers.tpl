{{- define "dlq.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dlq.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* dlq.selector: the labels that select one component's pods; call with (list $ "worker"). */}}
{{- define "dlq.selector" -}}
app.kubernetes.io/name: {{ (index . 0).Chart.Name }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "dlq.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "dlq.secretName" -}}
{{- .Values.database.existingSecret | default (include "dlq.fullname" .) -}}
{{- end -}}

{{/* The configuration both binaries share, set by the chart. */}}
{{- define "dlq.common" -}}
log: {level: {{ .Values.logLevel | quote }}, format: json}
database: {migrate_on_start: {{ .Values.database.migrateOnStart }}, max_conns: {{ .Values.database.maxConns }}}
{{- end -}}

{{- define "dlq.workerConfig" -}}
{{- if not .Values.worker.config.routes }}{{ fail "worker.config.routes: at least one route is required" }}{{ end -}}
{{- $own := fromYaml (include "dlq.common" .) -}}
{{- $_ := set $own "http" (dict "listen" ":9464") -}}
{{- toYaml (merge $own (deepCopy .Values.worker.config)) -}}
{{- end -}}

{{- define "dlq.adminConfig" -}}
{{- if not .Values.admin.config.tokens }}{{ fail "admin.config.tokens: at least one token is required (dlq-admin token new)" }}{{ end -}}
{{- $own := fromYaml (include "dlq.common" .) -}}
{{- $http := dict "listen" ":8080" -}}
{{- if .Values.admin.tls.secretName -}}
{{- $_ := set $http "tls_cert_file" "/etc/dlq/tls/tls.crt" -}}
{{- $_ := set $http "tls_key_file" "/etc/dlq/tls/tls.key" -}}
{{- else if .Values.admin.allowInsecure -}}
{{- $_ := set $http "allow_insecure" true -}}
{{- else -}}
{{- fail "admin: bearer tokens must not cross the network in clear: set admin.tls.secretName, or admin.allowInsecure behind a TLS-terminating proxy or mesh" -}}
{{- end -}}
{{- $_ := set $own "http" $http -}}
{{- toYaml (merge $own (deepCopy .Values.admin.config)) -}}
{{- end -}}

{{/* dlq.pod: the pod template of one component; call with (list $ "worker"|"admin"). */}}
{{- define "dlq.pod" -}}
{{- $ := index . 0 -}}
{{- $c := index . 1 -}}
{{- $v := index $.Values $c -}}
{{- $port := ternary 9464 8080 (eq $c "worker") -}}
{{- $tls := and (eq $c "admin") $.Values.admin.tls.secretName -}}
metadata:
  labels:
    {{- include "dlq.labels" $ | nindent 4 }}
    {{- include "dlq.selector" (list $ $c) | nindent 4 }}
  annotations:
    {{- if or (eq $c "worker") (not $.Values.database.existingSecret) }}
    # A changed configuration rolls the pods.
    checksum/config: {{ include (printf "dlq.%sConfig" $c) $ | sha256sum | quote }}
    {{- end }}
    checksum/secret: {{ printf "%s%s" $.Values.database.url $.Values.database.existingSecret | sha256sum | quote }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- with $.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $.Values.podSecurityContext | nindent 4 }}
  # Longer than shutdown_grace, so SIGTERM's drain finishes before SIGKILL.
  terminationGracePeriodSeconds: {{ ternary 45 25 (eq $c "worker") }}
  containers:
    - name: dlq-{{ $c }}
      image: {{ include "dlq.image" $ | quote }}
      imagePullPolicy: {{ $.Values.image.pullPolicy }}
      args: [dlq-{{ $c }}, {{ ternary "run" "serve" (eq $c "worker") }}, --config, /etc/dlq/{{ $c }}.yaml]
      env:
        - name: DATABASE_URL
          valueFrom:
            secretKeyRef: {name: {{ include "dlq.secretName" $ | quote }}, key: database-url}
        {{- if eq $c "worker" }}
        - name: KAFKA_BOOTSTRAP_SERVERS
          value: {{ required "kafka.bootstrapServers is required" $.Values.kafka.bootstrapServers | quote }}
        {{- end }}
      ports:
        - {name: http, containerPort: {{ $port }}, protocol: TCP}
      livenessProbe:
        httpGet: {path: /healthz, port: http, scheme: {{ ternary "HTTPS" "HTTP" (not (empty $tls)) }}}
        periodSeconds: 10
        failureThreshold: 3
      readinessProbe:
        httpGet: {path: /readyz, port: http, scheme: {{ ternary "HTTPS" "HTTP" (not (empty $tls)) }}}
        periodSeconds: 5
        timeoutSeconds: 3
        failureThreshold: 3
      resources:
        {{- toYaml $v.resources | nindent 8 }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
      volumeMounts:
        - {name: config, mountPath: /etc/dlq, readOnly: true}
        {{- if $tls }}
        - {name: tls, mountPath: /etc/dlq/tls, readOnly: true}
        {{- end }}
  volumes:
    - name: config
      {{- if eq $c "worker" }}
      configMap:
        name: {{ include "dlq.fullname" $ }}
        items: [{key: worker.yaml, path: worker.yaml}]
      {{- else }}
      secret:
        secretName: {{ include "dlq.secretName" $ }}
        items: [{key: admin.yaml, path: admin.yaml}]
      {{- end }}
    {{- if $tls }}
    # A kubernetes.io/tls Secret; dlq-admin reads a renewed certificate without a restart.
    - name: tls
      secret: {secretName: {{ $tls }}}
    {{- end }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
