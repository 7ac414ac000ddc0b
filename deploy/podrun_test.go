package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// readyWithin bounds how long a started pod may take to become ready here: the broker's
// group join and the first metadata, on a loaded machine.
const readyWithin = 3 * time.Minute

// The chart's pods start and pass their probes as Kubernetes runs them: each container's
// real binary with its arguments and environment, its configuration and Secrets mounted
// where the pod mounts them, a read-only root with only the pod's emptyDirs writable, as
// the pod's user, against the real stack; then SIGTERM stops it cleanly within its
// grace. With the default values (plain HTTP behind a proxy) and with the admin serving
// TLS from a kubernetes.io/tls Secret.
func TestChartPodsRunAsKubernetesRunsThem(t *testing.T) {
	requirePodRun(t)
	k, values := podRelease(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{{"default values", values()}, {"admin TLS", values("admin.allowInsecure", false, "admin.tls.secretName", "dlq-admin-tls")}} {
		t.Run(tc.name, func(t *testing.T) {
			ws := k.release(t, tc.values)
			require.Len(t, ws, 2, "a worker and an admin")
			for _, w := range ws {
				t.Run(w.component, func(t *testing.T) {
					p := k.start(t, w.podName(0), w.template.Spec)
					p.waitStarted(t)
					p.waitReady(t, readyWithin)
					require.NoError(t, p.probe(w.template.Spec.Containers[0].LivenessProbe), "%s: liveness after ready", p.name)
					// The image's HEALTHCHECK, run in the container: the binary asks its own
					// health endpoint, found from the configuration the pod mounts.
					c := w.template.Spec.Containers[0]
					out, err := p.exec(c.Args[0], "health", c.Args[2], c.Args[3])
					require.NoError(t, err, "%s health: %s", c.Args[0], out)
					require.Contains(t, out, "/readyz: ")
					out, err = p.exec(c.Args[0], "health", "--live", c.Args[2], c.Args[3])
					require.NoError(t, err, "%s health --live: %s", c.Args[0], out)
					require.Contains(t, out, "/healthz: ")
					if w.component == "worker" {
						argv, _ := imageHealthcheck(t)
						out, err = p.exec(argv...)
						require.NoError(t, err, "the image's HEALTHCHECK %q: %s", argv, out)
					}
					p.stop(t)
				})
			}
		})
	}
}

// The pod run fails where a binary writes on the read-only root and the template mounts
// nothing there: the worker's default identity takes a lock file in the temporary
// directory, which the chart's worker avoids by naming its identity (the pod's name). With
// an emptyDir at /tmp the same pod starts.
func TestPodRunFailsWhereABinaryWritesOutsideAMount(t *testing.T) {
	requirePodRun(t)
	k, values := podRelease(t)
	var worker *workload
	for _, w := range k.release(t, values()) {
		if w.component == "worker" {
			worker = &w
		}
	}
	require.NotNil(t, worker)
	c := &worker.template.Spec.Containers[0]
	var env []corev1.EnvVar
	for _, e := range c.Env {
		if e.Name != "DLQ_WORKER_GROUP_INSTANCE_ID" {
			env = append(env, e)
		}
	}
	require.Len(t, env, len(c.Env)-1, "the chart names the worker's identity")
	c.Env = env
	p := k.start(t, worker.podName(0), worker.template.Spec)
	select {
	case <-p.exited:
	case <-time.After(readyWithin):
		t.Fatalf("the worker ran without a writable temporary directory; its output:\n%s", p.out.String())
	}
	require.Error(t, p.err)
	require.Contains(t, p.out.String(), "read-only file system", p.exitedWith())

	// The same pod with an emptyDir where the binary writes starts: the one writable place
	// a pod has is the one it mounts.
	worker.template.Spec.Volumes = append(worker.template.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	p = k.start(t, worker.podName(0), worker.template.Spec)
	p.waitStarted(t)
	p.waitReady(t, readyWithin)
	p.stop(t)
}

// The worker's replicas get distinct identities that survive a restart: each pod's
// group.instance.id is its StatefulSet name (the route's suffix added), so a restarted
// replica takes its own place in the group back, and another replica takes another.
func TestChartWorkerReplicasHaveDistinctStableIdentities(t *testing.T) {
	requirePodRun(t)
	k, values := podRelease(t)
	vals := values("worker.replicas", 2, "admin.enabled", false, "admin.config.tokens", []any{})
	var worker *workload
	for _, w := range k.release(t, vals) {
		if w.component == "worker" {
			worker = &w
		}
	}
	require.NotNil(t, worker)
	require.Equal(t, "StatefulSet", worker.kind)
	require.Equal(t, 2, worker.replicas)
	route := vals["worker"].(map[string]any)["config"].(map[string]any)["routes"].([]any)[0].(map[string]any)["name"].(string)
	group := "dlq-worker." + route
	admin := kafkatest.Admin(t, testenv.KafkaBootstrap(t))
	// members is the group's static members by group.instance.id.
	members := func() map[string]bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := admin.DescribeConsumerGroups(ctx, []string{group})
		require.NoError(t, err)
		out := map[string]bool{}
		for _, m := range res.ConsumerGroupDescriptions[0].Members {
			out[m.GroupInstanceID] = true
		}
		return out
	}
	for i, ordinal := range []int{0, 0, 1} {
		name := worker.podName(ordinal)
		p := k.start(t, name, worker.template.Spec)
		p.waitStarted(t)
		p.waitReady(t, readyWithin)
		require.Eventually(t, func() bool { return members()[name+"."+route] }, time.Minute, 200*time.Millisecond,
			"%s is no member of %s as %s.%s: %v", name, group, name, route, members())
		switch i {
		case 1: // restarted: it took its own place back, no second member
			require.Equal(t, map[string]bool{name + "." + route: true}, members())
		case 2: // the other replica: an identity of its own (the first one's place stays until its session ends)
			require.NotEqual(t, worker.podName(0), name)
			for id := range members() {
				require.Contains(t, []string{worker.podName(0) + "." + route, name + "." + route}, id)
			}
		}
		p.stop(t)
	}
}

// workload is a Deployment's or a StatefulSet's pod template.
type workload struct {
	kind, name, component string
	replicas              int
	template              corev1.PodTemplateSpec
}

// podName is the name Kubernetes gives the workload's pod: a StatefulSet's ordinal, a
// Deployment's random suffix.
func (w workload) podName(ordinal int) string {
	if w.kind == "StatefulSet" {
		return w.name + "-" + strconv.Itoa(ordinal)
	}
	return w.name + "-7d9f8c6b5-" + testenv.UniqueName("")[:5]
}

// podRelease returns a kubelet for releases on the real stack, and the values of such a
// release with the dotted paths kv set: the least it needs (the chart's defaults
// otherwise) are the stack's broker, a database schema of its own, a route on a topic of
// its own and a token. The pods listen on the chart's ports, so the pod runs of this
// machine take turns.
func podRelease(t *testing.T) (*kubelet, func(kv ...any) map[string]any) {
	t.Helper()
	takeTurn(t)
	bs := testenv.KafkaBootstrap(t)
	base := []any{
		"database.url", testenv.Schema(t),
		"kafka.bootstrapServers", bs,
		"worker.config.routes", []any{map[string]any{
			"name": testenv.UniqueName("pods"), "topics": []any{kafkatest.CreateTopic(t, bs, 2, nil)}, "schedule": "@every 1m",
		}},
	}
	values := func(kv ...any) map[string]any { return with(append(slices.Clone(base), kv...)...) }
	cert, key := selfSigned(t)
	k := &kubelet{
		bin:     buildBinaries(t),
		secrets: map[string]map[string][]byte{"dlq-admin-tls": {"tls.crt": cert, "tls.key": key, "ca.crt": cert}},
	}
	return k, values
}

// release renders the chart with values, keeps its ConfigMaps and Secrets for the pods'
// volumes and environment, and returns its workloads.
func (k *kubelet) release(t *testing.T, values map[string]any) []workload {
	t.Helper()
	manifest, err := render(t, values)
	require.NoError(t, err)
	k.configs = map[string]map[string]string{}
	var out []workload
	for _, o := range decodeStrict(t, manifest) {
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			k.configs[v.Name] = v.Data
		case *corev1.Secret:
			data := map[string][]byte{}
			for key, s := range v.StringData {
				data[key] = []byte(s)
			}
			for key, b := range v.Data {
				data[key] = b
			}
			k.secrets[v.Name] = data
		case *appsv1.Deployment:
			out = append(out, workload{"Deployment", v.Name, v.Labels["app.kubernetes.io/component"], int(*v.Spec.Replicas), v.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{"StatefulSet", v.Name, v.Labels["app.kubernetes.io/component"], int(*v.Spec.Replicas), v.Spec.Template})
		}
	}
	return out
}

// takeTurn holds a machine-wide lock for the test: the pods listen on the chart's fixed
// ports. A port another program holds fails the test, naming it.
func takeTurn(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(os.TempDir()+"/dlq-chart-pods.lock", os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	t.Cleanup(func() { _ = f.Close() })
	for _, port := range []string{"8080", "9464"} {
		l, err := net.Listen("tcp", ":"+port)
		require.NoError(t, err, "port %s is taken: the chart's pods listen on it (stop what holds it, e.g. `make dev`'s binaries)", port)
		require.NoError(t, l.Close())
	}
}

// selfSigned returns a PEM certificate and key for the admin's TLS Secret.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dlq-admin.dlq.svc"},
		DNSNames: []string{"dlq-admin.dlq.svc"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	require.NoError(t, err)
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
}
