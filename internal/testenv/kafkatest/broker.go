package kafkatest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/testenv"
)

// Broker is a private single-node KRaft broker for one test, for tests that stop and
// start the broker without disturbing the shared one. It uses the jars `make test`
// downloaded into kafka/libs of the stack's cache (testenv.CacheDir).
type Broker struct {
	t               testing.TB
	dir, root, libs string
	port            int
	// clusterID is the broker's own, formatted into its storage: Start tells it from
	// another broker that answers on its port.
	clusterID string
	cmd       *exec.Cmd
	exited    chan struct{} // closed once cmd has exited
	// client holds the properties a client needs besides bootstrap.servers (SASL).
	client kafka.ConfigMap
}

// StartBroker formats storage in a temporary folder and starts a broker on ports reserved
// for the test (testenv.ReservePort): they stay its own while it is stopped.
func StartBroker(t testing.TB) *Broker {
	t.Helper()
	return startBroker(t, "", nil)
}

// SASL's superuser of StartSASLBroker, which the broker itself and its readiness check use.
const saslAdmin, saslAdminPassword = "broker", "broker-password"

// StartSASLBroker is StartBroker with its client listener on SASL_PLAINTEXT, mechanism
// PLAIN, accepting user with password (and its own superuser, whose settings are
// ClientConfig's).
func StartSASLBroker(t testing.TB, user, password string) *Broker {
	t.Helper()
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username=%q password=%q user_%s=%q user_%s=%q;`,
		saslAdmin, saslAdminPassword, saslAdmin, saslAdminPassword, user, password)
	props := "\n# StartSASLBroker: the client listener authenticates with SASL PLAIN.\n" +
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT\n" +
		"sasl.enabled.mechanisms=PLAIN\nsasl.mechanism.inter.broker.protocol=PLAIN\n" +
		"listener.name.plaintext.plain.sasl.jaas.config=" + jaas + "\n"
	return startBroker(t, props, kafka.ConfigMap{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.username": saslAdmin, "sasl.password": saslAdminPassword})
}

// ClientConfig is what a client of the broker needs: bootstrap.servers, and the
// superuser's SASL settings for a StartSASLBroker.
func (b *Broker) ClientConfig() kafka.ConfigMap {
	m := kafka.ConfigMap{"bootstrap.servers": b.Bootstrap()}
	for k, v := range b.client {
		m[k] = v
	}
	return m
}

// StartBrokerWithFeatures is StartBroker with feature levels set at format time
// ("share.version=1"), instead of the release's defaults.
func StartBrokerWithFeatures(t testing.TB, features ...string) *Broker {
	t.Helper()
	return startBroker(t, "", nil, features...)
}

// startBroker starts a broker whose server.properties end with extraProps and whose
// storage is formatted with features; clients connect with client's properties.
func startBroker(t testing.TB, extraProps string, client kafka.ConfigMap, features ...string) *Broker {
	t.Helper()
	testenv.Integration(t)
	return startBrokerOn(t, testenv.ReservePort(t), extraProps, client, features...)
}

// startBrokerOn is startBroker on port, which the caller reserved.
func startBrokerOn(t testing.TB, port int, extraProps string, client kafka.ConfigMap, features ...string) *Broker {
	t.Helper()
	root := testenv.RepoRoot(t)
	libs := filepath.Join(testenv.CacheDir(t), "kafka", "libs")
	if _, err := os.Stat(libs); err != nil {
		t.Fatalf("Kafka jars not found in %s: run `make up` once (with the same DLQ_CACHE_DIR)", libs)
	}
	b := &Broker{t: t, dir: t.TempDir(), root: root, libs: libs, port: port, clusterID: newClusterID(t), client: client}
	controller := testenv.ReservePort(t)
	tmpl, err := os.ReadFile(filepath.Join(root, "stack/kafka/server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	props := strings.NewReplacer("@PORT@", fmt.Sprint(b.port), "@CONTROLLER_PORT@", fmt.Sprint(controller),
		"@DATA@", filepath.Join(b.dir, "data")).Replace(string(tmpl)) + extraProps
	if err := os.WriteFile(b.config(), []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	format := []string{"kafka.tools.StorageTool", "format", "--standalone", "-t", b.clusterID, "-c", b.config()}
	for _, f := range features {
		format = append(format, "--feature", f)
	}
	out, err := b.java(format...).CombinedOutput()
	if err != nil {
		t.Fatalf("format broker storage: %v\n%s", err, out)
	}
	b.Start()
	t.Cleanup(b.Stop)
	return b
}

// Bootstrap is the broker's address.
func (b *Broker) Bootstrap() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// Start starts the (stopped) broker and waits until it answers metadata requests.
func (b *Broker) Start() {
	b.t.Helper()
	cmd := b.java("kafka.Kafka", b.config())
	log, err := os.OpenFile(filepath.Join(b.dir, "stdout.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start broker: %v", err)
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait() // exit status of a signalled JVM is expected to be non-zero
		close(exited)
	}(b.exited)
	a, err := kafka.NewAdminClient(ptr(b.ClientConfig()))
	if err != nil {
		b.t.Fatal(err)
	}
	defer a.Close()
	// A JVM broker took ~100 s to start on two cores shared by several test runs.
	deadline := time.Now().Add(180 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.exited:
			b.t.Fatalf("private broker on %s exited during start-up; log in %s:\n%s", b.Bootstrap(), b.dir, b.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := a.DescribeCluster(ctx)
		cancel()
		if err == nil {
			// Another broker answering on the port would have the test go on against a
			// cluster not its own.
			if c.ClusterID == nil || *c.ClusterID != b.clusterID {
				b.t.Fatalf("another broker (cluster %s) answers on %s, not the private broker (cluster %s); log in %s",
					*cmp.Or(c.ClusterID, ptr("unknown")), b.Bootstrap(), b.clusterID, b.dir)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.t.Fatalf("private broker did not answer in 180 s; log in %s", b.dir)
}

// Stop stops the broker gracefully (SIGTERM), as an operator would; safe twice.
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

// Kill stops the broker with SIGKILL, as a crash would.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

func (b *Broker) signal(sig syscall.Signal) {
	if b.cmd == nil {
		return
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, sig)
	<-b.exited
	b.cmd = nil
}

// newClusterID is a random cluster id as the storage format takes it: 16 bytes in
// unpadded URL-safe base64, not starting with '-' (which would read as an option).
func newClusterID(t testing.TB) string {
	for {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			t.Fatal(err)
		}
		if id := base64.RawURLEncoding.EncodeToString(raw[:]); id[0] != '-' {
			return id
		}
	}
}

// logTail is the end of what the broker wrote to its stdout.log.
func (b *Broker) logTail() string {
	log, err := os.ReadFile(filepath.Join(b.dir, "stdout.log"))
	if err != nil {
		return err.Error()
	}
	return string(log[max(0, len(log)-4000):])
}

func (b *Broker) config() string { return filepath.Join(b.dir, "server.properties") }

func (b *Broker) java(args ...string) *exec.Cmd {
	base := []string{"-Xms128m", "-Xmx512m", "-Dlog4j2.configurationFile=" + filepath.Join(b.root, "stack/kafka/log4j2.yaml"),
		"-Dkafka.logs.dir=" + b.dir, "-cp", b.libs + "/*"}
	return exec.Command("java", append(base, args...)...)
}

func ptr[T any](v T) *T { return &v }
