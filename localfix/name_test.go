package localfix

import "testing"

func TestRepoNameFromURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, want string
	}{
		{"https://github.com/octo/calc.git", "octo/calc"},
		{"https://github.com/octo/calc", "octo/calc"},
		{"https://github.com/octo/calc/", "octo/calc"},
		{"https://x-access-token:ghs_secret@github.com/octo/calc.git", "octo/calc"},
		{"http://ghe.example.com/octo/calc.js.git", "octo/calc.js"},
		{"ssh://git@github.com/octo/calc.git", "octo/calc"},
		{"ssh://git@ghe.example.com:2222/octo-org/my_repo", "octo-org/my_repo"},
		{"git://github.com/octo/calc.git", "octo/calc"},
		{"git@github.com:octo/calc.git", "octo/calc"},
		{"github.com:octo/calc", "octo/calc"},
		{"git@github.com:/octo/calc.git", "octo/calc"},
		// Not owner/name on a host.
		{"/srv/git/calc.git", ""},
		{"../calc", ""},
		{"file:///srv/git/octo/calc.git", ""},
		{"https://gitlab.example.com/group/sub/calc.git", ""},
		{"https://github.com/calc.git", ""},
		{"https://github.com/", ""},
		{"git@github.com:octo/calc/extra.git", ""},
		{"https://github.com/-octo/calc", ""},
		{"https://github.com/octo/..", ""},
		{"https://github.com/octo/ca lc", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := repoNameFromURL(tt.url)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("repoNameFromURL(%q) = %q, %v; want %q", tt.url, got, ok, tt.want)
		}
	}
}

func TestValidRepoName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"octo/calc": true, "o/c": true, "octo-org/calc.go_x": true,
		"calc": false, "octo/": false, "/calc": false, "octo/calc/x": false, "octo/.": false, "oc to/calc": false,
		"-octo/calc": false, "octo/calc\n": false,
	} {
		if got := validRepoName(name); got != want {
			t.Errorf("validRepoName(%q) = %v, want %v", name, got, want)
		}
	}
}
