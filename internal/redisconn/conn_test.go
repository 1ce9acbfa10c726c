package redisconn

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestEmbeddedNeedsItsPassword checks that serve's in-process Redis
// refuses a client without the password of this start, and that each
// start has its own.
func TestEmbeddedNeedsItsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := func() *redis.Options {
		t.Helper()
		rdb, closeRedis, err := Embedded()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeRedis() })
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Errorf("SET with the client Embedded returned: %v", err)
		}
		return rdb.(*redis.Client).Options()
	}
	opt := start()
	anon := redis.NewClient(&redis.Options{Addr: opt.Addr})
	defer anon.Close()
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without the password: err = %v, want NOAUTH", err)
	}
	if second := start(); len(opt.Password) < 32 || opt.Password == second.Password || !strings.HasPrefix(opt.Addr, "127.0.0.1:") {
		t.Errorf("passwords %q and %q at %s: want a long random one per start, on loopback", opt.Password, second.Password, opt.Addr)
	}
}

func TestPersistenceWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		save, aof string
		warn      bool
	}{
		{"3600 1 300 100 60 10000", "no", false},
		{"", "yes", false},
		{"", "no", true},
		{" ", "no", true},
	} {
		if got := PersistenceWarning(tc.save, tc.aof) != ""; got != tc.warn {
			t.Errorf("PersistenceWarning(%q, %q) warns %v, want %v", tc.save, tc.aof, got, tc.warn)
		}
	}
}

// TestOpenRefusesABadURL: a URL that does not parse names the setting.
func TestOpenRefusesABadURL(t *testing.T) {
	t.Parallel()
	_, _, err := Open(context.Background(), "http://127.0.0.1:6379", nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "AGENTFIX_REDIS_URL: ") {
		t.Errorf("Open of an http URL = %v, want an error naming AGENTFIX_REDIS_URL", err)
	}
}
