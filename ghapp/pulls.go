package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"
)

// PR returns pull request number of repo.
func (c *Client) PR(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return PullRequest{}, fmt.Errorf("get pull request %s#%d: %w", repo, number, apiError(err))
	}
	return toPullRequest(p), nil
}

// FindPR returns the open pull request the bot opened from branch of repo
// (the bot recognises its pull requests by author, not by branch name), and
// whether there is one.
func (c *Client) FindPR(ctx context.Context, repo Repo, branch string) (PullRequest, bool, error) {
	bot, err := c.botLogin(ctx)
	if err != nil {
		return PullRequest{}, false, fmt.Errorf("find pull request of %s in %s: %w", branch, repo, err)
	}
	all, err := paginate(func(opts github.ListOptions) ([]*github.PullRequest, *github.Response, error) {
		return c.gh.PullRequests.List(ctx, repo.Owner, repo.Name, &github.PullRequestListOptions{
			State: "open", Head: repo.Owner + ":" + branch, ListOptions: opts,
		})
	})
	if err != nil {
		return PullRequest{}, false, fmt.Errorf("find pull request of %s in %s: %w", branch, repo, err)
	}
	for _, p := range all {
		if strings.EqualFold(p.GetUser().GetLogin(), bot) && p.GetHead().GetRef() == branch {
			return toPullRequest(p), true, nil
		}
	}
	return PullRequest{}, false, nil
}

// CreatePR opens a pull request from a branch of repo. When GitHub refuses
// a draft (422: drafts are not available for the repository) it returns
// ErrDraftUnsupported, and the caller may open a regular pull request
// titled "[incomplete] …". When an open pull request of the bot already
// exists for the branch — for example because a retried request had
// succeeded — it returns that one.
func (c *Client) CreatePR(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Create(repeatable(ctx), repo.Owner, repo.Name, &github.NewPullRequest{
		Title: &pr.Title, Body: &pr.Body, Head: &pr.Head, Base: &pr.Base, Draft: &pr.Draft,
	})
	if err == nil {
		return toPullRequest(p), nil
	}
	err = apiError(err)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity {
		switch {
		case pr.Draft && ae.mentions("draft pull requests are not supported"):
			return PullRequest{}, fmt.Errorf("open pull request %s from %s: %w (%w)", repo, pr.Head, ErrDraftUnsupported, err)
		case ae.mentions("a pull request already exists"):
			existing, ok, ferr := c.FindPR(ctx, repo, pr.Head)
			if ferr != nil {
				return PullRequest{}, fmt.Errorf("open pull request %s from %s: %w; then: %w", repo, pr.Head, err, ferr)
			}
			if ok {
				return existing, nil
			}
		}
	}
	return PullRequest{}, fmt.Errorf("open pull request %s from %s: %w", repo, pr.Head, err)
}

// UpdatePR changes the set fields of pull request number.
func (c *Client) UpdatePR(ctx context.Context, repo Repo, number int, u PullRequestUpdate) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Edit(ctx, repo.Owner, repo.Name, number, &github.PullRequest{
		Title: u.Title, Body: u.Body, State: u.State,
	})
	if err != nil {
		return PullRequest{}, fmt.Errorf("update pull request %s#%d: %w", repo, number, apiError(err))
	}
	return toPullRequest(p), nil
}

// markReadyMutation marks a draft pull request ready for review; the REST
// API cannot.
const markReadyMutation = `mutation($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) {
    pullRequest { isDraft }
  }
}`

// MarkReadyForReview marks pull request number ready for review, through
// GitHub's GraphQL API (the REST API cannot); a pull request that is not a
// draft is left as it is. The mutation is idempotent, so it is retried like
// the REST calls. GraphQL errors come back as a *GraphQLError.
func (c *Client) MarkReadyForReview(ctx context.Context, repo Repo, number int) error {
	p, _, err := c.gh.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return fmt.Errorf("mark pull request %s#%d ready for review: %w", repo, number, apiError(err))
	}
	if !p.GetDraft() {
		return nil
	}
	if p.GetNodeID() == "" {
		return fmt.Errorf("mark pull request %s#%d ready for review: GitHub gave no node id", repo, number)
	}
	var out struct {
		MarkPullRequestReadyForReview struct {
			PullRequest struct {
				IsDraft bool `json:"isDraft"`
			} `json:"pullRequest"`
		} `json:"markPullRequestReadyForReview"`
	}
	if err := c.graphQL(repeatable(ctx), markReadyMutation, map[string]any{"id": p.GetNodeID()}, &out); err != nil {
		return fmt.Errorf("mark pull request %s#%d ready for review: %w", repo, number, err)
	}
	if out.MarkPullRequestReadyForReview.PullRequest.IsDraft {
		return fmt.Errorf("mark pull request %s#%d ready for review: GitHub still reports a draft", repo, number)
	}
	return nil
}

// RequestReviewers asks users to review pull request number.
func (c *Client) RequestReviewers(ctx context.Context, repo Repo, number int, users ...string) error {
	if len(users) == 0 {
		return nil
	}
	_, _, err := c.gh.PullRequests.RequestReviewers(repeatable(ctx), repo.Owner, repo.Name, number, github.ReviewersRequest{Reviewers: users})
	if err != nil {
		return fmt.Errorf("request review of %s#%d from %q: %w", repo, number, users, apiError(err))
	}
	return nil
}

// ListReviewComments returns every inline review comment of pull request
// number, oldest first.
func (c *Client) ListReviewComments(ctx context.Context, repo Repo, number int) ([]ReviewComment, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.PullRequestComment, *github.Response, error) {
		return c.gh.PullRequests.ListComments(ctx, repo.Owner, repo.Name, number, &github.PullRequestListCommentsOptions{
			Sort: "created", Direction: "asc", ListOptions: opts,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list review comments of %s#%d: %w", repo, number, err)
	}
	return toReviewComments(all), nil
}

// ListReviewCommentsOf returns the inline comments of one review of pull
// request number.
func (c *Client) ListReviewCommentsOf(ctx context.Context, repo Repo, number int, reviewID int64) ([]ReviewComment, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.PullRequestComment, *github.Response, error) {
		return c.gh.PullRequests.ListReviewComments(ctx, repo.Owner, repo.Name, number, reviewID, &opts)
	})
	if err != nil {
		return nil, fmt.Errorf("list comments of review %d on %s#%d: %w", reviewID, repo, number, err)
	}
	return toReviewComments(all), nil
}

func toReviewComments(all []*github.PullRequestComment) []ReviewComment {
	out := make([]ReviewComment, 0, len(all))
	for _, c := range all {
		out = append(out, toReviewComment(c))
	}
	return out
}

// ReplyToReviewComment answers review comment id of pull request number in
// its thread. Like CreateComment, a body with a Marker is looked up before
// a retry after an ambiguous failure, and one without is not retried then.
func (c *Client) ReplyToReviewComment(ctx context.Context, repo Repo, number int, id int64, body string) (ReviewComment, error) {
	create := func(ctx context.Context) (ReviewComment, error) {
		rc, _, err := c.gh.PullRequests.CreateCommentInReplyTo(ctx, repo.Owner, repo.Name, number, body, id)
		if err != nil {
			return ReviewComment{}, err
		}
		return toReviewComment(rc), nil
	}
	var find func(context.Context) (ReviewComment, bool, error)
	if m := markerOf(body); m != "" {
		find = func(ctx context.Context) (ReviewComment, bool, error) {
			bot, err := c.botLogin(ctx)
			if err != nil {
				return ReviewComment{}, false, err
			}
			all, err := c.ListReviewComments(ctx, repo, number)
			if err != nil {
				return ReviewComment{}, false, err
			}
			for _, rc := range all {
				if strings.EqualFold(rc.Author, bot) && strings.Contains(rc.Body, m) {
					return rc, true, nil
				}
			}
			return ReviewComment{}, false, nil
		}
	}
	rc, err := createOnce(ctx, c, "reply to review comment", create, find)
	if err != nil {
		return ReviewComment{}, fmt.Errorf("reply to review comment %d on %s#%d: %w", id, repo, number, err)
	}
	return rc, nil
}
