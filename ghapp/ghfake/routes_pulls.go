package ghfake

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (f *Fake) routePulls(mux *http.ServeMux) {
	const r = "/repos/{owner}/{repo}/pulls"
	mux.HandleFunc("GET "+r, f.repoAuth(f.listPRs))
	mux.HandleFunc("POST "+r, f.repoAuth(f.createPR))
	mux.HandleFunc("GET "+r+"/{number}", f.repoAuth(f.getPR))
	mux.HandleFunc("PATCH "+r+"/{number}", f.repoAuth(f.updatePR))
	mux.HandleFunc("POST "+r+"/{number}/requested_reviewers", f.repoAuth(f.requestReviewers))
	mux.HandleFunc("GET "+r+"/{number}/comments", f.repoAuth(f.listReviewComments))
	mux.HandleFunc("GET "+r+"/{number}/reviews", f.repoAuth(f.listReviews))
	mux.HandleFunc("GET "+r+"/{number}/reviews/{review}/comments", f.repoAuth(f.listReviewComments))
	mux.HandleFunc("POST "+r+"/{number}/comments", f.repoAuth(f.createReviewComment))
	mux.HandleFunc("POST "+r+"/{number}/comments/{id}/replies", f.repoAuth(f.replyToReviewComment))
}

// prOf finds the pull request of the {number} path value, or answers 404.
func prOf(w http.ResponseWriter, r *http.Request, rp *repo) *PR {
	n, err := strconv.Atoi(r.PathValue("number"))
	pr := rp.pulls[n]
	if err != nil || pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return pr
}

// listPRs serves GET …/pulls with GitHub's state (default open), head
// ("owner:branch") and base filters, newest first.
func (f *Fake) listPRs(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var all []PR
	for _, n := range slices.Backward(sortedKeys(rp.pulls)) {
		pr := rp.pulls[n]
		if state != "all" && pr.State != state {
			continue
		}
		if h := q.Get("head"); h != "" && !strings.EqualFold(h, rp.owner+":"+pr.Head) {
			continue
		}
		if b := q.Get("base"); b != "" && b != pr.Base {
			continue
		}
		all = append(all, f.prView(rp, pr))
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, all, func(pr PR) any { return f.prJSON(rp, pr) }))
}

// getPR serves GET …/pulls/{number}, with GitHub's mergeable and
// mergeable_state (see mergeability), which listings leave out.
func (f *Fake) getPR(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	if pr := prOf(w, r, rp); pr != nil {
		out := f.prJSON(rp, f.prView(rp, pr))
		out["mergeable"], out["mergeable_state"] = f.mergeability(rp, pr)
		writeJSON(w, http.StatusOK, out)
	}
}

// createPR serves POST …/pulls with GitHub's validations: the head branch
// exists (as "branch" or "owner:branch"), the base exists, there are commits
// between them, drafts are allowed, and no open pull request has the same
// head.
func (f *Fake) createPR(w http.ResponseWriter, r *http.Request, rp *repo, tok *token) {
	var req struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	head := req.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, rp.owner) {
			writeValidation(w, "PullRequest", "head", "invalid", "")
			return
		}
		head = branch
	}
	headSHA, okHead := f.branchSHA(rp, head)
	baseSHA, okBase := f.branchSHA(rp, req.Base)
	switch {
	case req.Title == "":
		writeValidation(w, "PullRequest", "title", "missing_field", "")
	case !okHead:
		writeValidation(w, "PullRequest", "head", "invalid", "")
	case !okBase:
		writeValidation(w, "PullRequest", "base", "invalid", "")
	case len([]rune(req.Body)) > maxBody:
		writeValidation(w, "PullRequest", "body", "custom", fmt.Sprintf("Body is too long (maximum is %d characters)", maxBody))
	case req.Draft && rp.noDrafts:
		writeValidation(w, "PullRequest", "", "custom", "Draft pull requests are not supported in this repository.")
	case slices.ContainsFunc(mapValues(rp.pulls), func(p *PR) bool { return p.State == "open" && p.Head == head }):
		writeValidation(w, "PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head))
	case !f.hasCommitsBetween(rp, baseSHA, headSHA):
		writeValidation(w, "PullRequest", "", "custom", fmt.Sprintf("No commits between %s and %s", req.Base, head))
	default:
		pr := f.openPR(rp, PR{Title: req.Title, Body: req.Body, Draft: req.Draft, Author: f.actor(tok), Head: head, Base: req.Base})
		writeJSON(w, http.StatusCreated, f.prJSON(rp, f.prView(rp, pr)))
	}
}

// hasCommitsBetween reports whether head has commits base lacks.
func (f *Fake) hasCommitsBetween(rp *repo, base, head string) bool {
	out, err := f.git(context.Background(), rp.dir, nil, nil, "rev-list", "--count", base+".."+head)
	return err == nil && strings.TrimSpace(string(out)) != "0"
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// updatePR serves PATCH …/pulls/{number}: title, body, state, base.
func (f *Fake) updatePR(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	var req struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		writeValidation(w, "PullRequest", "state", "invalid", "")
		return
	}
	if req.Body != nil && len([]rune(*req.Body)) > maxBody {
		writeValidation(w, "PullRequest", "body", "custom", fmt.Sprintf("Body is too long (maximum is %d characters)", maxBody))
		return
	}
	if req.Base != nil {
		if _, ok := f.branchSHA(rp, *req.Base); !ok {
			writeValidation(w, "PullRequest", "base", "invalid", "")
			return
		}
		pr.Base = *req.Base
	}
	is := rp.issues[pr.Number]
	if req.Title != nil {
		pr.Title, is.Title = *req.Title, *req.Title
	}
	if req.Body != nil {
		pr.Body, is.Body = *req.Body, *req.Body
	}
	if req.State != nil {
		pr.State, is.State = *req.State, *req.State
	}
	writeJSON(w, http.StatusOK, f.prJSON(rp, f.prView(rp, pr)))
}

// requestReviewers serves POST …/requested_reviewers: reviewers must be
// collaborators other than the author.
func (f *Fake) requestReviewers(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	var req struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.TeamReviewers) > 0 {
		writeValidation(w, "PullRequest", "", "custom", "Reviews may only be requested from collaborators. One or more of the teams you specified is not a collaborator of the "+rp.fullName()+" repository.")
		return
	}
	for _, u := range req.Reviewers {
		if strings.EqualFold(u, pr.Author) {
			writeValidation(w, "PullRequest", "", "custom", "Review cannot be requested from pull request author.")
			return
		}
		if classicPermission(rp.perms[strings.ToLower(u)]) == "none" {
			writeValidation(w, "PullRequest", "", "custom", "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+rp.fullName()+" repository.")
			return
		}
	}
	for _, u := range req.Reviewers {
		if !slices.ContainsFunc(pr.RequestedReviewers, func(x string) bool { return strings.EqualFold(x, u) }) {
			pr.RequestedReviewers = append(pr.RequestedReviewers, u)
		}
	}
	writeJSON(w, http.StatusCreated, f.prJSON(rp, f.prView(rp, pr)))
}

// listReviewComments serves the inline comments of a pull request, or of
// one of its reviews when the path names one.
func (f *Fake) listReviewComments(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	var review int64
	if s := r.PathValue("review"); s != "" {
		review, _ = strconv.ParseInt(s, 10, 64)
		if !slices.ContainsFunc(rp.reviews, func(rv *Review) bool { return rv.ID == review && rv.PR == pr.Number }) {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
	}
	var all []*ReviewComment
	for _, c := range rp.reviewComment {
		if c.PR == pr.Number && (review == 0 || c.ReviewID == review) {
			all = append(all, c)
		}
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, all, func(c *ReviewComment) any { return f.reviewCommentJSON(rp, c) }))
}

func (f *Fake) listReviews(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	var all []*Review
	for _, rv := range rp.reviews {
		if rv.PR == pr.Number {
			all = append(all, rv)
		}
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, all, func(rv *Review) any {
		return map[string]any{"id": rv.ID, "user": f.userJSON(rv.Author), "body": rv.Body, "state": rv.State}
	}))
}

// createReviewComment serves POST …/pulls/{number}/comments: a reply when
// in_reply_to is set (everything but the body is then ignored), else a new
// single-comment review on commit_id, path and line.
func (f *Fake) createReviewComment(w http.ResponseWriter, r *http.Request, rp *repo, tok *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	var req struct {
		Body      string `json:"body"`
		InReplyTo int64  `json:"in_reply_to"`
		CommitID  string `json:"commit_id"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		Side      string `json:"side"`
	}
	if !decodeBody(w, r, &req) || !checkBody(w, "PullRequestReviewComment", req.Body) {
		return
	}
	if req.InReplyTo != 0 {
		f.reply(w, rp, pr, tok, req.InReplyTo, req.Body)
		return
	}
	if req.Path == "" || req.Line <= 0 {
		writeValidation(w, "PullRequestReviewComment", "path", "missing_field", "")
		return
	}
	if sha, ok := f.resolve(rp, req.CommitID); !ok || sha != req.CommitID {
		writeValidation(w, "PullRequestReviewComment", "commit_id", "invalid", "")
		return
	}
	if req.Side == "" {
		req.Side = "RIGHT"
	}
	rv := &Review{ID: f.newID(), PR: pr.Number, Author: f.actor(tok), State: "COMMENTED"}
	rp.reviews = append(rp.reviews, rv)
	c := &ReviewComment{
		ID: f.newID(), PR: pr.Number, ReviewID: rv.ID, Author: rv.Author, Body: req.Body,
		Path: req.Path, Line: req.Line, Side: req.Side, CommitID: req.CommitID, CreatedAt: time.Now(),
	}
	rp.reviewComment = append(rp.reviewComment, c)
	writeJSON(w, http.StatusCreated, f.reviewCommentJSON(rp, c))
}

// replyToReviewComment serves POST …/comments/{id}/replies.
func (f *Fake) replyToReviewComment(w http.ResponseWriter, r *http.Request, rp *repo, tok *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var req struct {
		Body string `json:"body"`
	}
	if !decodeBody(w, r, &req) || !checkBody(w, "PullRequestReviewComment", req.Body) {
		return
	}
	f.reply(w, rp, pr, tok, id, req.Body)
}

// reply adds a reply to review comment id in its thread (the thread's first
// comment, for a reply to a reply).
func (f *Fake) reply(w http.ResponseWriter, rp *repo, pr *PR, tok *token, id int64, body string) {
	i := slices.IndexFunc(rp.reviewComment, func(c *ReviewComment) bool { return c.ID == id && c.PR == pr.Number })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	parent := rp.reviewComment[i]
	root := parent.ID
	if parent.InReplyTo != 0 {
		root = parent.InReplyTo
	}
	rv := &Review{ID: f.newID(), PR: pr.Number, Author: f.actor(tok), State: "COMMENTED"}
	rp.reviews = append(rp.reviews, rv)
	c := &ReviewComment{
		ID: f.newID(), PR: pr.Number, ReviewID: rv.ID, InReplyTo: root, Author: rv.Author, Body: body,
		Path: parent.Path, Line: parent.Line, Side: parent.Side, DiffHunk: parent.DiffHunk, CommitID: parent.CommitID,
		CreatedAt: time.Now(),
	}
	rp.reviewComment = append(rp.reviewComment, c)
	writeJSON(w, http.StatusCreated, f.reviewCommentJSON(rp, c))
}
