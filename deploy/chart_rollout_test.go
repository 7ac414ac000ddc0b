package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dlqops/dlq/internal/daemon"
)

// podOwner is a Deployment or a StatefulSet of the release.
type podOwner struct {
	kind, name string
	replicas   int32
	selector   map[string]string
	template   corev1.PodTemplateSpec
	service    string // a StatefulSet's governing Service
}

// checkStartup checks that the kubelet waits for a binary that is still migrating: the
// health port opens after migrate_on_start, which may take the binaries' migration
// timeout; the liveness probe alone would restart the pod after 30 s.
func checkStartup(t *testing.T, values map[string]any, w podOwner) {
	t.Helper()
	c := w.template.Spec.Containers[0]
	p := c.StartupProbe
	require.NotNil(t, p, "%s: no startupProbe: the liveness probe restarts a pod that is still migrating", w.name)
	require.Equal(t, c.LivenessProbe.HTTPGet, p.HTTPGet, "%s: the startupProbe asks what the liveness probe asks", w.name)
	budget := time.Duration(p.InitialDelaySeconds+p.PeriodSeconds*p.FailureThreshold) * time.Second
	migrate, _ := values["database"].(map[string]any)["migrateOnStart"].(bool)
	if _, set := values["database"].(map[string]any)["migrateOnStart"]; !set {
		migrate = true // the chart's default
	}
	if migrate {
		require.Greater(t, budget, daemon.MigrateTimeout, "%s: the startupProbe gives up before migrate_on_start may end", w.name)
	}
}

// checkSpread checks that the replicas are spread over nodes, softly (a cluster of one
// node still schedules them).
func checkSpread(t *testing.T, w podOwner) {
	t.Helper()
	var byNode bool
	for _, tsc := range w.template.Spec.TopologySpreadConstraints {
		require.True(t, matches(tsc.LabelSelector.MatchLabels, w.template.Labels), "%s: a spread constraint counts its own pods", w.name)
		require.Equal(t, corev1.ScheduleAnyway, tsc.WhenUnsatisfiable, "%s: a spread constraint that leaves replicas pending", w.name)
		byNode = byNode || tsc.TopologyKey == "kubernetes.io/hostname"
	}
	require.True(t, byNode, "%s: replicas are not spread over nodes", w.name)
}

// checkDisruptionBudgets checks that every budget selects one workload's pods and lets a
// node drain evict at least one of them, whatever the replicas.
func checkDisruptionBudgets(t *testing.T, workloads []podOwner, budgets []*policyv1.PodDisruptionBudget) {
	t.Helper()
	for _, b := range budgets {
		var owner *podOwner
		for i, w := range workloads {
			if matches(b.Spec.Selector.MatchLabels, w.template.Labels) {
				require.Nil(t, owner, "%s selects two workloads' pods", b.Name)
				owner = &workloads[i]
			}
		}
		require.NotNil(t, owner, "%s selects no pods", b.Name)
		require.GreaterOrEqual(t, allowedDisruptions(t, b, owner.replicas), int32(1),
			"%s: a node drain could evict none of %s's %d replicas", b.Name, owner.name, owner.replicas)
	}
}

// allowedDisruptions is the disruption controller's answer with every replica healthy.
func allowedDisruptions(t *testing.T, b *policyv1.PodDisruptionBudget, replicas int32) int32 {
	t.Helper()
	if b.Spec.MaxUnavailable != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, int(replicas), true)
		require.NoError(t, err)
		return int32(n)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, int(replicas), true)
	require.NoError(t, err)
	return replicas - int32(n)
}

// checkIdentity checks the worker's static group membership id: its StatefulSet's pod
// name (stable across restarts, unique across replicas), given by the downward API, so
// nothing is written on the read-only root.
func checkIdentity(t *testing.T, w podOwner, services []*corev1.Service) {
	t.Helper()
	require.Equal(t, "StatefulSet", w.kind, "%s: only a StatefulSet's pods keep their names", w.name)
	var governed bool
	for _, s := range services {
		governed = governed || (s.Name == w.service && s.Spec.ClusterIP == corev1.ClusterIPNone)
	}
	require.True(t, governed, "%s: its serviceName %q is no headless Service of the release", w.name, w.service)
	var id *corev1.EnvVar
	for i, e := range w.template.Spec.Containers[0].Env {
		if e.Name == "DLQ_WORKER_GROUP_INSTANCE_ID" {
			id = &w.template.Spec.Containers[0].Env[i]
		}
	}
	require.NotNil(t, id, "%s: the worker's identity is left to a lock file on the read-only root", w.name)
	require.Equal(t, "metadata.name", id.ValueFrom.FieldRef.FieldPath)
}

// Whoever can drain a node can drain it: with one replica or many, each budget lets one
// pod go; a minAvailable that would allow none is refused.
func TestDisruptionBudgetsNeverBlockADrain(t *testing.T) {
	for _, tc := range []map[string]any{
		with("admin.replicas", 1, "worker.replicas", 1),
		with("admin.replicas", 3, "worker.replicas", 2, "admin.podDisruptionBudget.minAvailable", 2),
	} {
		manifest, err := render(t, tc)
		require.NoError(t, err)
		checkRelease(t, tc, decodeStrict(t, manifest))
	}
	_, err := render(t, with("admin.replicas", 1, "admin.podDisruptionBudget.minAvailable", 1))
	require.ErrorContains(t, err, "admin.podDisruptionBudget.minAvailable: 1 of 1 replicas would block every node drain")
	_, err = render(t, with("worker.podDisruptionBudget.maxUnavailable", 0))
	require.ErrorContains(t, err, "worker.podDisruptionBudget.maxUnavailable: 0 would block every node drain")
}

// The install notes show how to reach the admin API the way it serves: HTTPS with the
// certificate's name and CA when it has a TLS Secret, plain HTTP otherwise.
func TestNotesFollowTheAdminsTLS(t *testing.T) {
	plain := notes(t, minimal())
	require.Contains(t, plain, "--url http://127.0.0.1:8080")
	require.NotContains(t, plain, "https://")

	tls := notes(t, with("admin.allowInsecure", false, "admin.tls.secretName", "dlq-admin-tls"))
	require.NotContains(t, tls, "http://")
	require.Contains(t, tls, "--url https://dlq-admin.dlq.svc:8080")
	require.Contains(t, tls, "get secret dlq-admin-tls -o jsonpath='{.data.ca\\.crt}'")
	require.Contains(t, tls, "SSL_CERT_FILE=dlq-ca.crt dlq-admin --url https://dlq-admin.dlq.svc:8080")
}

// notes is the NOTES.txt Helm prints after installing the chart with values as dlq.
func notes(t *testing.T, values map[string]any) string {
	t.Helper()
	rel, err := install(t, "dlq", values)
	require.NoError(t, err)
	require.NotEmpty(t, strings.TrimSpace(rel.Info.Notes))
	return rel.Info.Notes
}
