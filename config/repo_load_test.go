package config

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeFiles is a RepoFileGetter over files keyed "owner/repo:path" (owner
// and repository names case-insensitive, as on GitHub). It records every
// read and fails the reads listed in errs.
type fakeFiles struct {
	files map[string]string
	errs  map[string]error
	mu    sync.Mutex
	reads []string
}

func (f *fakeFiles) GetFile(_ context.Context, owner, repo, path string) ([]byte, bool, error) {
	key := strings.ToLower(owner+"/"+repo) + ":" + path
	f.mu.Lock()
	f.reads = append(f.reads, key)
	f.mu.Unlock()
	if err := f.errs[key]; err != nil {
		return nil, false, err
	}
	s, ok := f.files[key]
	return []byte(s), ok, nil
}

func TestLoadRepo(t *testing.T) {
	const own = "acme/widget:" + RepoFile
	const org = "acme/.github:" + RepoFile
	with := func(f func(r *RepoSettings)) RepoSettings {
		r := DefaultRepo()
		f(&r)
		return r
	}
	tests := []struct {
		name      string
		repo      string // owner/name loaded; acme/widget when empty
		files     map[string]string
		want      RepoSettings
		wantReads []string
	}{
		{
			name:      "no file anywhere",
			want:      DefaultRepo(),
			wantReads: []string{own, org},
		},
		{
			name:      "own file",
			files:     map[string]string{own: "test: make test\n", org: "draft: true\n"},
			want:      with(func(r *RepoSettings) { r.Test, r.Sources = "make test", []string{own} }),
			wantReads: []string{own},
		},
		{
			name:      "empty own file hides the organization's",
			files:     map[string]string{own: "# defaults please\n", org: "draft: true\n"},
			want:      with(func(r *RepoSettings) { r.Sources = []string{own} }),
			wantReads: []string{own},
		},
		{
			name:      "organization fallback",
			files:     map[string]string{org: "draft: true\nlabels: [bot]\n"},
			want:      with(func(r *RepoSettings) { r.Draft, r.Labels, r.Sources = true, []string{"bot"}, []string{org} }),
			wantReads: []string{own, org},
		},
		{
			name:      "the .github repository has no fallback to itself",
			repo:      "acme/.github",
			want:      DefaultRepo(),
			wantReads: []string{org},
		},
		{
			name: "_extends .github, own keys win, lists replaced",
			files: map[string]string{
				own: "_extends: .github\nlabels: [fix]\nmax_steps: 10\n",
				org: "labels: [bot, auto]\nmax_steps: 50\ndraft: true\nbranch_prefix: bots/\n",
			},
			want: with(func(r *RepoSettings) {
				r.Extends, r.Labels, r.MaxSteps, r.Draft, r.BranchPrefix = ".github", []string{"fix"}, 10, true, "bots/"
				r.Sources = []string{org, own}
			}),
			wantReads: []string{own, org},
		},
		{
			name:  "a false in the repository overrides a true in the base",
			files: map[string]string{own: "_extends: .github\ndraft: false\n", org: "draft: true\nallow_workflow_changes: true\n"},
			want: with(func(r *RepoSettings) {
				r.Extends, r.AllowWorkflowChanges, r.Sources = ".github", true, []string{org, own}
			}),
			wantReads: []string{own, org},
		},
		{
			name:  "ci keys of the repository override the base's one by one",
			files: map[string]string{own: "_extends: .github\nci:\n  max_rounds: 1\n", org: "ci:\n  enabled: false\n  rerun_failed: true\n  max_rounds: 4\n"},
			want: with(func(r *RepoSettings) {
				r.Extends, r.CI, r.Sources = ".github", CISettings{Enabled: false, RerunFailed: true, MaxRounds: 1}, []string{org, own}
			}),
			wantReads: []string{own, org},
		},
		{
			name: "_extends another repository of the owner",
			files: map[string]string{
				own:                       "_extends: shared\n",
				"acme/shared:" + RepoFile: "test: make check\n",
			},
			want: with(func(r *RepoSettings) {
				r.Extends, r.Test, r.Sources = "shared", "make check", []string{"acme/shared:" + RepoFile, own}
			}),
			wantReads: []string{own, "acme/shared:" + RepoFile},
		},
		{
			name: "_extends owner/repo:path, then relative to that owner",
			files: map[string]string{
				own:                             "_extends: Other/Configs:agent/base.yaml\nmodel: openai/gpt-5\n",
				"other/configs:agent/base.yaml": "_extends: root\nsetup: [make deps]\n",
				"other/root:" + RepoFile:        "setup: [make base]\ntest: make test\nmodel: anthropic/claude-sonnet-4-5\n",
			},
			want: with(func(r *RepoSettings) {
				r.Extends, r.Setup, r.Test, r.Model = "Other/Configs:agent/base.yaml", []string{"make deps"}, "make test", "openai/gpt-5"
				r.Sources = []string{"Other/root:" + RepoFile, "Other/Configs:agent/base.yaml", own}
			}),
			wantReads: []string{own, "other/configs:agent/base.yaml", "other/root:" + RepoFile},
		},
		{
			name: "organization fallback that extends",
			files: map[string]string{
				org:                       "_extends: policy\ndraft: true\n",
				"acme/policy:" + RepoFile: "allowed_teams: [acme/core]\n",
			},
			want: with(func(r *RepoSettings) {
				r.Extends, r.Draft, r.AllowedTeams = "policy", true, []string{"acme/core"}
				r.Sources = []string{"acme/policy:" + RepoFile, org}
			}),
			wantReads: []string{own, org, "acme/policy:" + RepoFile},
		},
		{
			name: "chain of the most files",
			files: map[string]string{
				own:                  "_extends: a\n",
				"acme/a:" + RepoFile: "_extends: b\n",
				"acme/b:" + RepoFile: "_extends: c\n",
				"acme/c:" + RepoFile: "_extends: d\n",
				"acme/d:" + RepoFile: "max_steps: 4\n",
			},
			want: with(func(r *RepoSettings) {
				r.Extends, r.MaxSteps = "a", 4
				r.Sources = []string{"acme/d:" + RepoFile, "acme/c:" + RepoFile, "acme/b:" + RepoFile, "acme/a:" + RepoFile, own}
			}),
			wantReads: []string{own, "acme/a:" + RepoFile, "acme/b:" + RepoFile, "acme/c:" + RepoFile, "acme/d:" + RepoFile},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner, name := "acme", "widget"
			if tt.repo != "" {
				owner, name, _ = strings.Cut(tt.repo, "/")
			}
			g := &fakeFiles{files: tt.files}
			got, err := LoadRepo(context.Background(), g, owner, name)
			if err != nil {
				t.Fatalf("LoadRepo error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadRepo mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantReads, g.reads); diff != "" {
				t.Errorf("files read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadRepoInvalid(t *testing.T) {
	const own = "acme/widget:" + RepoFile
	const org = "acme/.github:" + RepoFile
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "invalid own file",
			files: map[string]string{own: "max_steps: 0\n"},
			want:  []string{RepoFile + ":1: max_steps: must be a positive integer, got the number 0"},
		},
		{
			name:  "invalid organization file names it",
			files: map[string]string{org: "draft: sure\n"},
			want:  []string{org + ":1: draft: must be true or false, got the text \"sure\""},
		},
		{
			name:  "invalid base names the base",
			files: map[string]string{own: "_extends: .github\n", org: "\nlables: [x]\n"},
			want:  []string{org + ":2: lables: unknown key; did you mean labels?"},
		},
		{
			name:  "missing base",
			files: map[string]string{own: "test: x\n_extends: acme/nowhere\n"},
			want:  []string{RepoFile + ":2: _extends: acme/nowhere:" + RepoFile + " does not exist, or the App cannot read it (is the App installed on acme/nowhere?)"},
		},
		{
			name:  "extends itself",
			files: map[string]string{own: "_extends: widget\n"},
			want:  []string{RepoFile + ":1: _extends: makes a cycle: acme/widget:" + RepoFile + " → acme/widget:" + RepoFile},
		},
		{
			name:  "extends itself in other case",
			files: map[string]string{own: "_extends: ACME/Widget\n"},
			want:  []string{RepoFile + ":1: _extends: makes a cycle: acme/widget:" + RepoFile + " → ACME/Widget:" + RepoFile},
		},
		{
			name: "cycle through two files",
			files: map[string]string{
				own:                  "_extends: a\n",
				"acme/a:" + RepoFile: "_extends: b\n",
				"acme/b:" + RepoFile: "draft: true\n_extends: a\n",
			},
			want: []string{"acme/b:" + RepoFile + ":2: _extends: makes a cycle: acme/widget:" + RepoFile + " → acme/a:" + RepoFile + " → acme/b:" + RepoFile + " → acme/a:" + RepoFile},
		},
		{
			name: "chain too long",
			files: map[string]string{
				own:                  "_extends: a\n",
				"acme/a:" + RepoFile: "_extends: b\n",
				"acme/b:" + RepoFile: "_extends: c\n",
				"acme/c:" + RepoFile: "_extends: d\n",
				"acme/d:" + RepoFile: "_extends: e\n",
				"acme/e:" + RepoFile: "draft: true\n",
			},
			want: []string{"acme/d:" + RepoFile + ":1: _extends: makes the chain longer than 5 files: acme/widget:" + RepoFile + " → acme/a:" + RepoFile + " → acme/b:" + RepoFile + " → acme/c:" + RepoFile + " → acme/d:" + RepoFile + " → acme/e:" + RepoFile},
		},
		{
			name:  "teams of another organization",
			files: map[string]string{own: "allowed_teams: [acme/core, evil/core, Evil/admins]\n"},
			want:  []string{RepoFile + ":1: allowed_teams: evil/core, evil/admins not of the organization acme; only its own teams can be checked"},
		},
		{
			name:  "teams of another organization from a base elsewhere",
			files: map[string]string{own: "_extends: other/base\n", "other/base:" + RepoFile: "allowed_teams: [other/core]\n"},
			want:  []string{"other/base:" + RepoFile + ":1: allowed_teams: other/core not of the organization acme; only its own teams can be checked"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadRepo(context.Background(), &fakeFiles{files: tt.files}, "acme", "widget")
			if err == nil {
				t.Fatalf("LoadRepo = %+v, want an error", got)
			}
			if diff := cmp.Diff(tt.want, problemLines(t, err)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadRepoReadError(t *testing.T) {
	const own = "acme/widget:" + RepoFile
	boom := errors.New("502 bad gateway")
	tests := []struct {
		name    string
		files   map[string]string
		errs    map[string]error
		wantErr string
	}{
		{"own file", nil, map[string]error{own: boom}, "read configuration acme/widget:" + RepoFile + ": 502 bad gateway"},
		{"organization file", nil, map[string]error{"acme/.github:" + RepoFile: boom}, "read configuration acme/.github:" + RepoFile + ": 502 bad gateway"},
		{"base", map[string]string{own: "_extends: base\n"}, map[string]error{"acme/base:" + RepoFile: boom}, "read configuration acme/base:" + RepoFile + ": 502 bad gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadRepo(context.Background(), &fakeFiles{files: tt.files, errs: tt.errs}, "acme", "widget")
			if !errors.Is(err, boom) {
				t.Fatalf("LoadRepo error = %v, want one wrapping %v", err, boom)
			}
			var re *RepoError
			if errors.As(err, &re) {
				t.Errorf("a read error is a *RepoError; the worker would blame the file")
			}
			if err.Error() != tt.wantErr {
				t.Errorf("LoadRepo error = %q, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRepoLimits(t *testing.T) {
	op := JobLimits{MaxSteps: 75, MaxCostUSD: 3, MaxDuration: 45 * time.Minute}
	tests := []struct {
		name       string
		repo       RepoSettings
		op         JobLimits
		want       JobLimits
		wantCapped []string
	}{
		{name: "none set", op: op, want: op},
		{
			name: "all lowered",
			repo: RepoSettings{MaxSteps: 20, MaxCostUSD: 0.5, MaxDuration: 10 * time.Minute},
			op:   op,
			want: JobLimits{MaxSteps: 20, MaxCostUSD: 0.5, MaxDuration: 10 * time.Minute},
		},
		{name: "equal is not capped", repo: RepoSettings{MaxSteps: 75, MaxCostUSD: 3, MaxDuration: 45 * time.Minute}, op: op, want: op},
		{
			name: "all raised are capped",
			repo: RepoSettings{MaxSteps: 200, MaxCostUSD: 10, MaxDuration: 2 * time.Hour},
			op:   op,
			want: op,
			wantCapped: []string{
				"max_steps: 200 is above the operator's limit; 75 applies",
				"max_cost_usd: 10.00 is above the operator's limit; 3.00 applies",
				"max_duration: 2h is above the operator's limit; 45m applies",
			},
		},
		{
			name:       "one raised, one lowered",
			repo:       RepoSettings{MaxSteps: 10, MaxDuration: 90 * time.Minute},
			op:         op,
			want:       JobLimits{MaxSteps: 10, MaxCostUSD: 3, MaxDuration: 45 * time.Minute},
			wantCapped: []string{"max_duration: 1h30m is above the operator's limit; 45m applies"},
		},
		{
			name: "operator without a limit of that kind",
			repo: RepoSettings{MaxSteps: 10, MaxCostUSD: 1, MaxDuration: time.Minute},
			op:   JobLimits{},
			want: JobLimits{MaxSteps: 10, MaxCostUSD: 1, MaxDuration: time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, capped := tt.repo.Limits(tt.op)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Limits mismatch (-want +got):\n%s", diff)
			}
			var gotCapped []string
			for _, c := range capped {
				gotCapped = append(gotCapped, c.String())
			}
			if diff := cmp.Diff(tt.wantCapped, gotCapped); diff != "" {
				t.Errorf("capped mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppJobLimits(t *testing.T) {
	got := Defaults().JobLimits()
	want := JobLimits{MaxSteps: 75, MaxCostUSD: 3, MaxDuration: 45 * time.Minute}
	if got != want {
		t.Errorf("Defaults().JobLimits() = %+v, want %+v", got, want)
	}
}

// fakeTeams is a TeamChecker over members keyed "org/slug", recording the
// teams asked.
type fakeTeams struct {
	members map[string][]string
	err     error
	asked   []string
}

func (f *fakeTeams) IsTeamMember(_ context.Context, org, slug, login string) (bool, error) {
	f.asked = append(f.asked, org+"/"+slug)
	if f.err != nil {
		return false, f.err
	}
	for _, m := range f.members[org+"/"+slug] {
		if strings.EqualFold(m, login) {
			return true, nil
		}
	}
	return false, nil
}

func TestMayTrigger(t *testing.T) {
	teams := map[string][]string{"acme/core": {"carol"}, "acme/docs": {"dave"}}
	tests := []struct {
		name      string
		repo      RepoSettings
		login     string
		want      bool
		wantAsked []string
	}{
		{name: "no narrowing", login: "anyone", want: true},
		{name: "listed user", repo: RepoSettings{AllowedUsers: []string{"Alice"}, AllowedTeams: []string{"acme/core"}}, login: "alice", want: true},
		{name: "unlisted user without teams", repo: RepoSettings{AllowedUsers: []string{"alice"}}, login: "bob", want: false},
		{name: "member of the second team", repo: RepoSettings{AllowedTeams: []string{"acme/core", "acme/docs"}}, login: "dave", want: true, wantAsked: []string{"acme/core", "acme/docs"}},
		{name: "member of the first team stops asking", repo: RepoSettings{AllowedTeams: []string{"acme/core", "acme/docs"}}, login: "carol", want: true, wantAsked: []string{"acme/core"}},
		{name: "member of no team", repo: RepoSettings{AllowedUsers: []string{"alice"}, AllowedTeams: []string{"acme/core"}}, login: "eve", want: false, wantAsked: []string{"acme/core"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTeams{members: teams}
			got, err := tt.repo.MayTrigger(context.Background(), tt.login, f)
			if err != nil {
				t.Fatalf("MayTrigger error: %v", err)
			}
			if got != tt.want {
				t.Errorf("MayTrigger(%q) = %v, want %v", tt.login, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantAsked, f.asked); diff != "" {
				t.Errorf("teams asked mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("team check error", func(t *testing.T) {
		boom := errors.New("403 resource not accessible")
		r := RepoSettings{AllowedTeams: []string{"acme/core"}}
		ok, err := r.MayTrigger(context.Background(), "eve", &fakeTeams{err: boom})
		if ok || !errors.Is(err, boom) {
			t.Errorf("MayTrigger = %v, %v; want false and an error wrapping %v", ok, err, boom)
		}
	})
	t.Run("teams without a checker", func(t *testing.T) {
		r := RepoSettings{AllowedTeams: []string{"acme/core"}}
		if ok, err := r.MayTrigger(context.Background(), "eve", nil); ok || err == nil {
			t.Errorf("MayTrigger = %v, %v; want false and an error", ok, err)
		}
	})
}
