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

// mavenBuild is one Maven project of stack/ built once per test binary.
type mavenBuild struct {
	dir  string // under stack/, and under java/ of the stack's cache
	once sync.Once
	cp   string
	err  string
}

var (
	javaBuild   = &mavenBuild{dir: "java"}
	springBuild = &mavenBuild{dir: "spring"}
)

// JavaProducers builds stack/java (real Kafka clients that write dead letters: a share
// consumer, a Kafka Streams application) with Maven into java/build of the stack's cache
// (testenv.CacheDir) once per source version, and returns the class path to run them with.
func JavaProducers(t testing.TB) string {
	t.Helper()
	return javaBuild.classPath(t)
}

// SpringListeners builds stack/spring (a Spring Kafka listener container) as
// JavaProducers builds stack/java, into a build folder of its own, and returns its class
// path.
func SpringListeners(t testing.TB) string {
	t.Helper()
	return springBuild.classPath(t)
}

func (mb *mavenBuild) classPath(t testing.TB) string {
	t.Helper()
	testenv.Integration(t)
	dir := mb.dir
	mb.once.Do(func() {
		src := filepath.Join(testenv.RepoRoot(t), "stack", dir)
		out := filepath.Join(testenv.CacheDir(t), dir, "build")
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
			mb.err = err.Error()
			return
		}
		sum := hex.EncodeToString(h.Sum(nil))
		stamp := filepath.Join(out, ".stamp")
		if b, err := os.ReadFile(stamp); err != nil || string(b) != sum {
			_ = os.RemoveAll(out)
			cmd := exec.Command("mvn", "-q", "-B", "-f", filepath.Join(src, "pom.xml"), "compile",
				"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(out, "deps"))
			if log, err := cmd.CombinedOutput(); err != nil {
				mb.err = "mvn: " + err.Error() + "\n" + string(log)
				return
			}
			if err := os.WriteFile(stamp, []byte(sum), 0o600); err != nil {
				mb.err = err.Error()
				return
			}
		}
		mb.cp = filepath.Join(out, "classes") + string(os.PathListSeparator) + filepath.Join(out, "deps") + "/*"
	})
	if mb.err != "" {
		t.Fatalf("building stack/%s: %s", dir, mb.err)
	}
	return mb.cp
}

// StartJava runs class from JavaProducers with args until the test ends (its process
// group is killed then); its output goes to a file in the test's temporary folder, whose
// path is returned.
func StartJava(t testing.TB, class string, args ...string) string {
	t.Helper()
	return startJava(t, JavaProducers(t), class, args...)
}

// StartSpring is StartJava for a class of stack/spring.
func StartSpring(t testing.TB, class string, args ...string) string {
	t.Helper()
	return startJava(t, SpringListeners(t), class, args...)
}

func startJava(t testing.TB, cp, class string, args ...string) string {
	t.Helper()
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
