package kafkatest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/dlqops/dlq/internal/testenv"
)

var javaBuild struct {
	once sync.Once
	cp   string
	err  string
}

// JavaProducers builds stack/java (real Kafka clients that write dead letters: a share
// consumer, a Kafka Streams application) with Maven into java/build of the stack's cache
// (testenv.CacheDir) once per source version, and returns the class path to run them with.
func JavaProducers(t testing.TB) string {
	t.Helper()
	testenv.Integration(t)
	javaBuild.once.Do(func() {
		src := filepath.Join(testenv.RepoRoot(t), "stack/java")
		out := filepath.Join(testenv.CacheDir(t), "java", "build")
		h := sha256.New()
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			h.Write([]byte(path))
			h.Write(b)
			return err
		})
		if err != nil {
			javaBuild.err = err.Error()
			return
		}
		sum := hex.EncodeToString(h.Sum(nil))
		stamp := filepath.Join(out, ".stamp")
		if b, err := os.ReadFile(stamp); err != nil || string(b) != sum {
			_ = os.RemoveAll(out)
			cmd := exec.Command("mvn", "-q", "-B", "-f", filepath.Join(src, "pom.xml"), "compile",
				"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(out, "deps"))
			if log, err := cmd.CombinedOutput(); err != nil {
				javaBuild.err = "mvn: " + err.Error() + "\n" + string(log)
				return
			}
			if err := os.WriteFile(stamp, []byte(sum), 0o600); err != nil {
				javaBuild.err = err.Error()
				return
			}
		}
		javaBuild.cp = filepath.Join(out, "classes") + string(os.PathListSeparator) + filepath.Join(out, "deps") + "/*"
	})
	if javaBuild.err != "" {
		t.Fatalf("building stack/java: %s", javaBuild.err)
	}
	return javaBuild.cp
}

// StartJava runs class from JavaProducers with args until the test ends (its process
// group is killed then); its output goes to a file in the test's temporary folder, whose
// path is returned.
func StartJava(t testing.TB, class string, args ...string) string {
	t.Helper()
	cp := JavaProducers(t)
	log := filepath.Join(t.TempDir(), filepath.Base(class)+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", append([]string{"-Xmx256m", "-cp", cp, class}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", class, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		_ = f.Close()
	})
	return log
}
