package deploy_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// TestRedisFlags starts a real redis-server with the flags of each
// deployment and reads back what the bot relies on: append-only
// persistence, noeviction, and a memory cap below the container's limit.
func TestRedisFlags(t *testing.T) {
	c := loadCluster(t)
	sts := onlyContainer(t, c.statefulSets[redisName].Spec.Template.Spec)
	compose := loadCompose(t).Services["redis"].Command
	// Kubernetes puts the Secret's password in place of $(REDIS_PASSWORD).
	sts.Args = slices.Clone(sts.Args)
	for i, a := range sts.Args {
		sts.Args[i] = strings.ReplaceAll(a, "$(REDIS_PASSWORD)", testValues["REDIS_PASSWORD"])
	}
	for _, tc := range []struct {
		name     string
		argv     []string
		memLimit int64 // bytes; 0 when the deployment sets none
	}{
		{"kubernetes", sts.Args, sts.Resources.Limits.Memory().Value()},
		{"compose", compose, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.argv) == 0 || tc.argv[0] != "redis-server" {
				t.Fatalf("command %q: want redis-server and its flags", tc.argv)
			}
			for flag, want := range map[string]string{"--appendonly": "yes", "--maxmemory-policy": "noeviction"} {
				if got, _ := flagValue(tc.argv, flag); got != want {
					t.Errorf("%s %q, want %q", flag, got, want)
				}
			}
			password, _ := flagValue(tc.argv, "--requirepass")
			if password == "" {
				t.Errorf("no --requirepass: any process that reaches the port could read and queue tasks")
			}
			rdb := startRedis(t, tc.argv[1:], password)
			ctx := context.Background()
			anon := redis.NewClient(&redis.Options{Network: "unix", Addr: rdb.Options().Addr})
			defer anon.Close()
			if err := anon.Set(ctx, "agentfix-test", "x", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Errorf("SET without the password: err = %v, want NOAUTH", err)
			}
			got := map[string]string{}
			for _, key := range []string{"appendonly", "maxmemory-policy"} {
				v, err := rdb.ConfigGet(ctx, key).Result()
				if err != nil {
					t.Fatalf("CONFIG GET %s: %v", key, err)
				}
				got[key] = v[key]
			}
			if diff := cmp.Diff(map[string]string{"appendonly": "yes", "maxmemory-policy": "noeviction"}, got); diff != "" {
				t.Errorf("redis-server config (-want +got):\n%s", diff)
			}
			v, err := rdb.ConfigGet(ctx, "maxmemory").Result()
			if err != nil {
				t.Fatal(err)
			}
			maxmemory, err := strconv.ParseInt(v["maxmemory"], 10, 64)
			if err != nil || maxmemory == 0 {
				t.Errorf("maxmemory %q: want a cap, so a full Redis refuses writes instead of growing until it is killed", v["maxmemory"])
			}
			if tc.memLimit > 0 && maxmemory >= tc.memLimit {
				t.Errorf("maxmemory %d bytes: want below the container's memory limit of %d bytes", maxmemory, tc.memLimit)
			}
		})
	}
}

// startRedis runs redis-server with flags (its clients authenticate with
// password), on a Unix socket in a temporary
// directory that also takes its files, and stops it when the test ends.
func startRedis(t *testing.T, flags []string, password string) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH (run `make test`, which installs it): %v", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	// No TCP port, and the files in the temporary directory (redis-server
	// changes into --dir as it reads the flag, so the value is replaced).
	args := append([]string{}, flags...)
	if i := slices.Index(args, "--dir"); i >= 0 && i+1 < len(args) {
		args[i+1] = dir
	} else {
		args = append(args, "--dir", dir)
	}
	args = append(args, "--port", "0", "--unixsocket", sock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start redis-server: %v", err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})

	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Password: password})
	t.Cleanup(func() { _ = rdb.Close() })
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := rdb.Ping(pctx).Err()
		pcancel()
		if err == nil {
			return rdb
		}
		select {
		case <-exited:
			t.Fatalf("redis-server %q exited: %v\n%s", args, waitErr, out.String())
		case <-ctx.Done():
			<-exited
			t.Fatalf("redis-server %q did not answer: %v\n%s", args, err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
