// Package pgcluster creates, starts and stops a private PostgreSQL cluster from the
// server binaries installed on the machine. `rundbrief serve` uses it when no
// DATABASE_URL is given, and the test suite uses it when no TEST_DATABASE_URL is.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options tune a cluster; the zero value is a durable cluster for `serve`.
type Options struct {
	// Throwaway turns off fsync and full-page writes: for tests, never for data you keep.
	Throwaway bool
	// MaxConnections is the server's max_connections; zero means 200, room for
	// the test suite's many databases side by side. Only a cluster this call
	// starts gets it: a running one is joined as it is.
	MaxConnections int
}

// Cluster is a running private PostgreSQL server that listens only on a unix socket.
type Cluster struct {
	dataDir   string
	socketDir string
	binDir    string
	cred      *syscall.Credential
	superuser string
	owned     bool // started by this process, so Stop shuts it down
}

// Start initialises dir as a cluster if it is empty and starts the server.
func Start(ctx context.Context, dir string, opts Options) (*Cluster, error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{dataDir: filepath.Join(dir, "data"), socketDir: dir, binDir: binDir, superuser: "postgres"}
	// The socket path must fit in sockaddr_un (108 bytes); fall back to a short temp dir.
	if len(filepath.Join(c.socketDir, ".s.PGSQL.5432")) > 100 {
		short, err := os.MkdirTemp("", "rbpg")
		if err != nil {
			return nil, fmt.Errorf("pgcluster: socket dir: %w", err)
		}
		c.socketDir = short
	}
	// Parents stay traversable: PostgreSQL may run as another user (see below). The
	// cluster directory itself is private.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	// PostgreSQL refuses to run as root: drop to the postgres (or nobody) user.
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			return nil, err
		}
		c.cred = cred
		if err := checkTraversable(filepath.Dir(dir)); err != nil {
			return nil, err
		}
		for _, d := range []string{dir, c.socketDir} {
			if err := chownTree(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := c.run(ctx, "initdb", "-D", c.dataDir, "-U", c.superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
			return nil, err
		}
	}
	maxConns := opts.MaxConnections
	if maxConns == 0 {
		maxConns = 200
	}
	conf := []string{"listen_addresses=''", "unix_socket_directories='" + c.socketDir + "'", "max_connections=" + strconv.Itoa(maxConns), "shared_buffers=128MB"}
	if opts.Throwaway {
		conf = append(conf, "fsync=off", "full_page_writes=off", "synchronous_commit=off",
			// Nothing replicates or archives a throwaway cluster: minimal WAL lets
			// CREATE DATABASE … STRATEGY FILE_COPY (dbtest's copy per test) and bulk
			// loads into new tables skip writing their data to the WAL.
			"wal_level=minimal", "max_wal_senders=0")
	}
	o := ""
	for _, s := range conf {
		o += " -c " + s
	}
	// A cluster already running on this data dir (another rundbrief process, such
	// as `serve` while the CLI runs) is shared, not restarted.
	if sock, ok := runningSocketDir(c.dataDir); ok && c.run(ctx, "pg_ctl", "-D", c.dataDir, "status") == nil {
		c.socketDir = sock
		return c, nil
	}
	if err := c.run(ctx, "pg_ctl", "-D", c.dataDir, "-l", filepath.Join(dir, "postgres.log"), "-o", o, "-w", "-t", "60", "start"); err != nil {
		return nil, err
	}
	c.owned = true
	return c, nil
}

// runningSocketDir reads the socket directory from postmaster.pid (its fifth line).
func runningSocketDir(dataDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return "", false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 5 || lines[4] == "" {
		return "", false
	}
	return lines[4], true
}

// URL is the connection URL of database name in this cluster.
func (c *Cluster) URL(name string) string {
	q := url.Values{}
	q.Set("host", c.socketDir)
	q.Set("sslmode", "disable")
	return (&url.URL{Scheme: "postgres", User: url.User(c.superuser), Path: "/" + name, RawQuery: q.Encode()}).String()
}

// Stop shuts the server down if this process started it (fast mode: open sessions
// are ended, data is kept).
func (c *Cluster) Stop() error {
	if !c.owned {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.run(ctx, "pg_ctl", "-D", c.dataDir, "-m", "fast", "-w", "stop")
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.socketDir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// The server must outlive a Ctrl-C sent to our process group until we stop it.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgcluster: %s: %w: %s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// findBinDir looks for initdb on PATH, then in Debian's /usr/lib/postgresql/*/bin
// (newest version first).
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pgcluster: no PostgreSQL server binaries found (initdb on PATH or /usr/lib/postgresql/*/bin); install the PostgreSQL server or set DATABASE_URL")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("pgcluster: running as root and neither a postgres nor a nobody user exists to run PostgreSQL as")
}

func chownTree(dir string, uid, gid int) error {
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("pgcluster: chown %s: %w", dir, err)
	}
	return nil
}

// checkTraversable makes sure another user can reach dir: every ancestor must be
// searchable by others, or PostgreSQL, running unprivileged, cannot open its data.
func checkTraversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgcluster: %s is not searchable by other users (chmod o+x), so PostgreSQL cannot run there as an unprivileged user", d)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// StopStale stops the cluster in dir, started by Start with Throwaway and left
// running by a process that was killed before it could stop it.
func StopStale(ctx context.Context, dir string) error {
	binDir, err := findBinDir()
	if err != nil {
		return err
	}
	c := &Cluster{dataDir: filepath.Join(dir, "data"), socketDir: dir, binDir: binDir, owned: true}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivileged(); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return c.run(ctx, "pg_ctl", "-D", c.dataDir, "-m", "immediate", "-w", "stop")
}
