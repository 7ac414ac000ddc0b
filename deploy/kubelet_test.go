package deploy

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/dlqops/dlq/internal/testenv"
)

// kubelet runs a rendered pod the way a kubelet would, without Kubernetes: the
// container's binary (built from this repository) with its arguments and environment,
// its ConfigMap and Secret volumes written where it mounts them, a read-only root with
// only its emptyDirs writable (a private mount namespace over an overlay of this
// machine's root), as the pod's user and groups, without capabilities. The pod shares
// this machine's network: it reaches the stack on loopback, and its ports are the
// chart's.
type kubelet struct {
	bin     string                            // the directory of dlq-worker and dlq-admin, mounted at /usr/local/bin as in the image
	secrets map[string]map[string][]byte      // the release's Secrets and the ones it names from outside
	configs map[string]map[string]string      // the release's ConfigMaps
	skipped func(t *testing.T, reason string) // how a missing privilege is reported
}

// imagePath is the image's PATH (distroless): the binaries are in /usr/local/bin.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// requirePodRun skips the test unless this machine can run a pod as the kubelet would:
// root (for the mount namespace, the overlay and the pod's user), unshare and setpriv
// (util-linux), and an overlay filesystem.
func requirePodRun(t *testing.T) {
	t.Helper()
	const why = "running the chart's pods needs root (a mount namespace with an overlay of / for the read-only root, and the pod's user): run `make test-deploy` as root on a Linux machine with util-linux"
	if os.Geteuid() != 0 {
		t.Skipf("not root: %s", why)
	}
	for _, tool := range []string{"unshare", "nsenter", "setpriv", "chroot", "mount", "hostname"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing: %s", tool, why)
		}
	}
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`d=$(mktemp -d) && mount -t tmpfs tmpfs "$d" && mkdir "$d/u" "$d/w" "$d/r" && mount -t overlay overlay -o "lowerdir=/,upperdir=$d/u,workdir=$d/w" "$d/r"; rc=$?; umount -R "$d" 2>/dev/null; rmdir "$d"; exit $rc`).CombinedOutput()
	if err != nil {
		t.Skipf("no overlay in a mount namespace here (%v: %s): %s", err, strings.TrimSpace(string(out)), why)
	}
}

// The binaries are built once per test binary, into a directory TestMain removes.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// buildBinaries builds both binaries of the main module into a directory the pod's user
// can read, as the image has them.
func buildBinaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "dlq-pod-bin-"); binErr != nil {
			return
		}
		if binErr = os.Chmod(binDir, 0o755); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/dlq-worker", "./cmd/dlq-admin")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// pod is a started pod: its one container's process and output.
type pod struct {
	name   string
	spec   corev1.PodSpec
	priv   []string // setpriv's arguments: the pod's user, groups and no capabilities
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	exited chan struct{} // closed when the process has exited; err is its result
	err    error
}

// start starts the pod's container. The test fails if the pod asks for what the kubelet
// here does not do (more containers, another kind of volume or environment source).
func (k *kubelet) start(t *testing.T, name string, spec corev1.PodSpec) *pod {
	t.Helper()
	require.Len(t, spec.Containers, 1, "%s: the chart's pods have one container each", name)
	require.Empty(t, spec.InitContainers, "%s: init containers", name)
	c := spec.Containers[0]
	stage := t.TempDir()
	ns := filepath.Join(stage, "ns") // a tmpfs inside the pod's namespace: the overlay's upper layer
	require.NoError(t, os.Mkdir(ns, 0o700))

	// The volumes' content, as the kubelet writes it: group fsGroup, files by their mode.
	fsGroup := int64(0)
	if sc := spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		fsGroup = *sc.FSGroup
	}
	volumes := map[string]string{} // volume: its directory here
	writable := map[string]bool{}
	for _, v := range spec.Volumes {
		dir := filepath.Join(stage, "volumes", v.Name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		switch {
		case v.EmptyDir != nil:
			require.NoError(t, os.Chmod(dir, 0o777)) // as the kubelet makes an emptyDir
			writable[v.Name] = true
		case v.ConfigMap != nil:
			data, ok := k.configs[v.ConfigMap.Name]
			require.True(t, ok, "%s: volume %s: no ConfigMap %s", name, v.Name, v.ConfigMap.Name)
			files := map[string][]byte{}
			for key, s := range data {
				files[key] = []byte(s)
			}
			writeVolume(t, dir, files, v.ConfigMap.Items, v.ConfigMap.DefaultMode, fsGroup)
		case v.Secret != nil:
			data, ok := k.secrets[v.Secret.SecretName]
			require.True(t, ok, "%s: volume %s: no Secret %s", name, v.Name, v.Secret.SecretName)
			writeVolume(t, dir, data, v.Secret.Items, v.Secret.DefaultMode, fsGroup)
		default:
			t.Fatalf("%s: volume %s: only emptyDir, configMap and secret volumes are run here", name, v.Name)
		}
		volumes[v.Name] = dir
	}
	// A mount inside another (the admin's TLS Secret under its configuration) needs its
	// mount point in the outer volume, as the kubelet makes it.
	mounts := slices.Clone(c.VolumeMounts)
	slices.SortFunc(mounts, func(a, b corev1.VolumeMount) int { return cmp.Compare(len(a.MountPath), len(b.MountPath)) })
	for i, m := range mounts {
		require.True(t, path.IsAbs(m.MountPath), "%s: mount %s", name, m.MountPath)
		require.Empty(t, m.SubPath, "%s: subPath mounts are not run here", name)
		for _, outer := range mounts[:i] {
			if rel, ok := strings.CutPrefix(m.MountPath, strings.TrimSuffix(outer.MountPath, "/")+"/"); ok {
				require.NoError(t, os.MkdirAll(filepath.Join(volumes[outer.Name], rel), 0o755))
			}
		}
	}

	script := []string{
		"set -e",
		"S=" + quote(ns),
		`mount -t tmpfs tmpfs "$S"`,
		`mkdir "$S/upper" "$S/work" "$S/root"`,
		`mount -t overlay overlay -o "lowerdir=/,upperdir=$S/upper,workdir=$S/work" "$S/root"`,
		`R="$S/root"`,
		`mount --rbind /proc "$R/proc"`,
		`mount --rbind /dev "$R/dev"`,
		`mount --rbind /sys "$R/sys"`,
		`mkdir -p "$R/usr/local/bin"`,
		`mount --bind ` + quote(k.bin) + ` "$R/usr/local/bin"`,
		`mount -o remount,bind,ro "$R/usr/local/bin"`,
	}
	// Mount points are made before the root turns read-only; the writable emptyDirs are
	// mounted after, as nothing else of the pod is.
	for _, m := range mounts {
		dir, ok := volumes[m.Name]
		require.True(t, ok, "%s: mount %s of no volume %s", name, m.MountPath, m.Name)
		script = append(script, `mkdir -p "$R"`+quote(m.MountPath), `mount --bind `+quote(dir)+` "$R"`+quote(m.MountPath))
		if m.ReadOnly || !writable[m.Name] {
			script = append(script, `mount -o remount,bind,ro "$R"`+quote(m.MountPath))
		}
	}
	script = append(script, `mount -o remount,ro "$R"`, "hostname "+quote(name))

	uid, gid, groups := int64(0), int64(0), []string{}
	if sc := spec.SecurityContext; sc != nil {
		uid, gid = deref(sc.RunAsUser), deref(sc.RunAsGroup)
		if sc.FSGroup != nil {
			groups = append(groups, fmt.Sprint(*sc.FSGroup))
		}
		for _, g := range sc.SupplementalGroups {
			groups = append(groups, fmt.Sprint(g))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		uid, gid = cmp.Or(deref(sc.RunAsUser), uid), cmp.Or(deref(sc.RunAsGroup), gid)
		require.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s: the root is run read-only here", name)
	}
	require.NotZero(t, uid, "%s: the pod runs as root", name)
	priv := []string{"setpriv", "--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(gid), "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"}
	if len(groups) > 0 {
		priv = append(priv, "--groups", strings.Join(groups, ","))
	} else {
		priv = append(priv, "--clear-groups")
	}
	argv := append(slices.Clone(c.Command), c.Args...) // the image's ENTRYPOINT is empty
	require.NotEmpty(t, argv, "%s: no command", name)
	script = append(script, `exec chroot "$R" `+quoteAll(priv)+" -- "+quoteAll(argv))

	p := &pod{name: name, spec: spec, priv: priv, out: &testenv.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command("unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", strings.Join(script, "\n"))
	p.cmd.Env = append(k.env(t, name, c), "PATH="+imagePath, "HOSTNAME="+name)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// env is the container's environment as the kubelet resolves it.
func (k *kubelet) env(t *testing.T, podName string, c corev1.Container) []string {
	t.Helper()
	require.Empty(t, c.EnvFrom, "%s: envFrom is not run here", podName)
	var env []string
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.SecretKeyRef != nil:
				data, ok := k.secrets[src.SecretKeyRef.Name][src.SecretKeyRef.Key]
				require.True(t, ok, "%s: %s: no key %s in Secret %s", podName, e.Name, src.SecretKeyRef.Key, src.SecretKeyRef.Name)
				v = string(data)
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.name":
				v = podName
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.namespace":
				v = namespace
			default:
				t.Fatalf("%s: %s: this environment source is not run here", podName, e.Name)
			}
		}
		require.NotContains(t, v, "$(", "%s: %s: dependent variables are not expanded here", podName, e.Name)
		env = append(env, e.Name+"="+v)
	}
	return env
}

// writeVolume writes a ConfigMap's or a Secret's keys (or the items it projects) into
// dir, group fsGroup, with the volume's file modes.
func writeVolume(t *testing.T, dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, fsGroup int64) {
	t.Helper()
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if items == nil {
		for key := range data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	for _, it := range items {
		content, ok := data[it.Key]
		require.True(t, ok, "no key %s to mount", it.Key)
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		file := filepath.Join(dir, it.Path)
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, content, m))
		require.NoError(t, os.Chmod(file, m)) // past the umask
		require.NoError(t, os.Chown(file, 0, int(fsGroup)))
	}
}

// exec runs argv in the pod's container as `kubectl exec` or Docker's HEALTHCHECK does:
// in its mount namespace and root, as its user, with its environment.
func (p *pod) exec(argv ...string) (string, error) {
	args := append([]string{"--target", fmt.Sprint(p.cmd.Process.Pid), "--mount", "--uts", "--root", "--wd", "--"}, p.priv...)
	cmd := exec.Command("nsenter", append(append(args, "--"), argv...)...)
	cmd.Env = p.cmd.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// exitedWith reports how the pod's process ended, and its output.
func (p *pod) exitedWith() string {
	return fmt.Sprintf("%s exited (%v); its output:\n%s", p.name, p.err, p.out.String())
}

// probe is one of the kubelet's HTTP probes of the pod's container.
func (p *pod) probe(pr *corev1.Probe) error {
	c := p.spec.Containers[0]
	get := pr.HTTPGet
	if get == nil {
		return errors.New("only httpGet probes are run here")
	}
	port := get.Port.IntValue()
	if get.Port.StrVal != "" {
		for _, cp := range c.Ports {
			if cp.Name == get.Port.StrVal {
				port = int(cp.ContainerPort)
			}
		}
	}
	if port == 0 {
		return fmt.Errorf("no container port %s", get.Port.String())
	}
	scheme := strings.ToLower(cmp.Or(string(get.Scheme), "http"))
	// The kubelet does not check a probe's certificate.
	client := &http.Client{
		Timeout:   time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	}
	resp, err := client.Get(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), get.Path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("%s: %s: %s", get.Path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// waitStarted probes as the kubelet does until the container counts as started: its
// startupProbe passes, or, without one, its livenessProbe. The test fails where the
// kubelet would restart the container (failureThreshold failures in a row) or the
// process ends.
func (p *pod) waitStarted(t *testing.T) {
	t.Helper()
	c := p.spec.Containers[0]
	pr, kind := c.StartupProbe, "startupProbe"
	if pr == nil {
		pr, kind = c.LivenessProbe, "livenessProbe (there is no startupProbe)"
	}
	require.NotNil(t, pr, "%s: no probe says when it has started", p.name)
	failures := 0
	next := time.Duration(pr.InitialDelaySeconds) * time.Second
	for {
		select {
		case <-p.exited:
			t.Fatalf("before its %s passed: %s", kind, p.exitedWith())
		case <-time.After(next):
		}
		err := p.probe(pr)
		if err == nil {
			return
		}
		failures++
		if failures >= int(max(pr.FailureThreshold, 1)) {
			t.Fatalf("%s: the kubelet would restart it: its %s failed %d times in a row, every %d s (last: %v); its output:\n%s",
				p.name, kind, failures, max(pr.PeriodSeconds, 1), err, p.out.String())
		}
		next = time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	}
}

// waitReady probes the readinessProbe every period until it passes, within limit.
func (p *pod) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	pr := p.spec.Containers[0].ReadinessProbe
	require.NotNil(t, pr, "%s: no readinessProbe", p.name)
	deadline := time.After(limit)
	var err error
	for {
		if err = p.probe(pr); err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("before it was ready (%v): %s", err, p.exitedWith())
		case <-deadline:
			t.Fatalf("%s: not ready within %s: %v; its output:\n%s", p.name, limit, err, p.out.String())
		case <-time.After(time.Duration(max(pr.PeriodSeconds, 1)) * time.Second):
		}
	}
}

// stop sends SIGTERM and waits the pod's terminationGracePeriodSeconds for it to exit,
// as the kubelet does; the test fails if it had to be killed or exited non-zero.
func (p *pod) stop(t *testing.T) {
	t.Helper()
	grace := 30 * time.Second
	if g := p.spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	select {
	case <-p.exited:
		require.NoError(t, p.err, "%s did not stop cleanly on SIGTERM; its output:\n%s", p.name, p.out.String())
	case <-ctx.Done():
		t.Fatalf("%s: still running %s after SIGTERM: the kubelet would kill it; its output:\n%s", p.name, grace, p.out.String())
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}
