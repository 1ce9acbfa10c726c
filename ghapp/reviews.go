package ghapp

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// Review is a submitted pull request review.
type Review struct {
	ID     int64
	Author string
	Body   string
	// State is "COMMENTED", "APPROVED", "CHANGES_REQUESTED" or "DISMISSED".
	State   string
	HTMLURL string
}

// ListReviews returns the reviews of pull request number, oldest first.
func (c *Client) ListReviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.PullRequestReview, *github.Response, error) {
		return c.gh.PullRequests.ListReviews(ctx, repo.Owner, repo.Name, number, &opts)
	})
	if err != nil {
		return nil, fmt.Errorf("list reviews of %s#%d: %w", repo, number, err)
	}
	out := make([]Review, 0, len(all))
	for _, r := range all {
		out = append(out, Review{
			ID: r.GetID(), Author: r.GetUser().GetLogin(), Body: r.GetBody(), State: r.GetState(), HTMLURL: r.GetHTMLURL(),
		})
	}
	return out, nil
}
