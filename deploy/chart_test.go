// Package deploy holds what a platform team deploys dlq with (the Helm chart, alert rules,
// a dashboard) and the tests that check them offline. It is a module of its own so that
// Helm's and Kubernetes' dependencies stay out of the main module, which services import
// for the deadletter package.
package deploy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	helmrelease "helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/dlqops/dlq/cmd/dlq-admin/adminconfig"
	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/kafkaclient"
)

const chartDir = "helm/dlq"

// minimal is the least a release needs: a database, a broker, a route and a token.
func minimal() map[string]any {
	return map[string]any{
		"database": map[string]any{"url": "postgres://dlq:secret@db:5432/dlq"},
		"kafka":    map[string]any{"bootstrapServers": "kafka-0:9092,kafka-1:9092"},
		"worker": map[string]any{"config": map[string]any{"routes": []any{
			map[string]any{"name": "orders", "topics": []any{"orders.dlq"}, "schedule": "@every 5m", "max_retries": 5},
		}}},
		"admin": map[string]any{"config": map[string]any{"tokens": []any{
			map[string]any{"name": "ops", "role": "operator", "sha256": strings.Repeat("ab", 32)},
		}, "replay_topics": []any{"orders"}}, "allowInsecure": true},
	}
}

// with returns minimal() with the dotted path set to v.
func with(kv ...any) map[string]any {
	vals := minimal()
	for i := 0; i < len(kv); i += 2 {
		m := vals
		keys := strings.Split(kv[i].(string), ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = kv[i+1]
	}
	return vals
}

// The matrix every check runs over; kinds lists the objects each case must render.
var matrix = []struct {
	name   string
	values map[string]any
	kinds  []string
}{
	{"minimal", minimal(), []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "StatefulSet"}},
	{"service monitor", with("serviceMonitor.enabled", true, "serviceMonitor.labels", map[string]any{"release": "kube-prometheus"}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "ServiceMonitor", "StatefulSet"}},
	{"existing secret", with("database.url", "", "database.existingSecret", "dlq-credentials", "admin.config.tokens", []any{}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Service", "Service", "StatefulSet"}},
	{"worker only", with("admin.enabled", false, "admin.config.tokens", []any{}),
		[]string{"ConfigMap", "PodDisruptionBudget", "Secret", "Service", "StatefulSet"}},
	{"admin only, no PDBs", with("worker.enabled", false, "worker.config.routes", []any{}, "kafka.bootstrapServers", "",
		"admin.podDisruptionBudget.enabled", false, "worker.podDisruptionBudget.enabled", false),
		[]string{"Deployment", "Secret", "Service"}},
	{"service monitor, admin TLS", with("serviceMonitor.enabled", true, "admin.allowInsecure", false, "admin.tls.secretName", "dlq-admin-tls"),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "ServiceMonitor", "StatefulSet"}},
	{"service monitor, admin TLS, own tlsConfig", with("serviceMonitor.enabled", true, "admin.allowInsecure", false, "admin.tls.secretName", "dlq-admin-tls",
		"serviceMonitor.adminTLSConfig", map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "corp-ca", "key": "ca.pem"}}, "serverName": "dlq.example.com"}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "ServiceMonitor", "StatefulSet"}},
	{"scaled, migrations by hand, pull secret", with("worker.replicas", 3, "admin.replicas", 3, "database.migrateOnStart", false,
		"imagePullSecrets", []any{map[string]any{"name": "registry"}}, "image.tag", "1.2.3",
		"worker.config.kafka", map[string]any{"extra": map[string]any{"security.protocol": "SSL"}},
		"worker.nodeSelector", map[string]any{"pool": "dlq"}, "admin.service.type", "LoadBalancer",
		"admin.allowInsecure", false, "admin.tls.secretName", "dlq-admin-tls"),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "StatefulSet"}},
	{"kafka SASL_SSL: password in the chart's secret, a CA", with(
		"kafka.sasl", map[string]any{"mechanism": "SCRAM-SHA-512", "username": "dlq", "password": kafkaPassword},
		"kafka.tls", map[string]any{"caSecret": "kafka-ca", "caKey": "ca.pem"},
		"worker.config.kafka", map[string]any{"extra": map[string]any{"client.id": "dlq-worker"}}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Secret", "Service", "Service", "StatefulSet"}},
	{"kafka SASL from an existing secret, a client certificate", with(
		"kafka.securityProtocol", "SASL_SSL",
		"kafka.sasl", map[string]any{"mechanism": "PLAIN", "username": "dlq", "existingSecret": "kafka-credentials", "existingSecretKey": "pw"},
		"kafka.tls", map[string]any{"clientSecret": "kafka-client-cert"},
		"database.url", "", "database.existingSecret", "dlq-credentials", "admin.config.tokens", []any{}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Service", "Service", "StatefulSet"}},
	{"kafka TLS only", with("kafka.tls", map[string]any{"caSecret": "kafka-ca"}),
		[]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "PodDisruptionBudget", "Secret", "Service", "Service", "StatefulSet"}},
}

// consoleSessionTTL is how long a console sign-in lasts (internal/console's SessionTTL).
const consoleSessionTTL = 8 * time.Hour

// kafkaPassword is the SASL password of the matrix: it must reach the worker's loaded
// configuration and appear in no ConfigMap and no environment variable.
const kafkaPassword = "kafka-sasl-pw-7f3a"

func TestChartLints(t *testing.T) {
	for _, tc := range matrix {
		t.Run(tc.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, tc.values, "dlq", nil)
			for _, m := range l.Messages {
				require.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
			}
		})
	}
}

// The chart refuses a release that could not work, naming what is missing.
func TestChartRefusesIncompleteValues(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{with("database.url", ""), "database.url is required"},
		{with("kafka.bootstrapServers", ""), "kafka.bootstrapServers is required"},
		{with("worker.config.routes", []any{}), "worker.config.routes: at least one route"},
		{with("admin.config.tokens", []any{}), "admin.config.tokens: at least one token"},
		{with("admin.allowInsecure", false), "set admin.tls.secretName, or admin.allowInsecure"},
		// The chart cannot read an existing Secret's admin.yaml, but it decides the probes' scheme.
		{with("database.url", "", "database.existingSecret", "dlq-credentials", "admin.config.tokens", []any{}, "admin.allowInsecure", false),
			"set admin.tls.secretName, or admin.allowInsecure"},
		{with("worker.config.kafka", map[string]any{"extra": map[string]any{"sasl.password": "x"}}),
			"worker.config.kafka.extra.sasl.password: it would land in a ConfigMap"},
		{with("worker.config.kafka", map[string]any{"extra": map[string]any{"ssl.key.password": "x"}}),
			"worker.config.kafka.extra.ssl.key.password: it would land in a ConfigMap"},
		{with("worker.config.kafka", map[string]any{"consumer": map[string]any{"sasl.password": "x"}}),
			"worker.config.kafka.consumer.sasl.password: it would land in a ConfigMap"},
		{with("worker.config.kafka", map[string]any{"producer": map[string]any{"ssl.keystore.password": "x"}}),
			"worker.config.kafka.producer.ssl.keystore.password: it would land in a ConfigMap"},
		{with("kafka.sasl", map[string]any{"mechanism": "PLAIN", "username": "dlq"}),
			"kafka.sasl.password or kafka.sasl.existingSecret is required"},
		{with("kafka.sasl", map[string]any{"mechanism": "PLAIN", "password": "x"}), "kafka.sasl.username is required"},
		{with("kafka.sasl", map[string]any{"username": "dlq", "password": "x"}), "kafka.sasl.mechanism is required"},
		{with("kafka.sasl", map[string]any{"mechanism": "GSSAPI", "username": "dlq", "password": "x"}),
			`kafka.sasl.mechanism: "GSSAPI" is not one of`},
		{with("kafka.securityProtocol", "SSL", "kafka.sasl", map[string]any{"mechanism": "PLAIN", "username": "dlq", "password": "x"}),
			"kafka.securityProtocol: SSL does not use kafka.sasl"},
		{with("kafka.securityProtocol", "TLS"), `kafka.securityProtocol: "TLS" is not one of`},
	} {
		_, err := render(t, tc.values)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestChartRendersValidObjects(t *testing.T) {
	for _, tc := range matrix {
		t.Run(tc.name, func(t *testing.T) {
			manifest, err := render(t, tc.values)
			require.NoError(t, err)
			objs := decodeStrict(t, manifest)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.kind)
			}
			sort.Strings(kinds)
			require.Equal(t, tc.kinds, kinds)
			checkRelease(t, tc.values, objs)
		})
	}
}

type object struct {
	kind string
	obj  any
}

// namespace is the namespace of every rendered release.
const namespace = "dlq"

// render is `helm template` of the chart with values, as release dlq.
func render(t *testing.T, values map[string]any) (string, error) {
	t.Helper()
	return renderAs(t, "dlq", values)
}

// renderAs is `helm template RELEASE` of the chart with values.
func renderAs(t *testing.T, release string, values map[string]any) (string, error) {
	t.Helper()
	rel, err := install(t, release, values)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// install is a client-only dry run of `helm install RELEASE` of the chart with values.
func install(t *testing.T, release string, values map[string]any) (*helmrelease.Release, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	require.NoError(t, err)
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = release, namespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	install.APIVersions = chartutil.VersionSet{"monitoring.coreos.com/v1/ServiceMonitor"}
	return install.Run(chrt, values)
}

// decodeStrict decodes every document into its Kubernetes API type, refusing unknown
// fields, so a misspelt or misplaced key fails here rather than in a cluster.
func decodeStrict(t *testing.T, manifest string) []object {
	t.Helper()
	var out []object
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var head struct{ APIVersion, Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		var obj any
		switch head.APIVersion + "/" + head.Kind {
		case "v1/ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1/Secret":
			obj = &corev1.Secret{}
		case "v1/Service":
			obj = &corev1.Service{}
		case "apps/v1/Deployment":
			obj = &appsv1.Deployment{}
		case "apps/v1/StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "policy/v1/PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		default:
			t.Fatalf("unexpected object %s/%s:\n%s", head.APIVersion, head.Kind, doc)
		}
		raw, err := yaml.YAMLToJSON([]byte(doc))
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(obj), "%s:\n%s", head.Kind, doc)
		out = append(out, object{head.Kind, obj})
	}
	return out
}

// checkRelease checks that the objects fit together and that each binary accepts its
// rendered configuration, loaded and validated by the binaries' own loader.
func checkRelease(t *testing.T, values map[string]any, objs []object) {
	var cm *corev1.ConfigMap
	var secret *corev1.Secret // the one with the database URL
	secrets := map[string]*corev1.Secret{}
	var services []*corev1.Service
	var workloads []podOwner
	var budgets []*policyv1.PodDisruptionBudget
	var monitor *monitoringv1.ServiceMonitor
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			cm = v
			for key, data := range v.Data {
				require.NotContains(t, data, kafkaPassword, "ConfigMap %s, %s", v.Name, key)
				require.NotContains(t, data, "postgres://", "ConfigMap %s, %s", v.Name, key)
			}
		case *corev1.Secret:
			secrets[v.Name] = v
			if _, ok := v.StringData["database-url"]; ok {
				secret = v
			}
		case *corev1.Service:
			services = append(services, v)
		case *appsv1.Deployment:
			workloads = append(workloads, podOwner{v.Kind, v.Name, *v.Spec.Replicas, v.Spec.Selector.MatchLabels, v.Spec.Template, ""})
		case *appsv1.StatefulSet:
			workloads = append(workloads, podOwner{v.Kind, v.Name, *v.Spec.Replicas, v.Spec.Selector.MatchLabels, v.Spec.Template, v.Spec.ServiceName})
		case *policyv1.PodDisruptionBudget:
			budgets = append(budgets, v)
		case *monitoringv1.ServiceMonitor:
			monitor = v
		}
	}
	checkDisruptionBudgets(t, workloads, budgets)
	if monitor != nil {
		checkScrapes(t, values, monitor, services)
	}
	for _, s := range services {
		if s.Labels["app.kubernetes.io/component"] != "admin" {
			continue
		}
		// The console's sessions live in one process's memory (internal/console/session.go):
		// a client stays on its pod for as long as a sign-in lasts.
		require.Equal(t, corev1.ServiceAffinityClientIP, s.Spec.SessionAffinity, "%s: the console needs sticky sessions", s.Name)
		require.GreaterOrEqual(t, *s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds, int32(consoleSessionTTL.Seconds()), s.Name)
	}
	for _, d := range workloads {
		pod := d.template
		require.True(t, matches(d.selector, pod.Labels), "%s selects its pods", d.name)
		checkStartup(t, values, d)
		checkSpread(t, d)
		require.True(t, *pod.Spec.SecurityContext.RunAsNonRoot, "%s runs as non-root", d.name)
		c := pod.Spec.Containers[0]
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		require.False(t, c.Resources.Requests.Memory().IsZero(), "%s requests memory", d.name)
		require.False(t, c.Resources.Limits.Memory().IsZero(), "%s has a memory limit", d.name)
		require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
		require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
		require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.StrVal)
		require.Equal(t, "http", c.Ports[0].Name)
		binary, cfgPath := c.Args[0], c.Args[3]
		require.Equal(t, "DATABASE_URL", c.Env[0].Name)
		for _, e := range c.Env {
			require.NotContains(t, e.Value, kafkaPassword, "%s's environment", d.name)
			require.NotContains(t, e.Value, "postgres://", "%s's environment", d.name)
		}
		var cfgYAML string
		switch binary {
		case "dlq-worker":
			require.Equal(t, []string{"dlq-worker", "run", "--config", "/etc/dlq/worker.yaml"}, c.Args)
			checkIdentity(t, d, services)
			cfgYAML = cm.Data["worker.yaml"]
			var cfg workerconfig.Config
			loadConfig(t, mountedFiles(t, cfgYAML, pod, secrets), "DLQ_WORKER_", &cfg)
			checkKafkaSecurity(t, values, cfg.Kafka, pod, secrets)
			require.Equal(t, fmt.Sprintf(":%d", c.Ports[0].ContainerPort), cfg.HTTP.Listen, "the probes reach the port the worker listens on")
			require.Equal(t, "orders", cfg.Routes[0].Name)
			require.Equal(t, "KAFKA_BOOTSTRAP_SERVERS", c.Env[1].Name)
			require.Equal(t, values["kafka"].(map[string]any)["bootstrapServers"], c.Env[1].Value)
		case "dlq-admin":
			require.Equal(t, []string{"dlq-admin", "serve", "--config", "/etc/dlq/admin.yaml"}, c.Args)
			if secret == nil { // an existing secret holds it
				continue
			}
			cfgYAML = secret.StringData["admin.yaml"]
			var cfg adminconfig.Config
			loadConfig(t, cfgYAML, "DLQ_ADMIN_", &cfg)
			require.Equal(t, fmt.Sprintf(":%d", c.Ports[0].ContainerPort), cfg.HTTP.Listen, "the probes reach the port the API listens on")
			require.Len(t, cfg.Tokens, 1)
			if cfg.HTTP.TLSCertFile != "" {
				require.Equal(t, corev1.URISchemeHTTPS, c.ReadinessProbe.HTTPGet.Scheme, "the probes speak TLS to a TLS listener")
				require.Equal(t, corev1.URISchemeHTTPS, c.LivenessProbe.HTTPGet.Scheme)
				require.Equal(t, "/etc/dlq/tls/tls.crt", cfg.HTTP.TLSCertFile)
				require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/dlq/tls", ReadOnly: true})
			} else {
				require.True(t, cfg.HTTP.AllowInsecure)
			}
		default:
			t.Fatalf("%s runs %q", d.name, binary)
		}
		require.Equal(t, filepath.Base(cfgPath), volumeItem(pod.Spec.Volumes[0]), "the configuration is mounted where the binary reads it")
		var served bool
		for _, s := range services {
			served = served || (matches(s.Spec.Selector, pod.Labels) && s.Spec.Ports[0].TargetPort.StrVal == "http")
		}
		require.True(t, served, "a Service selects %s's pods", d.name)
	}
	if secret != nil {
		require.Equal(t, values["database"].(map[string]any)["url"], secret.StringData["database-url"])
	}
}

// checkScrapes checks that the ServiceMonitor scrapes each Service once, over HTTPS with
// the admin certificate's CA when dlq-admin serves TLS.
func checkScrapes(t *testing.T, values map[string]any, sm *monitoringv1.ServiceMonitor, services []*corev1.Service) {
	t.Helper()
	adminTLS, _ := values["admin"].(map[string]any)["tls"].(map[string]any)
	tlsSecret, _ := adminTLS["secretName"].(string)
	targets := scrapeTargets(t, sm, services)
	for _, s := range services {
		tg, ok := targets[s.Name]
		require.True(t, ok, "the ServiceMonitor scrapes %s", s.Name)
		require.Equal(t, "/metrics", tg.endpoint.Path)
		if s.Labels["app.kubernetes.io/component"] == "admin" && tlsSecret != "" {
			require.NotNil(t, tg.endpoint.Scheme, "%s serves TLS only", s.Name)
			require.Equal(t, "https", strings.ToLower(string(*tg.endpoint.Scheme)), "%s serves TLS only", s.Name)
			tc := tg.endpoint.TLSConfig
			require.NotNil(t, tc, "%s: the certificate is checked", s.Name)
			if own, _ := values["serviceMonitor"].(map[string]any)["adminTLSConfig"].(map[string]any); len(own) > 0 { // {}: the chart's default
				raw, err := json.Marshal(own)
				require.NoError(t, err)
				var want monitoringv1.TLSConfig
				require.NoError(t, json.Unmarshal(raw, &want))
				require.Equal(t, &want, tc, "serviceMonitor.adminTLSConfig is the endpoint's tlsConfig")
				continue
			}
			require.Equal(t, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: tlsSecret}, Key: "ca.crt"},
				tc.CA.Secret, "the CA is the ca.crt of the admin certificate's Secret")
			require.Equal(t, s.Name+"."+namespace+".svc", *tc.ServerName, "the certificate is checked for the Service's name")
			require.Nil(t, tc.InsecureSkipVerify)
		} else if tg.endpoint.Scheme != nil {
			require.Equal(t, "http", strings.ToLower(string(*tg.endpoint.Scheme)), "%s serves plain HTTP", s.Name)
		}
	}
}

// target is what Prometheus scrapes for one Service: the ServiceMonitor's endpoint and the
// job label it gives the series.
type target struct {
	endpoint monitoringv1.Endpoint
	job      string
}

// scrapeTargets simulates prometheus-operator's scrape configuration: each endpoint of the
// ServiceMonitor discovers the selected Services that have its port, with the job label
// the Service's name (or its jobLabel label), then applies the endpoint's relabelings. A
// Service scraped by two endpoints fails the test.
func scrapeTargets(t *testing.T, sm *monitoringv1.ServiceMonitor, services []*corev1.Service) map[string]target {
	t.Helper()
	meta := regexp.MustCompile(`[^a-zA-Z0-9_]`)
	out := map[string]target{}
	for _, ep := range sm.Spec.Endpoints {
		for _, s := range services {
			if !matches(sm.Spec.Selector.MatchLabels, s.Labels) || !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				continue
			}
			lset := map[string]string{"job": s.Name, "__meta_kubernetes_service_name": s.Name, "__meta_kubernetes_namespace": namespace}
			if v, ok := s.Labels[sm.Spec.JobLabel]; ok && sm.Spec.JobLabel != "" {
				lset["job"] = v
			}
			for k, v := range s.Labels {
				lset["__meta_kubernetes_service_label_"+meta.ReplaceAllString(k, "_")] = v
			}
			if !relabel(t, lset, ep.RelabelConfigs) {
				continue
			}
			_, dup := out[s.Name]
			require.False(t, dup, "%s is scraped twice", s.Name)
			out[s.Name] = target{ep, lset["job"]}
		}
	}
	return out
}

// relabel applies Prometheus' keep, drop and replace relabelings to lset; false when the
// target is dropped.
func relabel(t *testing.T, lset map[string]string, cfgs []monitoringv1.RelabelConfig) bool {
	t.Helper()
	for _, c := range cfgs {
		var vals []string
		for _, l := range c.SourceLabels {
			vals = append(vals, lset[string(l)])
		}
		sep := ";"
		if c.Separator != nil {
			sep = *c.Separator
		}
		val := strings.Join(vals, sep)
		re := regexp.MustCompile("^(?:" + cmp.Or(c.Regex, "(.*)") + ")$")
		switch strings.ToLower(cmp.Or(c.Action, "replace")) {
		case "keep":
			if !re.MatchString(val) {
				return false
			}
		case "drop":
			if re.MatchString(val) {
				return false
			}
		case "replace":
			m := re.FindStringSubmatchIndex(val)
			if m == nil {
				continue
			}
			repl := "$1"
			if c.Replacement != nil {
				repl = *c.Replacement
			}
			lset[c.TargetLabel] = string(re.ExpandString(nil, repl, val, m))
		default:
			t.Fatalf("relabel action %q is not simulated", c.Action)
		}
	}
	return true
}

// secretFile is what the pod finds at path: the item of a mounted Secret volume, with the
// value of a Secret the chart renders, or "<secret>/<key>" for one it only names.
func secretFile(pod corev1.PodTemplateSpec, secrets map[string]*corev1.Secret, path string) (string, bool) {
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				if it.Path != rel {
					continue
				}
				if s := secrets[v.Secret.SecretName]; s != nil {
					return s.StringData[it.Key], true
				}
				return v.Secret.SecretName + "/" + it.Key, true
			}
		}
	}
	return "", false
}

// mountedFiles writes each file the worker's kafka.extra_files names as the pod would see
// it, under a temporary root, and returns the configuration pointing there, so that the
// binary's own loader reads the mounted Secret.
func mountedFiles(t *testing.T, raw string, pod corev1.PodTemplateSpec, secrets map[string]*corev1.Secret) string {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(raw), &cfg))
	kafka, _ := cfg["kafka"].(map[string]any)
	files, _ := kafka["extra_files"].(map[string]any)
	root := t.TempDir()
	for prop, p := range files {
		content, ok := secretFile(pod, secrets, p.(string))
		require.True(t, ok, "kafka.extra_files.%s: %s is no file of a Secret the pod mounts", prop, p)
		local := filepath.Join(root, p.(string))
		require.NoError(t, os.MkdirAll(filepath.Dir(local), 0o700))
		require.NoError(t, os.WriteFile(local, []byte(content), 0o600))
		files[prop] = local
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return string(out)
}

// checkKafkaSecurity checks that the worker's loaded Kafka properties are the release's
// kafka.* values: the password read from the mounted Secret, the certificates' paths
// files of mounted Secrets.
func checkKafkaSecurity(t *testing.T, values map[string]any, k kafkaclient.Config, pod corev1.PodTemplateSpec, secrets map[string]*corev1.Secret) {
	t.Helper()
	// Helm fills the chart's defaults into values: an empty string is an unset value.
	kv := values["kafka"].(map[string]any)
	sasl, _ := kv["sasl"].(map[string]any)
	tls, _ := kv["tls"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	// The release's own worker.config.kafka.extra, then what the chart sets from kafka.*.
	want := map[string]string{}
	wk, _ := values["worker"].(map[string]any)["config"].(map[string]any)["kafka"].(map[string]any)
	extra, _ := wk["extra"].(map[string]any)
	for prop, v := range extra {
		want[prop] = v.(string)
	}
	if str(sasl, "mechanism") != "" {
		want["sasl.mechanism"], want["sasl.username"] = str(sasl, "mechanism"), str(sasl, "username")
		want["security.protocol"] = "SASL_SSL"
		want["sasl.password"] = cmp.Or(str(sasl, "password"), str(sasl, "existingSecret")+"/"+str(sasl, "existingSecretKey"))
	} else if str(tls, "caSecret")+str(tls, "clientSecret") != "" {
		want["security.protocol"] = "SSL"
	}
	if ca := str(tls, "caSecret"); ca != "" {
		want["ssl.ca.location"] = ca + "/" + cmp.Or(str(tls, "caKey"), "ca.crt")
	}
	if client := str(tls, "clientSecret"); client != "" {
		want["ssl.certificate.location"], want["ssl.key.location"] = client+"/tls.crt", client+"/tls.key"
	}
	got := map[string]string{}
	for prop, v := range k.Extra {
		if strings.HasSuffix(prop, ".location") {
			content, ok := secretFile(pod, secrets, v)
			require.True(t, ok, "%s: %s is no file of a Secret the pod mounts", prop, v)
			v = content
		}
		got[prop] = v
	}
	require.Equal(t, want, got)
}

// volumeItem is the file name a ConfigMap or Secret volume mounts.
func volumeItem(v corev1.Volume) string {
	if v.Secret != nil {
		return v.Secret.Items[0].Path
	}
	return v.ConfigMap.Items[0].Path
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// loadConfig writes raw to a file and loads it as the binary would, with a database URL.
func loadConfig(t *testing.T, raw, prefix string, dst config.Validatable) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(raw), 0o600))
	t.Setenv("DATABASE_URL", "")
	t.Setenv(prefix+"DATABASE_URL", "postgres://dlq@db/dlq")
	t.Setenv(prefix+"KAFKA_BOOTSTRAP_SERVERS", "kafka:9092")
	require.NoError(t, config.Load(path, prefix, dst), "the binary refuses the rendered configuration:\n%s", raw)
}

// Whatever the release's name, the ServiceMonitor gives its series the job labels the
// alert rules select (each job=~ regex of alerts.yaml), without renaming a Service: the
// job is the Service's name when that already ends in dlq-worker or dlq-admin (the labels
// of existing releases stay), else RELEASE-dlq-worker and RELEASE-dlq-admin.
func TestServiceMonitorJobsMatchTheAlerts(t *testing.T) {
	raw, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	selectors := map[string][]string{} // component: the alerts' job regexes
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range regexp.MustCompile(`job=~"([^"]*)"`).FindAllStringSubmatch(r.Expr, -1) {
				c := "worker"
				if strings.Contains(m[1], "admin") {
					c = "admin"
				}
				selectors[c] = append(selectors[c], m[1])
			}
		}
	}
	require.NotEmpty(t, selectors["worker"])
	require.NotEmpty(t, selectors["admin"])
	for _, tc := range []struct{ release, fullname, job string }{
		{"dlq", "dlq", "dlq"},
		{"prod", "prod-dlq", "prod-dlq"},
		{"prod-dlq", "prod-dlq", "prod-dlq"},
		{"dlq-prod", "dlq-prod", "dlq-prod-dlq"},
		{"mydlq", "mydlq", "mydlq-dlq"},
		{"orders-dlq-eu", "orders-dlq-eu", "orders-dlq-eu-dlq"},
	} {
		t.Run(tc.release, func(t *testing.T) {
			manifest, err := renderAs(t, tc.release, with("serviceMonitor.enabled", true))
			require.NoError(t, err)
			var services []*corev1.Service
			var sm *monitoringv1.ServiceMonitor
			for _, o := range decodeStrict(t, manifest) {
				switch v := o.obj.(type) {
				case *corev1.Service:
					services = append(services, v)
				case *monitoringv1.ServiceMonitor:
					sm = v
				}
			}
			require.NotNil(t, sm)
			targets := scrapeTargets(t, sm, services)
			require.Len(t, services, 2)
			for _, s := range services {
				c := s.Labels["app.kubernetes.io/component"]
				require.Equal(t, tc.fullname+"-"+c, s.Name, "the Service keeps its name")
				job := targets[s.Name].job
				require.Equal(t, tc.job+"-"+c, job)
				for _, re := range selectors[c] {
					require.Regexp(t, "^(?:"+re+")$", job, "the alerts' job=~%q selects the %s's series", re, c)
				}
			}
		})
	}
}

// The Secret the chart makes for kafka.sasl.password is RELEASE-dlq-kafka, or
// RELEASE-kafka when the release's name contains "dlq" (as every object of the chart).
func TestKafkaSecretName(t *testing.T) {
	for release, want := range map[string]string{"dlq": "dlq-kafka", "prod": "prod-dlq-kafka", "dlq-prod": "dlq-prod-kafka"} {
		manifest, err := renderAs(t, release, with("kafka.sasl", map[string]any{"mechanism": "PLAIN", "username": "dlq", "password": kafkaPassword}))
		require.NoError(t, err)
		var names []string
		for _, o := range decodeStrict(t, manifest) {
			if s, ok := o.obj.(*corev1.Secret); ok {
				names = append(names, s.Name)
			}
		}
		require.Contains(t, names, want, "release %s", release)
	}
}
