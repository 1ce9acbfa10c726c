package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Task is what a run works on: an issue of a repository, the requester's
// instructions, the repository's notes and instructions file for agents
// and, for a revision of a pull request the bot opened, the review to
// address.
//
// Issue, instruction and review text is untrusted; the instance prompt
// sanitises it (see SanitizeText), and the repository's instructions file
// too, which it also cuts to MaxInstructionsBytes. Notes come from the
// repository's config on its default branch and diffs are code: both are
// shown as they are.
type Task struct {
	// Repo is the repository's full name, owner/name.
	Repo string `json:"repo"`
	// Issue is the issue number; zero for a local run without one.
	Issue int    `json:"issue,omitempty"`
	Title string `json:"title"`
	Body  string `json:"body"`
	// Instructions are the requester's free text after the command.
	Instructions string `json:"instructions,omitempty"`
	// Notes are the repository notes from its per-repo config.
	Notes string `json:"notes,omitempty"`
	// RepoInstructions is the repository's instructions file for agents
	// on its default branch, the first of InstructionsFiles it has; nil
	// when it has none.
	RepoInstructions *InstructionsFile `json:"repo_instructions,omitempty"`
	// Revision is set when the run revises an open pull request.
	Revision *Revision `json:"revision,omitempty"`
}

// InstructionsFile is a file of instructions for agents in a repository.
type InstructionsFile struct {
	// Path is the file's path relative to the repository root, e.g.
	// AGENTS.md; the prompt names it.
	Path string `json:"path"`
	Text string `json:"text"`
}

// MaxInstructionsBytes bounds the repository's instructions file shown in
// the instance prompt; the prompt says how much of a longer file it left
// out.
const MaxInstructionsBytes = 16 << 10

// InstructionsFiles returns the names of the repository-wide instructions
// file for agents, in order of preference: a repository that has several
// gives the agent the first.
func InstructionsFiles() []string {
	return []string{"AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"}
}

// Revision is the context of a revise round on the bot's pull request. The
// caller leaves out comments by users without write access.
type Revision struct {
	PR int `json:"pr"`
	// Diff is the pull request's current diff against its base.
	Diff string `json:"diff"`
	// ReviewAuthor and ReviewBody are the triggering review's, if any.
	ReviewAuthor string          `json:"review_author,omitempty"`
	ReviewBody   string          `json:"review_body,omitempty"`
	Comments     []ReviewComment `json:"comments,omitempty"`
	// Checks are the checks that failed on the pull request's head, for
	// a round that fixes them (none for other rounds).
	Checks []FailedCheck `json:"checks,omitempty"`
	// Flaky names the checks that failed on the head and passed when they
	// were re-run: the round leaves them alone.
	Flaky []string `json:"flaky,omitempty"`
	// Conflict is set for a round that resolves the pull request's merge
	// conflicts with its base branch.
	Conflict *Conflict `json:"conflict,omitempty"`
}

// FailedCheck is a check that failed on the pull request's head.
type FailedCheck struct {
	Name string `json:"name"`
	// App is the App that ran it ("GitHub Actions", another CI's name).
	App string `json:"app,omitempty"`
	// Conclusion is GitHub's: failure, timed_out or startup_failure.
	Conclusion string `json:"conclusion"`
	// PreExisting is set when the check fails on the base branch's head
	// too: the pull request did not cause it, and the prompt says not to
	// chase it.
	PreExisting bool `json:"pre_existing,omitempty"`
	// Report is what the check said, as the caller gathered it (its
	// output, its annotations, the lines around the errors of its failed
	// steps' log); the prompt quotes it.
	Report string `json:"report"`
}

// Conflict is a merge of the base branch into the pull request's branch
// that GitHub found does not merge: the working copy holds the merge, with
// conflict markers in Files (none when git merged it cleanly, and the
// merged code is what needs fixing).
type Conflict struct {
	// Base is the base branch and BaseHead the commit merged.
	Base     string `json:"base"`
	BaseHead string `json:"base_head"`
	// Head is the pull request's head commit, the merge's first side.
	Head  string         `json:"head"`
	Files []ConflictFile `json:"files"`
}

// ConflictFile is a file both sides of a merge changed.
type ConflictFile struct {
	Path string `json:"path"`
	// Ours and Theirs are the pull request's and the base branch's
	// changes to the file since the merge base, as diffs (possibly cut).
	Ours   string `json:"ours,omitempty"`
	Theirs string `json:"theirs,omitempty"`
}

// ReviewComment is one inline review comment on the pull request's diff.
type ReviewComment struct {
	Author   string `json:"author"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	DiffHunk string `json:"diff_hunk,omitempty"`
	Body     string `json:"body"`
}

// validate reports a task that cannot make a meaningful instance prompt.
func (t Task) validate() error {
	var errs []error
	if t.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	if strings.TrimSpace(t.Title) == "" && strings.TrimSpace(t.Body) == "" && strings.TrimSpace(t.Instructions) == "" {
		errs = append(errs, errors.New("no title, body or instructions"))
	}
	if t.Issue < 0 {
		errs = append(errs, fmt.Errorf("issue number %d is negative", t.Issue))
	}
	if f := t.RepoInstructions; f != nil && f.Path == "" {
		errs = append(errs, errors.New("repository instructions without the file's path"))
	}
	if r := t.Revision; r != nil && r.PR <= 0 {
		errs = append(errs, fmt.Errorf("revision pull request number %d is not positive", r.PR))
	}
	if r := t.Revision; r != nil && r.Conflict != nil && r.Conflict.Base == "" {
		errs = append(errs, errors.New("conflict without its base branch"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid task: %w", err)
	}
	return nil
}
