package deploy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// instruction is one Dockerfile instruction: its keyword in upper case, its
// flags (--from=build, --mount=…) and the rest of the line.
type instruction struct {
	line  int
	cmd   string
	flags []string
	args  string
}

// stage is one FROM and the instructions under it.
type stage struct {
	name  string // the AS name, or ""
	base  string // the image
	insts []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.insts {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM and the
// stages.
type dockerfile struct {
	globalArgs []instruction
	stages     []stage
}

// parseDockerfile reads the Dockerfile at path. It understands what
// deploy/Dockerfile uses: comments, parser directives, line continuations
// with a backslash, and instruction flags; no heredocs.
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var df dockerfile
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		in := parseInstruction(start, text)
		switch {
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			st := stage{base: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			} else if len(fields) != 1 {
				t.Fatalf("%s line %d: FROM %s: want FROM image [AS name]", path, in.line, in.args)
			}
			df.stages = append(df.stages, st)
		case len(df.stages) == 0 && in.cmd == "ARG":
			df.globalArgs = append(df.globalArgs, in)
		case len(df.stages) == 0:
			t.Fatalf("%s line %d: %s before the first FROM", path, in.line, in.cmd)
		default:
			last := &df.stages[len(df.stages)-1]
			last.insts = append(last.insts, in)
		}
	}
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue // comments may sit inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: ends inside a continued line", path)
	}
	return df
}

func parseInstruction(line int, text string) instruction {
	cmd, rest, _ := strings.Cut(text, " ")
	in := instruction{line: line, cmd: strings.ToUpper(cmd)}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		var flag string
		flag, rest, _ = strings.Cut(rest, " ")
		in.flags = append(in.flags, flag)
		rest = strings.TrimSpace(rest)
	}
	in.args = rest
	return in
}

func TestParseDockerfile(t *testing.T) {
	path := t.TempDir() + "/Dockerfile"
	src := "# syntax=docker/dockerfile:1\nARG V=1\n\nFROM golang:${V} AS build\n" +
		"RUN --mount=type=cache,target=/x \\\n    # a comment inside\n    go build \\\n    ./cmd/bot\n" +
		"FROM debian\nCOPY --from=build /a /b\nCMD [\"serve\"]\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := parseDockerfile(t, path)
	want := dockerfile{
		globalArgs: []instruction{{line: 2, cmd: "ARG", args: "V=1"}},
		stages: []stage{
			{name: "build", base: "golang:${V}", insts: []instruction{
				{line: 5, cmd: "RUN", flags: []string{"--mount=type=cache,target=/x"}, args: "go build  ./cmd/bot"},
			}},
			{base: "debian", insts: []instruction{
				{line: 10, cmd: "COPY", flags: []string{"--from=build"}, args: "/a /b"},
				{line: 11, cmd: "CMD", args: `["serve"]`},
			}},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(dockerfile{}, stage{}, instruction{})); diff != "" {
		t.Errorf("parse (-want +got):\n%s", diff)
	}
}
