// Package redistest starts throwaway redis-server processes for tests.
//
// Each call to Start runs its own server on a free loopback port with no
// persistence, so test packages (and tests) never share a keyspace: asynq has
// no key prefix, and two packages on one server would steal each other's
// tasks. The server is killed when the test ends.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one running redis-server.
type Server struct {
	// Addr is host:port of the server on loopback.
	Addr string
	cmd  *exec.Cmd
	port int
	dir  string
}

// URL returns the server's address as a redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Start runs a redis-server for the duration of t. It fails the test when
// redis-server is not installed (`make test` installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found on PATH (run `make test`, which installs it): %v", err)
	}
	s := &Server{dir: t.TempDir()}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// Stop kills the server, as a crash or network loss would look to a client.
func (s *Server) Stop() { s.kill() }

// Restart starts the server again on the same port after Stop. Data is not
// kept (the server runs without persistence).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = s.startOn(s.port); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("restart redis-server on port %d: %v", s.port, err)
}

func (s *Server) start() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	return s.startOn(port)
}

func (s *Server) startOn(port int) error {
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", s.dir, "--maxmemory-policy", "noeviction",
		"--loglevel", "warning")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run redis-server: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitReady(addr, cmd, 5*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	s.cmd, s.port, s.Addr = cmd, port, addr
	return nil
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

func waitReady(addr string, cmd *exec.Cmd, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for ctx.Err() == nil {
		if ping(addr) == nil {
			return nil
		}
		if cmd.ProcessState != nil {
			return fmt.Errorf("redis-server exited: %s", cmd.ProcessState)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s not ready after %s", addr, within)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
