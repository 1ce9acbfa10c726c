package ghfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The JSON the fake answers, in GitHub's shapes (the fields clients read).
// Callers hold f.mu.

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (f *Fake) userJSON(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{
		"login":    login,
		"id":       f.userID(login),
		"type":     typ,
		"html_url": f.srv.URL + "/" + login,
	}
}

func (rp *repo) json(f *Fake) map[string]any {
	return map[string]any{
		"id":             rp.id,
		"name":           rp.name,
		"full_name":      rp.fullName(),
		"owner":          f.userJSON(rp.owner),
		"private":        rp.private,
		"archived":       false,
		"default_branch": rp.defaultBranch,
		"html_url":       f.srv.URL + "/" + rp.fullName(),
		"url":            f.APIURL() + "repos/" + rp.fullName(),
		"clone_url":      f.cloneURL(rp),
	}
}

func (f *Fake) issueJSON(rp *repo, is *Issue) map[string]any {
	labels := []any{}
	for _, l := range is.Labels {
		labels = append(labels, map[string]any{"name": l})
	}
	kind := "issues"
	if is.IsPR {
		kind = "pull"
	}
	out := map[string]any{
		"id":         int64(is.Number) + rp.id*100000,
		"number":     is.Number,
		"title":      is.Title,
		"body":       is.Body,
		"state":      is.State,
		"locked":     is.Locked,
		"user":       f.userJSON(is.Author),
		"labels":     labels,
		"html_url":   fmt.Sprintf("%s/%s/%s/%d", f.srv.URL, rp.fullName(), kind, is.Number),
		"created_at": ts(is.CreatedAt),
	}
	if is.IsPR {
		out["pull_request"] = map[string]any{"url": fmt.Sprintf("%srepos/%s/pulls/%d", f.APIURL(), rp.fullName(), is.Number)}
	}
	return out
}

func (f *Fake) commentJSON(rp *repo, c *Comment) map[string]any {
	return map[string]any{
		"id":         c.ID,
		"body":       c.Body,
		"user":       f.userJSON(c.Author),
		"html_url":   fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", f.srv.URL, rp.fullName(), c.Number, c.ID),
		"issue_url":  fmt.Sprintf("%srepos/%s/issues/%d", f.APIURL(), rp.fullName(), c.Number),
		"created_at": ts(c.CreatedAt),
		"updated_at": ts(c.UpdatedAt),
	}
}

func (f *Fake) prJSON(rp *repo, pr PR) map[string]any {
	baseSHA, _ := f.branchSHA(rp, pr.Base)
	reviewers := []any{}
	for _, u := range pr.RequestedReviewers {
		reviewers = append(reviewers, f.userJSON(u))
	}
	return map[string]any{
		"id":       int64(pr.Number) + rp.id*100000,
		"node_id":  pr.NodeID,
		"number":   pr.Number,
		"title":    pr.Title,
		"body":     pr.Body,
		"state":    pr.State,
		"draft":    pr.Draft,
		"merged":   false,
		"user":     f.userJSON(pr.Author),
		"html_url": fmt.Sprintf("%s/%s/pull/%d", f.srv.URL, rp.fullName(), pr.Number),
		"url":      fmt.Sprintf("%srepos/%s/pulls/%d", f.APIURL(), rp.fullName(), pr.Number),
		"head": map[string]any{
			"ref": pr.Head, "sha": pr.HeadSHA, "label": rp.owner + ":" + pr.Head, "repo": rp.json(f),
		},
		"base": map[string]any{
			"ref": pr.Base, "sha": baseSHA, "label": rp.owner + ":" + pr.Base, "repo": rp.json(f),
		},
		"requested_reviewers": reviewers,
		"created_at":          ts(pr.CreatedAt),
	}
}

func (f *Fake) reviewCommentJSON(rp *repo, c *ReviewComment) map[string]any {
	out := map[string]any{
		"id":                     c.ID,
		"pull_request_review_id": c.ReviewID,
		"body":                   c.Body,
		"user":                   f.userJSON(c.Author),
		"path":                   c.Path,
		"line":                   c.Line,
		"side":                   c.Side,
		"diff_hunk":              c.DiffHunk,
		"commit_id":              c.CommitID,
		"html_url":               fmt.Sprintf("%s/%s/pull/%d#discussion_r%d", f.srv.URL, rp.fullName(), c.PR, c.ID),
		"created_at":             ts(c.CreatedAt),
	}
	if c.InReplyTo != 0 {
		out["in_reply_to_id"] = c.InReplyTo
	}
	return out
}

func (f *Fake) checkRunJSON(rp *repo, c *CheckRun) map[string]any {
	out := map[string]any{
		"id":          c.ID,
		"name":        c.Name,
		"head_sha":    c.HeadSHA,
		"status":      c.Status,
		"external_id": c.ExternalID,
		"details_url": c.DetailsURL,
		"html_url":    fmt.Sprintf("%s/%s/runs/%d", f.srv.URL, rp.fullName(), c.ID),
		"app":         map[string]any{"id": c.AppID, "slug": c.AppSlug, "name": c.AppName},
		"check_suite": map[string]any{"id": c.SuiteID},
		"output": map[string]any{"title": c.Title, "summary": c.Summary, "text": c.Text, "annotations_count": len(c.Annotations),
			"annotations_url": fmt.Sprintf("%srepos/%s/check-runs/%d/annotations", f.APIURL(), rp.fullName(), c.ID)},
		"started_at": ts(c.StartedAt),
	}
	if c.Conclusion != "" {
		out["conclusion"] = c.Conclusion
		out["completed_at"] = ts(c.CompletedAt)
	}
	return out
}

// page serves page/per_page pagination over n items: it sets the Link
// header GitHub sends and returns the slice bounds of the requested page.
func page(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	pg, err := strconv.Atoi(q.Get("page"))
	if err != nil || pg <= 0 {
		pg = 1
	}
	last := max((n+per-1)/per, 1)
	link := func(p int, rel string) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u := url.URL{Scheme: "http", Host: r.Host, Path: BasePath + r.URL.Path, RawQuery: v.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if pg > 1 {
		links = append(links, link(1, "first"), link(pg-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((pg-1)*per, n)
	hi = min(lo+per, n)
	return lo, hi
}

// pageJSON serves the requested page of all (see page) as the JSON
// values toJSON makes of its items.
func pageJSON[T any](w http.ResponseWriter, r *http.Request, all []T, toJSON func(T) any) []any {
	lo, hi := page(w, r, len(all))
	out := []any{}
	for _, item := range all[lo:hi] {
		out = append(out, toJSON(item))
	}
	return out
}
