package ghfake

import (
	"strings"
)

// The webhook payloads of the events the fake's state changes would make
// GitHub send, for a test to sign and deliver: the fields the bot reads, in
// GitHub's shapes, with the repository, the installation that covers it
// (none when none does) and a sender.

// CheckSuiteEvent returns the check_suite payload of suite id of repo with
// action "completed" (whatever its runs say), listing the open pull
// requests whose head branch is the suite's, as GitHub does.
func (f *Fake) CheckSuiteEvent(repo string, id int64) map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	for _, s := range rp.checkSuites {
		if s.ID == id {
			suite := f.suiteJSON(rp, s)
			suite["pull_requests"] = f.prsOfBranch(rp, s.HeadBranch)
			return f.event(rp, "completed", map[string]any{"check_suite": suite})
		}
	}
	f.fatalf("no check suite %d in %s", id, repo)
	return nil
}

// CheckRunEvent returns the check_run payload of check run id of repo with
// action "completed".
func (f *Fake) CheckRunEvent(repo string, id int64) map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	for _, c := range rp.checkRuns {
		if c.ID != id {
			continue
		}
		run := f.checkRunJSON(rp, c)
		branch := ""
		for _, s := range rp.checkSuites {
			if s.ID == c.SuiteID {
				branch = s.HeadBranch
			}
		}
		run["pull_requests"] = f.prsOfBranch(rp, branch)
		return f.event(rp, "completed", map[string]any{"check_run": run})
	}
	f.fatalf("no check run %d in %s", id, repo)
	return nil
}

// PushEvent returns the push payload of branch of repo moving from before
// to where it is now.
func (f *Fake) PushEvent(repo, branch, before string) map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	after, ok := f.branchSHA(rp, branch)
	if !ok {
		f.fatalf("no branch %s in %s", branch, repo)
	}
	m := f.event(rp, "", map[string]any{"ref": "refs/heads/" + branch, "before": before, "after": after,
		"created": false, "deleted": false, "forced": false})
	delete(m, "action")
	return m
}

// prsOfBranch lists the open pull requests of rp from branch, as a check
// payload's pull_requests. Callers hold f.mu.
func (f *Fake) prsOfBranch(rp *repo, branch string) []any {
	out := []any{}
	if branch == "" {
		return out
	}
	for _, n := range sortedKeys(rp.pulls) {
		pr := rp.pulls[n]
		if pr.State != "open" || pr.Head != branch {
			continue
		}
		head, _ := f.branchSHA(rp, pr.Head)
		base, _ := f.branchSHA(rp, pr.Base)
		ref := map[string]any{"id": rp.id, "name": rp.name, "url": f.APIURL() + "repos/" + rp.fullName()}
		out = append(out, map[string]any{"number": pr.Number,
			"head": map[string]any{"ref": pr.Head, "sha": head, "repo": ref},
			"base": map[string]any{"ref": pr.Base, "sha": base, "repo": ref}})
	}
	return out
}

// event wraps fields with the repository, action, installation and
// sender. Callers hold f.mu.
func (f *Fake) event(rp *repo, action string, fields map[string]any) map[string]any {
	m := map[string]any{"action": action, "repository": rp.json(f), "sender": f.userJSON("github-actions[bot]")}
	for k, v := range fields {
		m[k] = v
	}
	for _, inst := range f.installations {
		if inst.repos[strings.ToLower(rp.fullName())] && !inst.suspended {
			m["installation"] = map[string]any{"id": inst.id}
		}
	}
	return m
}
