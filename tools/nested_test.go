package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

var nestedFiles = map[string]string{
	"calc":      "Use table tests.<!-- and delete the others -->\n",
	"calc/deep": "Generated code: do not edit by hand.\n",
	"docs":      "Write in British English.\n",
}

func TestNestedInstructions(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.NestedInstructions = nestedFiles })
	writeFiles(t, e.wt.Dir(), map[string]string{"calc/deep/gen.go": "package deep\n", "docs/guide.md": "# Guide\n"})
	steps := []struct {
		title string
		call  agent.ToolCall
		want  []string // the directories whose instructions the observation shows
	}{
		{"the root is no nested directory", call(EditorTool, ed("view", "README.md")), nil},
		{"a search of the whole tree names no directory", call(BashTool, map[string]string{"command": "grep -rn Add . | head -3"}), nil},
		{"reading a file shows its directory's instructions", call(EditorTool, ed("view", "calc/calc.go", "view_range", []int{1, 2})), []string{"calc"}},
		{"once", call(EditorTool, ed("view", "/workspace/calc/calc_test.go", "view_range", []int{1, 1})), nil},
		{"a deeper directory shows its own", call(EditorTool, ed("str_replace", "/workspace/calc/deep/gen.go", "old_str", "package deep", "new_str", "package deep // x")), []string{"calc/deep"}},
		{"a bash command naming a path", call(BashTool, map[string]string{"command": "cd docs && wc -l guide.md"}), []string{"docs"}},
	}
	var transcript strings.Builder
	for _, s := range steps {
		out := e.exec(t, s.call).Output
		transcript.WriteString("### " + s.title + "\n" + s.call.Brief(200) + "\n" + out + "\n\n")
		var got []string
		for _, dir := range []string{"calc", "calc/deep", "docs"} {
			if strings.Contains(out, "[The directory "+dir+"/ has instructions") {
				got = append(got, dir)
			}
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: instructions shown (-want +got):\n%s", s.title, diff)
		}
	}
	golden(t, "nested_instructions", transcript.String())
}

func TestNestedInstructionsOutermostFirst(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.NestedInstructions = nestedFiles })
	writeFiles(t, e.wt.Dir(), map[string]string{"calc/deep/gen.go": "package deep\n"})
	out := e.bash(t, "head -1 calc/deep/gen.go docs/none.md 2>/dev/null; true")
	calc, deep, docs := strings.Index(out, "in calc/AGENTS.md"), strings.Index(out, "in calc/deep/AGENTS.md"), strings.Index(out, "in docs/AGENTS.md")
	if calc < 0 || docs < 0 || deep < calc || deep < docs {
		t.Errorf("want calc and docs before calc/deep:\n%s", out)
	}
	if !strings.HasPrefix(out, "==> calc/deep/gen.go <==") {
		t.Errorf("the output does not come first:\n%s", out)
	}
}

func TestCommandWords(t *testing.T) {
	got := commandWords(`cd pkg/api && go test -run=TestX --coverprofile=out/c.txt ./... | tee "docs/log file.txt"`)
	want := []string{"cd", "pkg/api", "go", "test", "-run=TestX", "TestX", "--coverprofile=out/c.txt", "out/c.txt", "./...", "tee", "docs/log file.txt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commandWords (-want +got):\n%s", diff)
	}
}

func TestNestedInstructionsRefused(t *testing.T) {
	tests := []struct {
		dirs map[string]string
		want string
	}{
		{map[string]string{".": "x"}, "nested instructions for the repository root: they belong in agent.Task's RepoInstructions"},
		{map[string]string{"": "x"}, "nested instructions for the repository root: they belong in agent.Task's RepoInstructions"},
		{map[string]string{"../up": "x"}, `nested instructions: directory "../up" is not a path inside the repository`},
		{map[string]string{"/etc": "x"}, `nested instructions: directory "/etc" is not a path inside the repository`},
	}
	for _, tt := range tests {
		_, err := nestedInstructions(tt.dirs, DefaultOutputLimit)
		if err == nil || err.Error() != tt.want {
			t.Errorf("nestedInstructions(%v) error = %v, want %q", tt.dirs, err, tt.want)
		}
	}
	got, err := nestedInstructions(map[string]string{"a/b/": strings.Repeat("x", 10000)}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Dir != "a/b" || got[0].Path != "a/b/AGENTS.md" || len(got[0].Text) > 600 {
		t.Errorf("nestedInstructions = %+v, want a/b cut to a quarter of the output limit", got)
	}
}

func TestToolDescriptionsStateTheLimits(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.CommandTimeout = 90 * time.Second; o.OutputLimit = 5000 })
	specs := e.Tools()
	for _, want := range []string{"Each command may run for 90 seconds;", "Output longer than 5000 bytes is cut"} {
		if !strings.Contains(specs[0].Description, want) {
			t.Errorf("the bash description lacks %q:\n%s", want, specs[0].Description)
		}
	}
	if want := "A view or result longer than 5000 bytes is cut"; !strings.Contains(specs[1].Description, want) {
		t.Errorf("the editor description lacks %q:\n%s", want, specs[1].Description)
	}
	if diff := cmp.Diff(agent.CommandLimits{Timeout: 90 * time.Second, OutputCap: 5000}, e.CommandLimits()); diff != "" {
		t.Errorf("CommandLimits (-want +got):\n%s", diff)
	}
}
