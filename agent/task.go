package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Task is what a run works on: an issue of a repository, the requester's
// instructions, the repository's notes for the agent and, for a revision of
// a pull request the bot opened, the review to address.
//
// Issue, instruction and review text is untrusted; the instance prompt
// sanitises it (see SanitizeText). Notes come from the repository's config
// on its default branch and diffs are code: both are shown as they are.
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
	// Revision is set when the run revises an open pull request.
	Revision *Revision `json:"revision,omitempty"`
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
	if r := t.Revision; r != nil && r.PR <= 0 {
		errs = append(errs, fmt.Errorf("revision pull request number %d is not positive", r.PR))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid task: %w", err)
	}
	return nil
}
