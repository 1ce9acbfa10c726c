package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoChanges is returned by Commit when the working copy equals the
// private HEAD.
var ErrNoChanges = errors.New("no changes to commit")

// Identity is a git author, committer or co-author.
type Identity struct {
	Name  string
	Email string
}

func (id Identity) validate() error {
	if strings.TrimSpace(id.Name) == "" || strings.TrimSpace(id.Email) == "" {
		return fmt.Errorf("identity %q <%s>: name and email are required", id.Name, id.Email)
	}
	if strings.ContainsAny(id.Name+id.Email, "<>\n\r\x00") {
		return fmt.Errorf("identity %q <%s>: contains <, > or a line break", id.Name, id.Email)
	}
	return nil
}

func (id Identity) String() string { return id.Name + " <" + id.Email + ">" }

// CommitOptions describe a commit of the working copy.
type CommitOptions struct {
	// Message is the commit message; required.
	Message string
	// Author is the bot's identity, also the committer. Required.
	Author Identity
	// CoAuthors are credited with Co-authored-by trailers (the requester).
	CoAuthors []Identity
	// Time is the author and committer date; zero means now.
	Time time.Time
}

// Commit records the whole working copy (as Diff sees it) as a commit in
// the private git dir whose parent is the private HEAD — the base commit
// for a job's first commit — and moves HEAD to it; after Merge or
// RecordMerge the merged commit is its second parent, and a merge is
// committed even when it changes no file. No hook runs. It returns the
// new commit id, or ErrNoChanges.
func (w *WorkTree) Commit(ctx context.Context, c CommitOptions) (string, error) {
	msg, err := commitMessage(c)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.stage(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	tree, err := w.git.text(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	parent, err := w.git.text(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	parentTree, err := w.git.text(ctx, "rev-parse", "--verify", "HEAD^{tree}")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if tree == parentTree && w.mergeHead == "" {
		return "", ErrNoChanges
	}
	when := c.Time
	if when.IsZero() {
		when = time.Now()
	}
	date := fmt.Sprintf("@%d %s", when.Unix(), when.Format("-0700"))
	env := []string{
		"GIT_AUTHOR_NAME=" + c.Author.Name, "GIT_AUTHOR_EMAIL=" + c.Author.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + c.Author.Name, "GIT_COMMITTER_EMAIL=" + c.Author.Email, "GIT_COMMITTER_DATE=" + date,
	}
	args := []string{"commit-tree", tree, "-p", parent}
	if w.mergeHead != "" {
		args = append(args, "-p", w.mergeHead)
	}
	out, err := w.git.run(ctx, []byte(msg), 1<<10, env, append(args, "-F", "-")...)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	commit := strings.TrimSpace(string(out))
	if _, err := w.git.text(ctx, "update-ref", "--no-deref", "HEAD", commit, parent); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	w.mergeHead, w.mergeTree = "", ""
	return commit, nil
}

// commitMessage returns the message with one Co-authored-by trailer per
// distinct co-author other than the author.
func commitMessage(c CommitOptions) (string, error) {
	if err := c.Author.validate(); err != nil {
		return "", fmt.Errorf("author: %w", err)
	}
	msg := strings.TrimSpace(c.Message)
	if msg == "" {
		return "", errors.New("empty commit message")
	}
	seen := map[string]bool{strings.ToLower(c.Author.Email): true}
	var trailers []string
	for _, co := range c.CoAuthors {
		if err := co.validate(); err != nil {
			return "", fmt.Errorf("co-author: %w", err)
		}
		if key := strings.ToLower(co.Email); !seen[key] {
			seen[key] = true
			trailers = append(trailers, "Co-authored-by: "+co.String())
		}
	}
	if len(trailers) > 0 {
		msg += "\n\n" + strings.Join(trailers, "\n")
	}
	return msg + "\n", nil
}
