package httpserve

import (
	"net"
	"testing"
)

func TestOpenURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		public, addr, want string
	}{
		{"https://bot.example.com/", "0.0.0.0:8080", "https://bot.example.com/setup"},
		{"", "0.0.0.0:8080", "http://localhost:8080/setup"},
		{"", "[::]:8080", "http://localhost:8080/setup"},
		{"", "127.0.0.1:9000", "http://127.0.0.1:9000/setup"},
		{"", "[::1]:9000", "http://[::1]:9000/setup"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := OpenURL(tc.public, addr, "/setup"); got != tc.want {
			t.Errorf("OpenURL(%q, %s) = %q, want %q", tc.public, tc.addr, got, tc.want)
		}
	}
}
