package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGBinDir is where the PostgreSQL server binaries are installed (Debian's postgresql-15).
const PGBinDir = "/usr/lib/postgresql/15/bin"

// PGServer is a throwaway PostgreSQL cluster of one test, for fault tests that stop and
// start the server without touching the shared one.
type PGServer struct {
	t    testing.TB
	dir  string
	port int
	// asPostgres runs the server as the postgres user: PostgreSQL refuses to run as root.
	asPostgres bool
	probe      chan error // StallSynchronousCommits' waiting commit, for ResumeSynchronousCommits
}

// StartPGServer creates a cluster in a temporary directory (trust authentication, loopback
// only, a port reserved for the test), starts it, and stops it when the test ends.
func StartPGServer(t testing.TB) *PGServer {
	t.Helper()
	Integration(t)
	if _, err := os.Stat(filepath.Join(PGBinDir, "initdb")); err != nil {
		t.Fatalf("PostgreSQL server binaries not found in %s (%v): `make test` installs them", PGBinDir, err)
	}
	s := &PGServer{t: t, asPostgres: os.Geteuid() == 0}
	// Not t.TempDir: the postgres user must own the directory and every parent must be
	// searchable by it, which /tmp is and a root-owned test temp dir may not be.
	dir, err := os.MkdirTemp("", "dlq-pg-")
	if err != nil {
		t.Fatalf("pg server dir: %v", err)
	}
	s.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if s.asPostgres {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user to own the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("chown %s: %v", dir, err)
		}
	}
	s.port = ReservePort(t)
	s.run("initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale")
	t.Cleanup(func() {
		if s.running() {
			s.run("pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
		}
	})
	s.Start()
	return s
}

// URL is the connection string of the cluster's postgres database.
func (s *PGServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the server and waits until it accepts connections.
func (s *PGServer) Start() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "start",
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", s.port, s.dir))
}

// Stop shuts the server down the way an operator restart does: sessions are terminated
// (fast mode), and clients see their connections closed.
func (s *PGServer) Stop() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "stop")
}

// Kill stops the server the way a crash does (immediate mode: no checkpoint, sessions cut,
// crash recovery at the next start).
func (s *PGServer) Kill() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
}

func (s *PGServer) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *PGServer) running() bool {
	return s.command("pg_ctl", "-D", s.dataDir(), "status").Run() == nil
}

func (s *PGServer) run(bin string, args ...string) {
	s.t.Helper()
	if out, err := s.command(bin, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		s.t.Fatalf("%s %v: %v\n%s\nserver log:\n%s", bin, args, err, out, log)
	}
}

func (s *PGServer) command(bin string, args ...string) *exec.Cmd {
	path := filepath.Join(PGBinDir, bin)
	if s.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// StallSynchronousCommits makes every synchronous commit wait until
// ResumeSynchronousCommits, as it waits for a synchronous standby that does not answer (or
// for a flush that does not end); asynchronous commits go through. It returns once a
// synchronous commit of its own is seen waiting.
func (s *PGServer) StallSynchronousCommits() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.exec(ctx, `CREATE TABLE IF NOT EXISTS testenv_stall_probe (at timestamptz)`,
		`ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'`, `SELECT pg_reload_conf()`)
	probe, err := pgx.Connect(ctx, s.URL()+"&application_name=testenv_stall_probe")
	if err != nil {
		s.t.Fatalf("stall probe: %v", err)
	}
	s.probe = make(chan error, 1)
	go func() {
		// Until the reload reaches every process, a commit may still go through.
		var err error
		for err == nil && ctx.Err() == nil {
			_, err = probe.Exec(context.Background(), `INSERT INTO testenv_stall_probe VALUES (now())`)
		}
		_ = probe.Close(context.Background())
		s.probe <- err
	}()
	for {
		var waiting bool
		s.queryRow(ctx, &waiting, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE application_name = 'testenv_stall_probe' AND wait_event = 'SyncRep')`)
		if waiting {
			return
		}
		if ctx.Err() != nil {
			s.t.Fatalf("no synchronous commit waits a minute after synchronous_standby_names was set")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ResumeSynchronousCommits ends StallSynchronousCommits: the waiting commits return.
func (s *PGServer) ResumeSynchronousCommits() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.exec(ctx, `ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`)
	select {
	case <-s.probe:
	case <-ctx.Done():
		s.t.Fatalf("the stalled commit did not return a minute after synchronous_standby_names was reset")
	}
}

func (s *PGServer) exec(ctx context.Context, stmts ...string) {
	s.t.Helper()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			s.t.Fatalf("%s: %v", q, err)
		}
	}
}

func (s *PGServer) queryRow(ctx context.Context, dst any, q string) {
	s.t.Helper()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, q).Scan(dst); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
}

// Log is what the server has logged so far.
func (s *PGServer) Log() string {
	s.t.Helper()
	log, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		s.t.Fatalf("server log: %v", err)
	}
	return string(log)
}
