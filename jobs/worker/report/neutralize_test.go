package report

import "testing"

func TestNeutralize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain text kept", "Fixed the off-by-one in parser.go.", "Fixed the off-by-one in parser.go."},
		{"mention defused", "Thanks @octocat!", "Thanks @&#8203;octocat!"},
		{"team mention defused", "cc @github/security", "cc @&#8203;github/security"},
		{"mention at line start", "@admin please look", "@&#8203;admin please look"},
		{"email kept", "mail me at dev@example.com", "mail me at dev@example.com"},
		{"mention in code span kept", "run `npm i @types/node`", "run `npm i @types/node`"},
		{"mention in double backticks kept", "``a ` @x``", "``a ` @x``"},
		{"unmatched backtick is text", "a ` @x", "a ` @&#8203;x"},
		{"image removed", "see ![screenshot](https://evil.example/x.png) here", "see (image removed) here"},
		{"reference image removed", "![alt][ref]", "(image removed)"},
		{"link kept", "[docs](https://example.com)", "[docs](https://example.com)"},
		{"raw html escaped", "<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)>"},
		{"html comment escaped", "<!-- hidden -->", "&lt;!-- hidden -->"},
		{"closing keyword defused", "This fixes #12 and closes #13.", "This fixes #&#8203;12 and closes #&#8203;13."},
		{"cross-repo closing keyword defused", "Resolves: org/repo#7", "Resolves: org/repo#&#8203;7"},
		{"plain issue reference kept", "see #12", "see #12"},
		{"closing keyword with a URL defused", "Closes https://github.com/o/r/issues/8", "Closes https://github.com/o/r/issues/&#8203;8"},
		{"closing keyword with a pull request URL defused", "fixes http://ghe.example/o/r/pull/3.", "fixes http://ghe.example/o/r/pull/&#8203;3."},
		{"closing keyword with a colon and no space defused", "Resolves:#8", "Resolves:#&#8203;8"},
		{"closing keyword with GH- defused", "fixed GH-8", "fixed GH-&#8203;8"},
		{"entity of @ escaped", "&#64;maintainer &commat;x", "&amp;#64;maintainer &amp;commat;x"},
		{"ampersand escaped", "a && b", "a &amp;&amp; b"},
		{"fenced block untouched", "```go\n// @x <b>\n```\n@y", "```go\n// @x <b>\n```\n@&#8203;y"},
		{"tilde fence untouched", "~~~\n@x\n~~~~\n@y", "~~~\n@x\n~~~~\n@&#8203;y"},
		{"longer fence needs longer close", "````\n```\n@x\n````\n@y", "````\n```\n@x\n````\n@&#8203;y"},
		{"unclosed fence runs to end", "```\n@x", "```\n@x"},
		{"indented four spaces is not a fence", "    ```\n@x", "    ```\n@&#8203;x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Neutralize(tt.in); got != tt.want {
				t.Errorf("Neutralize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"@a `@b` ```\n@c\n```", "![x](y) <z>", "fixes #1", "````\n~~~", "Closes https://x/o/r/issues/8 &#64;a &amp; GH-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Neutralize(s)
		if twice := Neutralize(once); twice != once {
			t.Errorf("Neutralize is not idempotent on %q:\n once %q\ntwice %q", s, once, twice)
		}
	})
}

func TestPlainTitle(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Crash  when parsing;\nfixes #3", "Crash when parsing; fixes #\u200b3"},
		{"cc @maintainer: resolves https://github.com/o/r/issues/9", "cc @\u200bmaintainer: resolves https://github.com/o/r/issues/\u200b9"},
		{"Closes GH-4 for @org/team", "Closes GH-\u200b4 for @\u200borg/team"},
		{"a@b.c stays", "a@b.c stays"},
	}
	for _, tt := range tests {
		if got := PlainTitle(tt.in); got != tt.want {
			t.Errorf("PlainTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
