package webhook

import (
	"strings"
	"testing"

	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-cmp/cmp"
)

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		want   jobs.Command
		wantOK bool
	}{
		{name: "bare", body: "/agent-fix", wantOK: true},
		{name: "instructions on the line", body: "/agent-fix use the stdlib", want: jobs.Command{Instructions: "use the stdlib"}, wantOK: true},
		{name: "instructions and the rest of the comment", body: "Thanks!\n/agent-fix please\nkeep the API\n\n> quoted context\n", want: jobs.Command{Instructions: "please\nkeep the API\n\n> quoted context"}, wantOK: true},
		{name: "leading whitespace", body: "   \t/agent-fix now", want: jobs.Command{Instructions: "now"}, wantOK: true},
		{name: "tab after the name", body: "/agent-fix\tnow", want: jobs.Command{Instructions: "now"}, wantOK: true},
		{name: "case-insensitive", body: "/Agent-FIX", wantOK: true},
		{name: "crlf", body: "hi\r\n/agent-fix do it\r\nplease\r\n", want: jobs.Command{Instructions: "do it\nplease"}, wantOK: true},
		{name: "stop", body: "/agent-fix stop", want: jobs.Command{Verb: jobs.VerbStop}, wantOK: true},
		{name: "stop any case with text", body: "/agent-fix STOP it is wrong", want: jobs.Command{Verb: jobs.VerbStop, Instructions: "it is wrong"}, wantOK: true},
		{name: "help", body: "/agent-fix help", want: jobs.Command{Verb: jobs.VerbHelp}, wantOK: true},
		{name: "resume", body: "/agent-fix Resume", want: jobs.Command{Verb: jobs.VerbResume}, wantOK: true},
		{name: "resuming is not resume", body: "/agent-fix resuming the parser work", want: jobs.Command{Instructions: "resuming the parser work"}, wantOK: true},
		{name: "verb on the next line is instructions", body: "/agent-fix\nStop using globals", want: jobs.Command{Instructions: "Stop using globals"}, wantOK: true},
		{name: "stop with more lines", body: "/agent-fix stop\nwrong approach", want: jobs.Command{Verb: jobs.VerbStop, Instructions: "wrong approach"}, wantOK: true},
		{name: "stopping is not stop", body: "/agent-fix stopping early is fine", want: jobs.Command{Instructions: "stopping early is fine"}, wantOK: true},
		{name: "first command wins", body: "/agent-fix first\n/agent-fix stop", want: jobs.Command{Instructions: "first\n/agent-fix stop"}, wantOK: true},
		{name: "quoted", body: "> /agent-fix\nI agree"},
		{name: "quoted with spaces", body: "  >  /agent-fix"},
		{name: "quoted then real", body: "> /agent-fix stop\n/agent-fix go", want: jobs.Command{Instructions: "go"}, wantOK: true},
		{name: "fenced", body: "```\n/agent-fix\n```"},
		{name: "fenced with info string", body: "```sh\n/agent-fix\n```\n"},
		{name: "tilde fence", body: "~~~\n/agent-fix\n~~~"},
		{name: "unclosed fence", body: "```\n/agent-fix"},
		{name: "longer fence needs longer close", body: "````\n```\n/agent-fix\n````"},
		{name: "tilde does not close backticks", body: "```\n~~~\n/agent-fix\n```"},
		{name: "after fence closes", body: "```\ncode\n```\n/agent-fix go", want: jobs.Command{Instructions: "go"}, wantOK: true},
		{name: "inline backticks are not a fence", body: "``` x ` y\n/agent-fix", wantOK: true},
		{name: "mid-line", body: "please run /agent-fix"},
		{name: "inline code", body: "`/agent-fix`"},
		{name: "longer word", body: "/agent-fixes"},
		{name: "punctuation after the name", body: "/agent-fix."},
		{name: "path-like", body: "/agent-fix/foo"},
		{name: "other command", body: "/agent"},
		{name: "empty", body: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseCommand(tt.body, "/agent-fix")
			if ok != tt.wantOK {
				t.Fatalf("parseCommand(%q) ok = %v, want %v", tt.body, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseCommand(%q) (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}

func TestParseCommandOtherName(t *testing.T) {
	t.Parallel()
	if _, ok := parseCommand("/bot fix", "/bot"); !ok {
		t.Errorf("parseCommand with the configured name /bot: no command, want one")
	}
	if _, ok := parseCommand("/agent-fix", "/bot"); ok {
		t.Errorf("parseCommand(/agent-fix) with the name /bot: command, want none")
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"/agent-fix", "/agent-fix stop", "/agent-fix help me", "> /agent-fix", "```\n/agent-fix\n```",
		"~~~~\n/agent-fix\n~~~", "x\r\n/AGENT-FIX\tgo\r\n", "/agent-fixes", "", "\n", "`", "``` `",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cmd, ok := parseCommand(body, "/agent-fix")
		if !ok {
			if cmd != (jobs.Command{}) {
				t.Errorf("no command but a non-empty result %+v", cmd)
			}
		} else {
			if !strings.Contains(strings.ToLower(body), "/agent-fix") {
				t.Errorf("command found in a body without the name: %q", body)
			}
			if cmd.Verb != "" && cmd.Verb != jobs.VerbStop && cmd.Verb != jobs.VerbResume && cmd.Verb != jobs.VerbHelp {
				t.Errorf("verb %q", cmd.Verb)
			}
			if strings.TrimSpace(cmd.Instructions) != cmd.Instructions {
				t.Errorf("instructions not trimmed: %q", cmd.Instructions)
			}
		}
		// Quoting every line, or fencing the whole body, hides any command.
		quoted := "> " + strings.ReplaceAll(body, "\n", "\n> ")
		if _, ok := parseCommand(quoted, "/agent-fix"); ok {
			t.Errorf("command found in a fully quoted body: %q", quoted)
		}
		fence := strings.Repeat("~", longestRun(body, '~')+3)
		fenced := fence + "\n" + body + "\n" + fence
		if _, ok := parseCommand(fenced, "/agent-fix"); ok {
			t.Errorf("command found in a fully fenced body: %q", fenced)
		}
	})
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := range len(s) {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
