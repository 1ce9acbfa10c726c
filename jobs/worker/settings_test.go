package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
)

// readableFiles is the App's GitHub as the settings loader sees it: the
// files it can read on default branches, by "owner/name:path", and each
// read it was asked for, as "installation owner/name:path". What the App
// cannot read (another branch, a repository no installation covers) is
// not there: ghapp's TestDefaultBranchFile shows DefaultBranchFile so.
type readableFiles struct {
	Installations // the loader needs DefaultBranchFile alone

	files map[string]string
	mu    sync.Mutex
	asked []string
}

func (f *readableFiles) DefaultBranchFile(_ context.Context, installation int64, repo ghapp.Repo, path string) ([]byte, bool, error) {
	key := repo.String() + ":" + path
	f.mu.Lock()
	f.asked = append(f.asked, fmt.Sprintf("%d %s", installation, key))
	f.mu.Unlock()
	data, ok := f.files[key]
	return []byte(data), ok, nil
}

// newSettingsLoader is the worker's loader of repository settings over
// files, with the harness's operator limits (20 steps, $1, 5m) and model;
// the models it can build are the openai ones.
func newSettingsLoader(files map[string]string) (*settingsLoader, *readableFiles) {
	cfg := config.Defaults()
	cfg.Model = hModel
	cfg.MaxSteps, cfg.MaxCostUSD, cfg.MaxDuration = 20, 1, 5*time.Minute
	gh := &readableFiles{files: files}
	model := func(name string) (agent.Model, error) {
		if !strings.HasPrefix(name, "openai/") {
			return nil, errors.New("unknown provider")
		}
		return nil, nil
	}
	return &settingsLoader{inst: gh, cfg: cfg, model: model}, gh
}

// TestSettingsLoad: a job's settings come from the repository's file on
// the default branch, else its owner's .github repository's, with the
// files they extend, each read with the job's installation when its owner
// is the repository's and looked up otherwise; the repository's limits
// only lower the operator's, and say so where they cannot raise them; a
// model of its own must be one the worker can build. What cannot be used
// is a *repoConfigError naming the file and line.
func TestSettingsLoad(t *testing.T) {
	t.Parallel()
	own := "octo/widget:" + config.RepoFile
	org := "octo/.github:" + config.RepoFile
	tests := []struct {
		name  string
		files map[string]string
		// test, model, maxSteps and maxCost are the settings' (maxSteps 0:
		// the operator's 20); notes what they say about limits.
		test, model string
		maxSteps    int
		notes       []string
		// asked are the reads, "installation owner/name:path".
		asked []string
		// problems, when set, are lines of the *repoConfigError instead.
		problems []string
	}{
		{
			name:  "no file anywhere",
			model: hModel,
			asked: []string{"42 " + own, "42 " + org},
		},
		{
			name:  "the repository's own file",
			files: map[string]string{own: "test: make test\nmax_steps: 5\nmodel: " + hRepoModel + "\n"},
			test:  "make test", model: hRepoModel, maxSteps: 5,
			asked: []string{"42 " + own},
		},
		{
			name:  "the organization's .github repository",
			files: map[string]string{org: "test: make org-test\n"},
			test:  "make org-test", model: hModel,
			asked: []string{"42 " + own, "42 " + org},
		},
		{
			name: "_extends a file of the same owner, then another owner's",
			files: map[string]string{
				own:                             "_extends: shared:agentfix/base.yml\ninstructions: Be brief.\n",
				"octo/shared:agentfix/base.yml": "_extends: acme/policies:agentfix.yml\ntest: make base\n",
				"acme/policies:agentfix.yml":    "max_steps: 7\ntest: make policy\n",
			},
			test: "make base", model: hModel, maxSteps: 7,
			asked: []string{"42 " + own, "42 octo/shared:agentfix/base.yml", "0 acme/policies:agentfix.yml"},
		},
		{
			name:     "_extends a file the App cannot read",
			files:    map[string]string{own: "_extends: shared:agentfix/base.yml\n"},
			problems: []string{".github/agent-fix.yml:1: _extends: octo/shared:agentfix/base.yml does not exist, or the App cannot read it"},
		},
		{
			name:  "limits above the operator's",
			files: map[string]string{own: "max_steps: 2\nmax_cost_usd: 100\n"},
			model: hModel, maxSteps: 2,
			notes: []string{".github/agent-fix.yml: max_cost_usd: 100.00 is above the operator's limit; 1.00 applies"},
			asked: []string{"42 " + own},
		},
		{
			name:  "invalid keys and values",
			files: map[string]string{own: "test: make test\nmax_steps: many\ncolour: blue\n"},
			problems: []string{
				".github/agent-fix.yml:2: max_steps: must be a positive integer",
				".github/agent-fix.yml:3: colour: unknown key",
			},
		},
		{
			name:     "a model that cannot be built",
			files:    map[string]string{own: "model: acme/rocket\n"},
			problems: []string{".github/agent-fix.yml: model: acme/rocket cannot be used here: unknown provider"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, gh := newSettingsLoader(tt.files)
			s, err := l.load(t.Context(), hInstall, ghapp.Repo{Owner: "octo", Name: "widget"})
			if tt.problems != nil {
				var bad *repoConfigError
				if !errors.As(err, &bad) {
					t.Fatalf("load = %v, want a *repoConfigError", err)
				}
				for _, p := range tt.problems {
					if !strings.Contains(bad.Problems, p) {
						t.Errorf("problems lack %q:\n%s", p, bad.Problems)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			maxSteps := tt.maxSteps
			if maxSteps == 0 {
				maxSteps = 20
			}
			got := fmt.Sprintf("test %q, model %s, %d steps, $%.2f, %s, branch %s", s.Repo.Test, s.Model, s.Limits.MaxSteps, s.Limits.MaxCostUSD, s.Limits.MaxDuration, s.branch(7))
			want := fmt.Sprintf("test %q, model %s, %d steps, $1.00, 5m0s, branch agent-fix/issue-7", tt.test, tt.model, maxSteps)
			if got != want {
				t.Errorf("settings = %s\nwant       %s", got, want)
			}
			if diff := cmp.Diff(tt.notes, s.notes()); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.asked, gh.asked); diff != "" {
				t.Errorf("reads (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepoLimits: help's "Limits in this repository" are the job limits
// after the repository's configuration, the limits it could not raise, who
// it lets in, and the daily budgets with today's spend; a configuration
// that cannot be used shows the operator's limits and says no job starts.
func TestRepoLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yml  string
		want []string
	}{
		{
			name: "limits lowered and raised, people and teams",
			yml:  "max_steps: 5\nmax_cost_usd: 100\nallowed_users: [bob]\nallowed_teams: [octo/maintainers]\n",
			want: []string{
				"each job: at most 5 agent steps, $1.00 of model spend and 5m00s",
				".github/agent-fix.yml: max_cost_usd: 100.00 is above the operator's limit; 1.00 applies",
				".github/agent-fix.yml lets only these people with write access start work: @bob, team octo/maintainers",
				"this repository: $20.00 of model spend per day (UTC), $2.50 spent today",
				"all repositories of this installation together: $100.00 of model spend per day (UTC), $2.50 spent today",
			},
		},
		{
			name: "a configuration that cannot be used",
			yml:  "max_steps: many\n",
			want: []string{
				"each job: at most 20 agent steps, $1.00 of model spend and 5m00s",
				"this repository: $20.00 of model spend per day (UTC), $2.50 spent today",
				"all repositories of this installation together: $100.00 of model spend per day (UTC), $2.50 spent today",
				".github/agent-fix.yml on the default branch cannot be used, so no job starts until it is fixed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newSettingsLoader(map[string]string{"octo/widget:" + config.RepoFile: tt.yml})
			b, err := budget.New(newRedis(t), budget.LimitsFrom(l.cfg), budget.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Reserve(t.Context(), budget.Scope{Installation: hInstall, Repo: hRepo, Job: "earlier"}, budget.Amount{USD: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Settle(t.Context(), budget.Amount{USD: 2.5}); err != nil {
				t.Fatal(err)
			}
			w := &Worker{settings: l, opts: Options{Budget: b}, log: slog.New(slog.DiscardHandler)}
			got := w.repoLimits(t.Context(), hInstall, ghapp.Repo{Owner: "octo", Name: "widget"})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}
