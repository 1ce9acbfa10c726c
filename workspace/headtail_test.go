package workspace

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
		elided int64
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef", 0},
		{"exactly the limit", 6, []string{"abcdef"}, "abcdef", 0},
		{"one write over", 6, []string{"abcdefgh"}, "abc\n\n[... 2 bytes elided ...]\n\nfgh", 2},
		{"many small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n\n[... 3 bytes elided ...]\n\nfg", 3},
		{"tail keeps the newest", 4, []string{"ab", "cdefgh", "ij"}, "ab\n\n[... 6 bytes elided ...]\n\nij", 6},
		{"rune kept whole", 6, []string{"aé€xyz"}, "aé\n\n[... 3 bytes elided ...]\n\nxyz", 3},
		{"head cut inside a rune", 4, []string{"aé€xyz"}, "a\n\n[... 6 bytes elided ...]\n\nyz", 6},
		{"tail cut inside a rune", 4, []string{"xy€"}, "xy\n\n[... 3 bytes elided ...]\n\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHeadTail(tt.limit)
			for _, w := range tt.writes {
				h.Write([]byte(w))
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := h.Elided(); got != tt.elided {
				t.Errorf("Elided() = %d, want %d", got, tt.elided)
			}
			if !utf8.ValidString(h.String()) {
				t.Errorf("String() is not valid UTF-8: %q", h.String())
			}
		})
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("x", 50) + strings.Repeat("y", 50)
	got := Clip(long, 20)
	want := strings.Repeat("x", 10) + "\n\n[... 80 bytes elided ...]\n\n" + strings.Repeat("y", 10)
	if got != want {
		t.Errorf("Clip = %q, want %q", got, want)
	}
}
