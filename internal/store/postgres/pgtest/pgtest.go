// Package pgtest gives tests a PostgreSQL database of their own, on a
// server with the pgvector extension:
//
//   - RECALL_TEST_PG set (a server URL, e.g.
//     postgres://user@host:5432/postgres?sslmode=disable): each test gets a
//     fresh database created there, dropped when the test ends.
//   - Else RECALL_TEST_PG_HOME, or .cache/postgres at the repository root
//     (where scripts/install-test-postgres.sh unpacks it), holds a
//     PostgreSQL installation: one throwaway server is started per test
//     binary (a temporary data directory, a free port on 127.0.0.1, fsync
//     off unless RECALL_TEST_PG_DURABLE is set), shared by its tests, each
//     test getting a fresh database; Main stops it and removes the data
//     directory. Run as root, the server runs
//     as the user nobody, as PostgreSQL refuses root.
//   - Else the test is skipped, saying how to get a server; with
//     RECALL_TEST_PG_REQUIRE set (scripts/test.sh sets it once it has
//     installed a server) it fails instead, so a suite that should have run
//     these tests cannot pass without them.
//
// A test package using Server must call Main from its TestMain.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	once    sync.Once
	srv     *server
	skip    string // why tests skip, when there is no server
	srvErr  error
	counter atomic.Int64
)

// server is a PostgreSQL server tests create databases on.
type server struct {
	admin string // URL of a database to run CREATE DATABASE from
	dir   string // data directory of a server this package started ("" for RECALL_TEST_PG)
	home  string
}

// Main runs the tests and stops the server Server started, if any; a
// TestMain calls os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if srv == nil {
		return code
	}
	if srv.dir != "" {
		srv.stop() // the databases go with the data directory
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, u := range shared {
		if p, err := url.Parse(u); err == nil {
			srv.exec(ctx, `DROP DATABASE IF EXISTS `+strings.TrimPrefix(p.Path, "/")+` WITH (FORCE)`)
		}
	}
	return code
}

// Server returns the URL of a new, empty database for t, skipping t when
// no PostgreSQL server is available.
func Server(t testing.TB) string {
	t.Helper()
	once.Do(start)
	if skip != "" {
		skipOrFail(t)
	}
	if srvErr != nil {
		t.Fatalf("test postgres: %v", srvErr)
	}
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("test postgres: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	})
	return srv.url(t, name)
}

// skipOrFail skips tb for want of a server, or fails it when the run
// requires the PostgreSQL tests (RECALL_TEST_PG_REQUIRE).
func skipOrFail(tb testing.TB) {
	tb.Helper()
	if os.Getenv("RECALL_TEST_PG_REQUIRE") != "" {
		tb.Fatalf("RECALL_TEST_PG_REQUIRE is set, but %s", skip)
	}
	tb.Skip(skip)
}

var (
	sharedMu sync.Mutex
	shared   = map[string]string{} // URL by name
)

// Shared returns the URL of a database that lives as long as the test
// binary (benchmarks build a corpus in it once), created empty by the
// first call with the name. Main drops it.
func Shared(tb testing.TB, name string) string {
	tb.Helper()
	once.Do(start)
	if skip != "" {
		skipOrFail(tb)
	}
	if srvErr != nil {
		tb.Fatalf("test postgres: %v", srvErr)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if u, ok := shared[name]; ok {
		return u
	}
	db := fmt.Sprintf("s_%d_%d", os.Getpid(), counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.exec(ctx, `CREATE DATABASE `+db); err != nil {
		tb.Fatalf("test postgres: create database: %v", err)
	}
	u := srv.url(tb, db)
	shared[name] = u
	return u
}

// Copy returns the URL of a new database made as a copy of the database
// of dsn (CREATE DATABASE … TEMPLATE: nothing may be connected to that
// one meanwhile), and a function that drops the copy, which it is when tb
// ends if not before.
func Copy(tb testing.TB, dsn string) (string, func()) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	from := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}
	name := fmt.Sprintf("c_%d_%d", os.Getpid(), counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := srv.exec(ctx, `CREATE DATABASE `+name+` TEMPLATE `+from.Sanitize()+` STRATEGY FILE_COPY`); err != nil {
		tb.Fatalf("test postgres: copy database: %v", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}
	tb.Cleanup(drop)
	return srv.url(tb, name), drop
}

// Outage returns functions that take the database of dsn (one Server
// made) down for its clients, as a restart or a failover does, and bring
// it back: down refuses new connections and ends those it has, up lets
// them in again. The database is brought back when tb ends, before it is
// dropped.
func Outage(tb testing.TB, dsn string) (down, up func()) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}
	exec := func(sql string) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.exec(ctx, sql); err != nil {
			tb.Fatalf("test postgres: %v", err)
		}
	}
	down = func() {
		exec(`ALTER DATABASE ` + name.Sanitize() + ` ALLOW_CONNECTIONS false`)
		exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ` + pgQuote(name[0]))
	}
	up = func() { exec(`ALTER DATABASE ` + name.Sanitize() + ` ALLOW_CONNECTIONS true`) }
	tb.Cleanup(up)
	return down, up
}

// ReadOnlyRole makes a login role that may only read the database of dsn,
// which recall has set up (SELECT on its tables; no CREATE in its schema),
// and returns dsn for that role. The role is dropped when tb ends, before
// the database is; tb is skipped when the server lets this user create no
// role.
func ReadOnlyRole(tb testing.TB, dsn string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("test postgres: %v", err)
	}
	defer conn.Close(ctx)
	role := fmt.Sprintf("reader_%d_%d", os.Getpid(), counter.Add(1))
	if _, err := conn.Exec(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
		tb.Skipf("cannot create a role on this server: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, `DROP OWNED BY `+role)
			c.Exec(ctx, `DROP ROLE `+role)
			c.Close(ctx)
		}
	})
	if _, err := conn.Exec(ctx, `REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT SELECT ON ALL TABLES IN SCHEMA public TO `+role); err != nil {
		tb.Fatalf("test postgres: %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// pgQuote quotes s as an SQL string literal.
func pgQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// url is the URL of database name on the server.
func (s *server) url(tb testing.TB, name string) string {
	u, err := url.Parse(s.admin)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func start() {
	if u := os.Getenv("RECALL_TEST_PG"); u != "" {
		srv = &server{admin: u}
		return
	}
	home := os.Getenv("RECALL_TEST_PG_HOME")
	if home == "" {
		if root, err := repoRoot(); err == nil {
			home = filepath.Join(root, ".cache", "postgres")
		}
	}
	if home == "" || !exists(filepath.Join(home, "bin", "postgres")) {
		skip = "no PostgreSQL server for the tests: run scripts/install-test-postgres.sh (it prints RECALL_TEST_PG_HOME=...), " +
			"or set RECALL_TEST_PG to a server URL (postgres://user@host:port/postgres?sslmode=disable) whose user may create databases"
		return
	}
	// An installation whose programs cannot run (one unpacked by an older
	// install script, without the wheel's bundled libpq) is no server.
	probe := &server{home: home, dir: os.TempDir()}
	if out, err := probe.run("initdb", "--version"); err != nil {
		skip = fmt.Sprintf("the PostgreSQL installation at %s cannot run (%v: %s): run scripts/install-test-postgres.sh again, "+
			"or set RECALL_TEST_PG to a server URL", home, err, strings.TrimSpace(string(out)))
		return
	}
	s, err := startServer(home)
	if err != nil {
		srvErr = err
		return
	}
	srv = s
}

// repoRoot finds the directory holding go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if exists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startServer initialises a data directory and starts a server on it.
func startServer(home string) (*server, error) {
	dir, err := os.MkdirTemp("", "recall-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, home: home}
	if os.Geteuid() == 0 {
		if err := chownNobody(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "recall", "--auth=trust",
		"-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// Tests need no durability; benchmarks of writes set
	// RECALL_TEST_PG_DURABLE to measure with PostgreSQL's defaults (every
	// commit flushed), as a production server runs.
	durability := "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	if os.Getenv("RECALL_TEST_PG_DURABLE") != "" {
		durability = ""
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 %s -c max_connections=200", port, dir, durability)
	if out, err := s.run("pg_ctl", "-D", filepath.Join(dir, "data"), "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	s.admin = fmt.Sprintf("postgres://recall@127.0.0.1:%d/postgres?sslmode=disable", port)
	s.watch()
	return s, nil
}

// watch starts a shell that stops the server and removes its directory
// when this process is gone without having done so (killed, or a SIGPIPE
// from a closed output pipe): Main does it on a normal exit, and nothing
// of a killed test binary runs.
func (s *server) watch() {
	pgctl := filepath.Join(s.home, "bin", "pg_ctl")
	stop := fmt.Sprintf("%q -D %q -m immediate -w stop", pgctl, filepath.Join(s.dir, "data"))
	if os.Geteuid() == 0 {
		stop = strings.Join(asNobody(), " ") + " " + stop
	}
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done; if [ -d %q ]; then %s >/dev/null 2>&1; rm -rf %q; fi`,
		os.Getpid(), s.dir, stop, s.dir)
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(s.home, "lib"))
	if cmd.Start() == nil {
		go cmd.Wait() // reaped if this process outlives it
	}
}

func (s *server) stop() {
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

// run runs one of the installation's programs, as nobody when root.
func (s *server) run(prog string, args ...string) ([]byte, error) {
	bin := filepath.Join(s.home, "bin", prog)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		pre := asNobody()
		cmd = exec.Command(pre[0], append(append(pre[1:], bin), args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = s.dir
	// The installation's bundled libraries (libpq for initdb and pg_ctl;
	// see scripts/install-test-postgres.sh).
	lib := filepath.Join(s.home, "lib")
	if p := os.Getenv("LD_LIBRARY_PATH"); p != "" {
		lib += ":" + p
	}
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib)
	return cmd.CombinedOutput()
}

func chownNobody(dir string) error {
	uid, gid, err := nobody()
	if err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// nobody returns the user and group ids the server runs as under root:
// the user nobody, with its own primary group (nogroup on Debian, nobody
// on Fedora).
func nobody() (uid, gid int, err error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return 0, 0, err
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// asNobody is the setpriv prefix that runs a program as nobody.
func asNobody() []string {
	uid, gid, err := nobody()
	if err != nil {
		return []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"}
	}
	return []string{"setpriv", fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", gid), "--clear-groups"}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
