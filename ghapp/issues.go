package ghapp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
)

// Permission returns user's access to repo. GitHub's "maintain" counts as
// write and "triage" as read; an unknown level is an error rather than a
// guess. GitHub answers 404 for a login that is no account (or is empty):
// that is PermissionNone, not an error to retry.
func (c *Client) Permission(ctx context.Context, repo Repo, user string) (Permission, error) {
	lvl, _, err := c.gh.Repositories.GetPermissionLevel(ctx, repo.Owner, repo.Name, user)
	if err != nil {
		err = apiError(err)
		if errors.Is(err, ErrNotFound) {
			return PermissionNone, nil
		}
		return "", fmt.Errorf("get permission of %s on %s: %w", user, repo, err)
	}
	// role_name is finer (maintain, triage, custom roles); permission is
	// the classic level GitHub derives from it.
	switch strings.ToLower(lvl.GetRoleName()) {
	case "maintain":
		return PermissionWrite, nil
	case "triage":
		return PermissionRead, nil
	}
	switch p := strings.ToLower(lvl.GetPermission()); p {
	case "admin":
		return PermissionAdmin, nil
	case "write", "maintain":
		return PermissionWrite, nil
	case "read", "triage":
		return PermissionRead, nil
	case "none":
		return PermissionNone, nil
	default:
		return "", fmt.Errorf("get permission of %s on %s: unknown permission %q", user, repo, p)
	}
}

// Issue returns issue (or pull request) number of repo.
func (c *Client) Issue(ctx context.Context, repo Repo, number int) (Issue, error) {
	i, _, err := c.gh.Issues.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return Issue{}, fmt.Errorf("get issue %s#%d: %w", repo, number, apiError(err))
	}
	return toIssue(i), nil
}

// CreateComment posts body on issue or pull request number. When body
// carries a Marker, a creation that failed ambiguously is looked up by that
// marker before it is retried, so the comment is never posted twice;
// without a marker it is not retried after such a failure.
func (c *Client) CreateComment(ctx context.Context, repo Repo, number int, body string) (Comment, error) {
	create := func(ctx context.Context) (Comment, error) {
		cm, _, err := c.gh.Issues.CreateComment(ctx, repo.Owner, repo.Name, number, &github.IssueComment{Body: &body})
		if err != nil {
			return Comment{}, err
		}
		return toComment(cm), nil
	}
	var find func(context.Context) (Comment, bool, error)
	if m := markerOf(body); m != "" {
		find = func(ctx context.Context) (Comment, bool, error) {
			return c.FindComment(ctx, repo, number, m)
		}
	}
	cm, err := createOnce(ctx, c, "create comment", create, find)
	if err != nil {
		return Comment{}, fmt.Errorf("comment on %s#%d: %w", repo, number, err)
	}
	return cm, nil
}

// EditComment replaces the body of comment id.
func (c *Client) EditComment(ctx context.Context, repo Repo, id int64, body string) (Comment, error) {
	cm, _, err := c.gh.Issues.EditComment(ctx, repo.Owner, repo.Name, id, &github.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, fmt.Errorf("edit comment %d on %s: %w", id, repo, apiError(err))
	}
	return toComment(cm), nil
}

// ListComments returns every comment of issue or pull request number,
// oldest first.
func (c *Client) ListComments(ctx context.Context, repo Repo, number int) ([]Comment, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.IssueComment, *github.Response, error) {
		return c.gh.Issues.ListComments(ctx, repo.Owner, repo.Name, number, &github.IssueListCommentsOptions{ListOptions: opts})
	})
	if err != nil {
		return nil, fmt.Errorf("list comments of %s#%d: %w", repo, number, err)
	}
	out := make([]Comment, 0, len(all))
	for _, cm := range all {
		out = append(out, toComment(cm))
	}
	return out, nil
}

// FindComment returns the oldest comment of the bot on issue or pull
// request number that contains marker (see Marker). Comments by anyone else
// are ignored, so a user cannot plant a marker for the bot to edit.
func (c *Client) FindComment(ctx context.Context, repo Repo, number int, marker string) (Comment, bool, error) {
	if marker == "" {
		return Comment{}, false, fmt.Errorf("find comment on %s#%d: empty marker", repo, number)
	}
	bot, err := c.botLogin(ctx)
	if err != nil {
		return Comment{}, false, fmt.Errorf("find comment on %s#%d: %w", repo, number, err)
	}
	all, err := c.ListComments(ctx, repo, number)
	if err != nil {
		return Comment{}, false, fmt.Errorf("find comment: %w", err)
	}
	for _, cm := range all {
		if strings.EqualFold(cm.Author, bot) && strings.Contains(cm.Body, marker) {
			return cm, true, nil
		}
	}
	return Comment{}, false, nil
}

// ReactToIssue adds reaction content (for example ReactionEyes) to issue or
// pull request number. Reacting twice is harmless: GitHub keeps one.
func (c *Client) ReactToIssue(ctx context.Context, repo Repo, number int, content string) error {
	if _, _, err := c.gh.Reactions.CreateIssueReaction(repeatable(ctx), repo.Owner, repo.Name, number, content); err != nil {
		return fmt.Errorf("react %s to %s#%d: %w", content, repo, number, apiError(err))
	}
	return nil
}

// ReactToComment adds reaction content to issue comment id.
func (c *Client) ReactToComment(ctx context.Context, repo Repo, id int64, content string) error {
	if _, _, err := c.gh.Reactions.CreateIssueCommentReaction(repeatable(ctx), repo.Owner, repo.Name, id, content); err != nil {
		return fmt.Errorf("react %s to comment %d on %s: %w", content, id, repo, apiError(err))
	}
	return nil
}

// ReactToReviewComment adds reaction content to pull request review comment
// id (reviews themselves have no reactions).
func (c *Client) ReactToReviewComment(ctx context.Context, repo Repo, id int64, content string) error {
	if _, _, err := c.gh.Reactions.CreatePullRequestCommentReaction(repeatable(ctx), repo.Owner, repo.Name, id, content); err != nil {
		return fmt.Errorf("react %s to review comment %d on %s: %w", content, id, repo, apiError(err))
	}
	return nil
}

// AddLabels adds labels to issue or pull request number; labels it already
// has are kept once.
func (c *Client) AddLabels(ctx context.Context, repo Repo, number int, labels ...string) error {
	if len(labels) == 0 {
		return nil
	}
	if _, _, err := c.gh.Issues.AddLabelsToIssue(repeatable(ctx), repo.Owner, repo.Name, number, labels); err != nil {
		return fmt.Errorf("add labels %q to %s#%d: %w", labels, repo, number, apiError(err))
	}
	return nil
}
