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

{{/* dlq.job: the scrape job of one component, the name the alerts select
(deploy/observability/alerts.yaml: dlq-worker or *-dlq-worker); call with (list $ "worker").
The Service's name when it already ends so, else RELEASE-dlq-worker: a release whose name
contains "dlq" names its Services RELEASE-worker. */}}
{{- define "dlq.job" -}}
{{- $ := index . 0 -}}
{{- $c := index . 1 -}}
{{- $svc := printf "%s-%s" (include "dlq.fullname" $) $c -}}
{{- if regexMatch (printf "^(.*-)?dlq-%s$" $c) $svc -}}
{{- $svc -}}
{{- else -}}
{{- printf "%s-dlq-%s" $.Release.Name $c -}}
{{- end -}}
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

{{/* Where the worker's pod mounts the Kafka secrets (dlq.pod), named by its configuration. */}}
{{- define "dlq.kafkaSASLDir" -}}/etc/dlq/kafka-sasl{{- end -}}
{{- define "dlq.kafkaCADir" -}}/etc/dlq/kafka-ca{{- end -}}
{{- define "dlq.kafkaClientDir" -}}/etc/dlq/kafka-client{{- end -}}

{{- define "dlq.kafkaSASLSecret" -}}
{{- .Values.kafka.sasl.existingSecret | default (printf "%s-kafka" (include "dlq.fullname" .)) -}}
{{- end -}}

{{/* dlq.kafka: the worker's kafka section the chart sets from kafka.* (YAML). */}}
{{- define "dlq.kafka" -}}
{{- $k := .Values.kafka -}}
{{- $wk := .Values.worker.config.kafka | default dict -}}
{{- range $section := list "extra" "consumer" "producer" -}}
{{- range $prop, $_ := (get $wk $section | default dict) -}}
{{- if regexMatch "(?i)password|secret" $prop -}}
{{- fail (printf "worker.config.kafka.%s.%s: it would land in a ConfigMap; give Kafka credentials as kafka.sasl.password or kafka.sasl.existingSecret" $section $prop) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $extra := dict -}}
{{- $files := dict -}}
{{- $protocol := $k.securityProtocol -}}
{{- if $k.sasl.mechanism -}}
{{- if not (has $k.sasl.mechanism (list "PLAIN" "SCRAM-SHA-256" "SCRAM-SHA-512")) -}}
{{- fail (printf "kafka.sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512" $k.sasl.mechanism) -}}
{{- end -}}
{{- $_ := set $extra "sasl.mechanism" $k.sasl.mechanism -}}
{{- $_ := set $extra "sasl.username" (required "kafka.sasl.username is required with kafka.sasl.mechanism" $k.sasl.username) -}}
{{- if not (or $k.sasl.password $k.sasl.existingSecret) -}}
{{- fail "kafka.sasl.password or kafka.sasl.existingSecret is required with kafka.sasl.mechanism" -}}
{{- end -}}
{{- $_ := set $files "sasl.password" (printf "%s/password" (include "dlq.kafkaSASLDir" .)) -}}
{{- $protocol = $protocol | default "SASL_SSL" -}}
{{- if not (hasPrefix "SASL_" $protocol) -}}
{{- fail (printf "kafka.securityProtocol: %s does not use kafka.sasl; SASL_SSL or SASL_PLAINTEXT" $protocol) -}}
{{- end -}}
{{- else if or $k.sasl.username $k.sasl.password $k.sasl.existingSecret -}}
{{- fail "kafka.sasl.mechanism is required with kafka.sasl's username or password" -}}
{{- end -}}
{{- if $k.tls.caSecret -}}
{{- $_ := set $extra "ssl.ca.location" (printf "%s/ca.crt" (include "dlq.kafkaCADir" .)) -}}
{{- end -}}
{{- if $k.tls.clientSecret -}}
{{- $_ := set $extra "ssl.certificate.location" (printf "%s/tls.crt" (include "dlq.kafkaClientDir" .)) -}}
{{- $_ := set $extra "ssl.key.location" (printf "%s/tls.key" (include "dlq.kafkaClientDir" .)) -}}
{{- end -}}
{{- if and (not $protocol) (or $k.tls.caSecret $k.tls.clientSecret) -}}
{{- $protocol = "SSL" -}}
{{- end -}}
{{- if $protocol -}}
{{- if not (has $protocol (list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL")) -}}
{{- fail (printf "kafka.securityProtocol: %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL" $protocol) -}}
{{- end -}}
{{- $_ := set $extra "security.protocol" $protocol -}}
{{- end -}}
{{- $out := dict -}}
{{- if $extra }}{{ $_ := set $out "extra" $extra }}{{ end -}}
{{- if $files }}{{ $_ := set $out "extra_files" $files }}{{ end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "dlq.workerConfig" -}}
{{- if not .Values.worker.config.routes }}{{ fail "worker.config.routes: at least one route is required" }}{{ end -}}
{{- $own := fromYaml (include "dlq.common" .) -}}
{{- $_ := set $own "http" (dict "listen" ":9464") -}}
{{- $kafka := fromYaml (include "dlq.kafka" .) -}}
{{- if $kafka }}{{ $_ := set $own "kafka" $kafka }}{{ end -}}
{{- toYaml (merge $own (deepCopy .Values.worker.config)) -}}
{{- end -}}

{{/* dlq.adminHTTP: dlq-admin's http section (YAML). It also decides the probes' and the
ServiceMonitor's scheme, so admin.yaml checks it even when an existing Secret holds the
configuration. */}}
{{- define "dlq.adminHTTP" -}}
{{- $http := dict "listen" ":8080" -}}
{{- if .Values.admin.tls.secretName -}}
{{- $_ := set $http "tls_cert_file" "/etc/dlq/tls/tls.crt" -}}
{{- $_ := set $http "tls_key_file" "/etc/dlq/tls/tls.key" -}}
{{- else if .Values.admin.allowInsecure -}}
{{- $_ := set $http "allow_insecure" true -}}
{{- else -}}
{{- fail "admin: bearer tokens must not cross the network in clear: set admin.tls.secretName, or admin.allowInsecure behind a TLS-terminating proxy or mesh" -}}
{{- end -}}
{{- toYaml $http -}}
{{- end -}}

{{- define "dlq.adminConfig" -}}
{{- if not .Values.admin.config.tokens }}{{ fail "admin.config.tokens: at least one token is required (dlq-admin token new)" }}{{ end -}}
{{- $own := fromYaml (include "dlq.common" .) -}}
{{- $_ := set $own "http" (fromYaml (include "dlq.adminHTTP" .)) -}}
{{- toYaml (merge $own (deepCopy .Values.admin.config)) -}}
{{- end -}}

{{/* dlq.disruptionBudget: a PodDisruptionBudget's spec that always lets a node drain
evict at least one pod of the component (a budget that allows none blocks every drain, as
minAvailable: 1 does with one replica); call with (list $ "worker"). */}}
{{- define "dlq.disruptionBudget" -}}
{{- $ := index . 0 -}}
{{- $c := index . 1 -}}
{{- $v := index $.Values $c -}}
{{- $pdb := $v.podDisruptionBudget -}}
{{- if not (kindIs "invalid" $pdb.minAvailable) -}}
{{- if ge (int $pdb.minAvailable) (int $v.replicas) -}}
{{- fail (printf "%s.podDisruptionBudget.minAvailable: %v of %v replicas would block every node drain; set it below %s.replicas, or use maxUnavailable" $c $pdb.minAvailable $v.replicas $c) -}}
{{- end -}}
minAvailable: {{ $pdb.minAvailable }}
{{- else -}}
{{- if lt (int $pdb.maxUnavailable) 1 -}}
{{- fail (printf "%s.podDisruptionBudget.maxUnavailable: %v would block every node drain; at least 1" $c $pdb.maxUnavailable) -}}
{{- end -}}
maxUnavailable: {{ $pdb.maxUnavailable }}
{{- end -}}
{{- end -}}

{{/* dlq.startupFailures: how many startupProbe failures (every 5 s) a container gets
before the kubelet restarts it. With migrate_on_start the health port opens only after the
migrations, which may take up to the binaries' migration timeout (5 minutes, waiting on
another replica's migration lock included): 66 x 5 s = 330 s covers it and the connection
to PostgreSQL. */}}
{{- define "dlq.startupFailures" -}}
{{- ternary 66 12 .Values.database.migrateOnStart -}}
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
    {{- $secrets := printf "%s%s" $.Values.database.url $.Values.database.existingSecret }}
    {{- if eq $c "worker" }}{{ $secrets = printf "%s%s" $secrets $.Values.kafka.sasl.password }}{{ end }}
    checksum/secret: {{ $secrets | sha256sum | quote }}
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
        # The static group membership id: the StatefulSet's pod name, stable across
        # restarts and unique across replicas, with nothing written on the read-only root.
        - name: DLQ_WORKER_GROUP_INSTANCE_ID
          valueFrom:
            fieldRef: {fieldPath: metadata.name}
        {{- end }}
      ports:
        - {name: http, containerPort: {{ $port }}, protocol: TCP}
      # The health port opens once the binary is set up (migrations applied): until then the
      # startupProbe, sized for migrate_on_start, holds the liveness probe back.
      startupProbe:
        httpGet: {path: /healthz, port: http, scheme: {{ ternary "HTTPS" "HTTP" (not (empty $tls)) }}}
        periodSeconds: 5
        failureThreshold: {{ include "dlq.startupFailures" $ }}
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
        {{- if eq $c "worker" }}
        {{- if $.Values.kafka.sasl.mechanism }}
        - {name: kafka-sasl, mountPath: {{ include "dlq.kafkaSASLDir" $ }}, readOnly: true}
        {{- end }}
        {{- if $.Values.kafka.tls.caSecret }}
        - {name: kafka-ca, mountPath: {{ include "dlq.kafkaCADir" $ }}, readOnly: true}
        {{- end }}
        {{- if $.Values.kafka.tls.clientSecret }}
        - {name: kafka-client, mountPath: {{ include "dlq.kafkaClientDir" $ }}, readOnly: true}
        {{- end }}
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
    {{- if eq $c "worker" }}
    {{- if $.Values.kafka.sasl.mechanism }}
    # The SASL password, read by the worker at start-up (kafka.extra_files).
    - name: kafka-sasl
      secret:
        secretName: {{ include "dlq.kafkaSASLSecret" $ }}
        items: [{key: {{ ternary ($.Values.kafka.sasl.existingSecretKey | default "sasl-password") "sasl-password" (not (empty $.Values.kafka.sasl.existingSecret)) }}, path: password}]
        defaultMode: 0440
    {{- end }}
    {{- if $.Values.kafka.tls.caSecret }}
    - name: kafka-ca
      secret:
        secretName: {{ $.Values.kafka.tls.caSecret }}
        items: [{key: {{ $.Values.kafka.tls.caKey }}, path: ca.crt}]
    {{- end }}
    {{- if $.Values.kafka.tls.clientSecret }}
    - name: kafka-client
      secret:
        secretName: {{ $.Values.kafka.tls.clientSecret }}
        items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
        defaultMode: 0440
    {{- end }}
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
  # Replicas spread over nodes and zones where the scheduler can, so one node or zone lost
  # does not take them all.
  topologySpreadConstraints:
  {{- if $v.topologySpreadConstraints }}
    {{- toYaml $v.topologySpreadConstraints | nindent 4 }}
  {{- else }}
    {{- range list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
    - maxSkew: 1
      topologyKey: {{ . }}
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "dlq.selector" (list $ $c) | nindent 10 }}
    {{- end }}
  {{- end }}
{{- end -}}
