package logattr

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestTidy(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := slog.New(Tidy(slog.NewTextHandler(&b, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
	child := log.With(Outcome, "queued", Repo, "octo/widget")
	child.Info("job ended", Outcome, "pr_opened", Err, nil)
	child.Warn("failed", Err, errors.New("boom"))
	var nilErr error
	child.WithGroup("g").Info("grouped", "k", 1, Err, nilErr)
	want := "level=INFO msg=\"job ended\" outcome=pr_opened repo=octo/widget\n" +
		"level=WARN msg=failed outcome=queued repo=octo/widget err=boom\n" +
		"level=INFO msg=grouped outcome=queued repo=octo/widget g.k=1\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestNewLogger: text when asked, or on a terminal with auto; JSON
// otherwise (a buffer is no terminal); records below the level are left out.
func TestNewLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, level, want string
	}{
		{"text", "info", "level=INFO msg=shown"},
		{"auto", "info", `"msg":"shown"`},
		{"json", "warn", ""},
	} {
		var b bytes.Buffer
		NewLogger(&b, tc.format, tc.level).Info("shown")
		if got := b.String(); !strings.Contains(got, tc.want) || tc.want == "" && got != "" {
			t.Errorf("NewLogger(%s, %s) wrote %q, want it to hold %q", tc.format, tc.level, got, tc.want)
		}
	}
}
