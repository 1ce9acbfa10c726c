package proof

import (
	"strings"
	"testing"

	"github.com/agentfix/agentfix/workspace"
)

// TestParseCut cuts every fixture with the worker's own head+tail cap at
// many sizes: a cut run is never complete, and every result it shows is
// one the whole run shows, with the same status, so a cut never invents a
// test or a status.
func TestParseCut(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures {
		if fx.formats == nil || fx.reports != "" {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			out := readFixture(t, fx.file)
			whole := Parse(Input{Command: fx.command, ExitCode: fx.exit, Output: out, Dir: fx.dir})
			step := max(len(out)/40, 7)
			for limit := 64; limit < len(out); limit += step {
				clipped := workspace.Clip(out, limit)
				r := Parse(Input{Command: fx.command, ExitCode: fx.exit, Output: clipped, Dir: fx.dir})
				if !r.Cut || r.Complete {
					t.Fatalf("limit %d: cut %v, complete %v; want cut and not complete", limit, r.Cut, r.Complete)
				}
				for _, x := range r.Tests {
					w, ok := whole.Test(x.ID)
					if !ok || w.Status != x.Status {
						t.Fatalf("limit %d: cut run has %s %s; whole run has %+v (found %v)\n%s", limit, x.ID, x.Status, w, ok, clipped)
					}
				}
				for _, s := range r.Suites {
					w, ok := whole.Suite(s.Name)
					if !ok || s.Status != "" && s.Status != w.Status || s.Error != "" && s.Error != w.Error {
						t.Fatalf("limit %d: cut run has suite %+v; whole run has %+v (found %v)\n%s", limit, s, w, ok, clipped)
					}
				}
			}
		})
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "a\nb\n", []string{"a", "b"}},
		{"crlf and colours", "\x1b[32mok\x1b[0m\r\n\x1b]8;;http://x\x07link\x1b]8;;\x07\r\n", []string{"ok", "link"}},
		{"carriage return overdraw", "progress 10%\rprogress 100%\n", []string{"progress 100%"}},
		{"headtail, head ends at a line end", "one\ntwo\n\n\n[... 99 bytes elided ...]\n\nrtial\nthree\n", []string{"one", "two", elided, "three"}},
		{"headtail, head cut mid-line", "one\ntw\n\n[... 99 bytes elided ...]\n\nrtial\nthree\n", []string{"one", elided, "three"}},
		{"another elision form", "one\npart\n… (1234 bytes elided) …\nial\nthree\n", []string{"one", elided, "three"}},
		{"two elisions", "a\n\n\n[... 5 bytes elided ...]\n\nx\nb\n\n\n[... 5 bytes elided ...]\n\ny\nc", []string{"a", elided, "b", elided, "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := lines(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	var long []string
	for i := 0; i < 30; i++ {
		long = append(long, "    line")
	}
	if got := message(long); strings.Count(got, "\n") != MessageLines-1 || strings.HasPrefix(got, " ") {
		t.Errorf("message of 30 indented lines = %q; want %d lines, dedented", got, MessageLines)
	}
	big := []string{strings.Repeat("é", MessageBytes)}
	if got := message(big); len(got) > MessageBytes || !strings.HasSuffix(got, "…") || !utf8Valid(got) {
		t.Errorf("message of a long line: %d bytes, valid %v; want at most %d ending in …", len(got), utf8Valid(got), MessageBytes)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestCommandFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		want []Format
	}{
		{"go test ./...", []Format{GoTest}},
		{"CGO_ENABLED=0 go test -race ./...", []Format{GoTest}},
		{"go vet ./... && go test ./... 2>&1 | tail -50", []Format{GoTest}},
		{"timeout 10m go test ./...", []Format{GoTest}},
		{"go build ./...", nil},
		{"pytest -q", []Format{Pytest}},
		{"python3 -m pytest tests/", []Format{Pytest}},
		{"python -m unittest", nil},
		{"poetry run pytest", []Format{Pytest}},
		{"uv run -- pytest", []Format{Pytest}},
		{"env PYTHONPATH=src pytest-3", []Format{Pytest}},
		{"npx jest --ci", []Format{Jest}},
		{"yarn jest", []Format{Jest}},
		{"pnpm exec vitest run", []Format{Vitest}},
		{"npx vitest", []Format{Vitest}},
		{"npm test", nil},
		{"npm exec jest", []Format{Jest}},
		{"npm run test:unit", nil},
		{"cargo test --workspace", []Format{Cargo}},
		{"cargo +nightly test", []Format{Cargo}},
		{"cargo build", nil},
		{"mvn -B verify", []Format{Surefire}},
		{"./mvnw test", []Format{Surefire}},
		{"./gradlew test", []Format{Surefire}},
		{"make test", nil},
		{"go test ./... && pytest", []Format{GoTest, Pytest}},
		{"# go test ./...\nmake check", nil},
		{`bash -c "go test ./..."`, nil},
	} {
		if got := CommandFormats(tc.cmd); strings.Join(asStrings(got), ",") != strings.Join(asStrings(tc.want), ",") {
			t.Errorf("CommandFormats(%q) = %v; want %v", tc.cmd, got, tc.want)
		}
	}
}

func asStrings(fs []Format) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}
