package ghapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// CreateCheckRun creates a check run of the App on a commit of repo. A
// creation that failed ambiguously is looked up by name, commit and
// ExternalID before it is retried; without ExternalID it is not retried
// then.
func (c *Client) CreateCheckRun(ctx context.Context, repo Repo, r NewCheckRun) (CheckRun, error) {
	if r.Name == "" || r.HeadSHA == "" {
		return CheckRun{}, fmt.Errorf("create check run on %s: name and head sha are required", repo)
	}
	opts := github.CreateCheckRunOptions{Name: r.Name, HeadSHA: r.HeadSHA}
	if r.ExternalID != "" {
		opts.ExternalID = &r.ExternalID
	}
	if r.Status != "" {
		opts.Status = &r.Status
	}
	if r.DetailsURL != "" {
		opts.DetailsURL = &r.DetailsURL
	}
	if r.Title != "" {
		opts.Output = &github.CheckRunOutput{Title: &r.Title, Summary: &r.Summary}
	}
	create := func(ctx context.Context) (CheckRun, error) {
		cr, _, err := c.gh.Checks.CreateCheckRun(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return CheckRun{}, err
		}
		return toCheckRun(cr), nil
	}
	var find func(context.Context) (CheckRun, bool, error)
	if r.ExternalID != "" {
		find = func(ctx context.Context) (CheckRun, bool, error) {
			return c.findCheckRun(ctx, repo, r.HeadSHA, r.Name, r.ExternalID)
		}
	}
	cr, err := createOnce(ctx, c, "create check run", create, find)
	if err != nil {
		return CheckRun{}, fmt.Errorf("create check run %q on %s@%s: %w", r.Name, repo, r.HeadSHA, err)
	}
	return cr, nil
}

// findCheckRun looks for the App's check run named name with externalID on
// commit sha.
func (c *Client) findCheckRun(ctx context.Context, repo Repo, sha, name, externalID string) (CheckRun, bool, error) {
	appID := c.app.id
	filter := "all"
	for page := 1; page <= maxPages; {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, &github.ListCheckRunsOptions{
			CheckName: &name, AppID: &appID, Filter: &filter,
			ListOptions: github.ListOptions{PerPage: 100, Page: page},
		})
		if err != nil {
			return CheckRun{}, false, fmt.Errorf("list check runs of %s@%s: %w", repo, sha, apiError(err))
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == externalID {
				return toCheckRun(cr), true, nil
			}
		}
		if resp.NextPage == 0 {
			return CheckRun{}, false, nil
		}
		page = resp.NextPage
	}
	return CheckRun{}, false, errors.New("check run listing has too many pages")
}

// UpdateCheckRun changes check run id; a Conclusion completes it.
func (c *Client) UpdateCheckRun(ctx context.Context, repo Repo, id int64, u CheckRunUpdate) (CheckRun, error) {
	if u.Name == "" {
		return CheckRun{}, fmt.Errorf("update check run %d on %s: name is required", id, repo)
	}
	opts := github.UpdateCheckRunOptions{Name: u.Name}
	if u.Status != "" {
		opts.Status = &u.Status
	}
	if u.Conclusion != "" {
		opts.Conclusion = &u.Conclusion
		opts.CompletedAt = &github.Timestamp{Time: c.app.policy.now()}
	}
	if u.DetailsURL != "" {
		opts.DetailsURL = &u.DetailsURL
	}
	if u.Title != "" {
		opts.Output = &github.CheckRunOutput{Title: &u.Title, Summary: &u.Summary}
		if u.Text != "" {
			opts.Output.Text = &u.Text
		}
	}
	cr, _, err := c.gh.Checks.UpdateCheckRun(ctx, repo.Owner, repo.Name, id, opts)
	if err != nil {
		return CheckRun{}, fmt.Errorf("update check run %d on %s: %w", id, repo, apiError(err))
	}
	return toCheckRun(cr), nil
}
