package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestEmbeddedRedisNeedsItsPassword checks that serve's in-process Redis
// refuses a client without the password of this start, and that each
// start has its own.
func TestEmbeddedRedisNeedsItsPassword(t *testing.T) {
	ctx := context.Background()
	mr, password, err := startEmbeddedRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	anon := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer anon.Close()
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without the password: err = %v, want NOAUTH", err)
	}
	authed := redis.NewClient(&redis.Options{Addr: mr.Addr(), Password: password})
	defer authed.Close()
	if err := authed.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET with the password: %v", err)
	}
	mr2, password2, err := startEmbeddedRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer mr2.Close()
	if len(password) < 32 || password == password2 {
		t.Errorf("passwords %q and %q: want a long random one per start", password, password2)
	}
}
