package ghfake

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// repo is one repository's state.
type repo struct {
	id            int64
	owner, name   string
	private       bool
	defaultBranch string
	dir           string // the bare repository
	noDrafts      bool
	perms         map[string]string // role by lower-case login
	nextNumber    int
	issues        map[int]*Issue
	pulls         map[int]*PR
	comments      []*Comment
	reactions     []*Reaction
	reviews       []*Review
	reviewComment []*ReviewComment
	checkRuns     []*CheckRun
	checkSuites   []*CheckSuite
	jobs          []*Job
	reruns        []int64     // workflow runs whose failed jobs were re-run
	mergeUnknown  map[int]int // pull request → GETs still answered "unknown"
}

func (rp *repo) fullName() string { return rp.owner + "/" + rp.name }

// Issue is an issue (or the issue side of a pull request).
type Issue struct {
	Number int
	Title  string
	Body   string
	// State is "open" or "closed".
	State  string
	Locked bool
	Author string
	Labels []string
	// IsPR is set for a pull request's number.
	IsPR      bool
	CreatedAt time.Time
}

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID        int64
	Number    int
	Body      string
	Author    string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Edits counts the PATCHes it received.
	Edits int
}

// PR is a pull request. HeadSHA is read from the git repository when the
// fake reports it; NodeID, its GraphQL id, is set when it opens.
type PR struct {
	Number             int
	NodeID             string
	Title              string
	Body               string
	State              string
	Draft              bool
	Author             string
	Head, Base         string
	HeadSHA            string
	RequestedReviewers []string
	CreatedAt          time.Time
}

// Reaction is a reaction on an issue, an issue comment or a review comment.
type Reaction struct {
	ID int64
	// Subject is "issue", "comment" or "review_comment", and SubjectID the
	// issue number or the comment id.
	Subject   string
	SubjectID int64
	Content   string
	User      string
}

// Review is a pull request review.
type Review struct {
	ID     int64
	PR     int
	Author string
	Body   string
	// State is "COMMENTED", "APPROVED" or "CHANGES_REQUESTED".
	State string
}

// ReviewComment is an inline comment of a review.
type ReviewComment struct {
	ID        int64
	PR        int
	ReviewID  int64
	InReplyTo int64
	Author    string
	Body      string
	Path      string
	Line      int
	Side      string
	DiffHunk  string
	CommitID  string
	CreatedAt time.Time
}

// CheckRun is a check run: the fake App's own (made through the API) or
// another App's (AddCheckRun, AddJob).
type CheckRun struct {
	ID                     int64
	Name                   string
	HeadSHA                string
	Status                 string
	Conclusion             string
	ExternalID             string
	DetailsURL             string
	Title, Summary, Text   string
	StartedAt, CompletedAt time.Time
	// AppID, AppSlug and AppName are the App that made it (the fake App's
	// by default).
	AppID            int64
	AppSlug, AppName string
	// SuiteID is its check suite, made when the first run of an App on a
	// commit (for GitHub Actions, of a workflow run) is.
	SuiteID     int64
	Annotations []Annotation
	// Superseded is set on a job's check run once the job was re-run: the
	// latest attempt's run is listed instead.
	Superseded bool
	Updates    int
}

// repoOf returns the repository named full or fails the test. Callers hold
// f.mu.
func (f *Fake) repoOf(full string) *repo {
	f.t.Helper()
	rp := f.repos[strings.ToLower(full)]
	if rp == nil {
		f.fatalf("no repository %q", full)
	}
	return rp
}

// userID returns a stable id for login. Callers hold f.mu.
func (f *Fake) userID(login string) int64 {
	key := strings.ToLower(login)
	if id, ok := f.users[key]; ok {
		return id
	}
	id := f.newID()
	f.users[key] = id
	return id
}

// SetPermission gives user a role on repo: "admin", "maintain", "write",
// "triage", "read" or "none". Users without one have "none".
func (f *Fake) SetPermission(repo, user, role string) {
	f.t.Helper()
	if !slices.Contains([]string{"admin", "maintain", "write", "triage", "read", "none"}, role) {
		f.fatalf("unknown role %q", role)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repoOf(repo).perms[strings.ToLower(user)] = role
}

// DisableDrafts makes repo refuse draft pull requests with GitHub's 422, as
// private repositories on plans without drafts do.
func (f *Fake) DisableDrafts(repo string) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repoOf(repo).noDrafts = true
}

// AddIssue opens an issue on repo (State defaults to "open") and returns its
// number.
func (f *Fake) AddIssue(repo string, is Issue) int {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	rp.nextNumber++
	is.Number = rp.nextNumber
	is.IsPR = false
	if is.State == "" {
		is.State = "open"
	}
	if is.Author == "" {
		is.Author = "octocat"
	}
	is.Labels = slices.Clone(is.Labels)
	is.CreatedAt = time.Now()
	rp.issues[is.Number] = &is
	return is.Number
}

// CloseIssue closes issue (or pull request) number of repo.
func (f *Fake) CloseIssue(repo string, number int) {
	f.setIssue(repo, number, func(is *Issue) { is.State = "closed" })
}

// LockIssue locks the conversation of issue number of repo.
func (f *Fake) LockIssue(repo string, number int) {
	f.setIssue(repo, number, func(is *Issue) { is.Locked = true })
}

func (f *Fake) setIssue(repo string, number int, set func(*Issue)) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	is := rp.issues[number]
	if is == nil {
		f.fatalf("no issue %s#%d", repo, number)
	}
	set(is)
	if pr := rp.pulls[number]; pr != nil {
		pr.State = is.State
	}
}

// Issue returns issue (or pull request) number of repo.
func (f *Fake) Issue(repo string, number int) Issue {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.repoOf(repo).issues[number]
	if is == nil {
		f.fatalf("no issue %s#%d", repo, number)
	}
	out := *is
	out.Labels = slices.Clone(is.Labels)
	return out
}

// AddComment posts a comment by author on issue or pull request number and
// returns its id.
func (f *Fake) AddComment(repo string, number int, author, body string) int64 {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	if rp.issues[number] == nil {
		f.fatalf("no issue %s#%d", repo, number)
	}
	return f.addComment(rp, number, author, body).ID
}

// addComment appends a comment. Callers hold f.mu.
func (f *Fake) addComment(rp *repo, number int, author, body string) *Comment {
	now := time.Now()
	c := &Comment{ID: f.newID(), Number: number, Body: body, Author: author, CreatedAt: now, UpdatedAt: now}
	rp.comments = append(rp.comments, c)
	return c
}

// Comments returns the comments of issue or pull request number, oldest
// first.
func (f *Fake) Comments(repo string, number int) []Comment {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Comment
	for _, c := range f.repoOf(repo).comments {
		if c.Number == number {
			out = append(out, *c)
		}
	}
	return out
}

// Reactions returns every reaction on repo's issues and comments, oldest
// first.
func (f *Fake) Reactions(repo string) []Reaction {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Reaction
	for _, r := range f.repoOf(repo).reactions {
		out = append(out, *r)
	}
	return out
}

// AddPR opens a pull request by pr.Author from branch pr.Head (which must
// exist) into pr.Base (default: the default branch) and returns its number;
// for pull requests the bot did not open.
func (f *Fake) AddPR(repo string, pr PR) int {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	if pr.Base == "" {
		pr.Base = rp.defaultBranch
	}
	if _, ok := f.branchSHA(rp, pr.Head); !ok {
		f.fatalf("add pull request: no branch %q in %s", pr.Head, repo)
	}
	if pr.Author == "" {
		pr.Author = "octocat"
	}
	return f.openPR(rp, pr).Number
}

// openPR records a new open pull request and its issue. Callers hold f.mu.
func (f *Fake) openPR(rp *repo, pr PR) *PR {
	rp.nextNumber++
	pr.Number = rp.nextNumber
	pr.NodeID = "PR_" + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d", rp.id, pr.Number))
	pr.State = "open"
	pr.CreatedAt = time.Now()
	pr.HeadSHA = ""
	pr.RequestedReviewers = slices.Clone(pr.RequestedReviewers)
	rp.pulls[pr.Number] = &pr
	rp.issues[pr.Number] = &Issue{
		Number: pr.Number, Title: pr.Title, Body: pr.Body, State: "open",
		Author: pr.Author, IsPR: true, CreatedAt: pr.CreatedAt,
	}
	return &pr
}

// PRs returns repo's pull requests by number, with their head commits as
// the git repository has them now.
func (f *Fake) PRs(repo string) []PR {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	var out []PR
	for _, n := range sortedKeys(rp.pulls) {
		out = append(out, f.prView(rp, rp.pulls[n]))
	}
	return out
}

// prView copies pr with its current head commit. Callers hold f.mu.
func (f *Fake) prView(rp *repo, pr *PR) PR {
	out := *pr
	out.RequestedReviewers = slices.Clone(pr.RequestedReviewers)
	if sha, ok := f.branchSHA(rp, pr.Head); ok {
		out.HeadSHA = sha
	}
	return out
}

// AddReview adds a submitted review by author on pull request number, with
// inline comments (their ID, PR, ReviewID and Author are set by the fake),
// and returns the review id and the comment ids.
func (f *Fake) AddReview(repo string, number int, author, body string, comments ...ReviewComment) (int64, []int64) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	if rp.pulls[number] == nil {
		f.fatalf("no pull request %s#%d", repo, number)
	}
	rv := &Review{ID: f.newID(), PR: number, Author: author, Body: body, State: "COMMENTED"}
	rp.reviews = append(rp.reviews, rv)
	var ids []int64
	for _, c := range comments {
		c.ID, c.PR, c.ReviewID, c.Author, c.CreatedAt = f.newID(), number, rv.ID, author, time.Now()
		if c.Side == "" {
			c.Side = "RIGHT"
		}
		rp.reviewComment = append(rp.reviewComment, &c)
		ids = append(ids, c.ID)
	}
	return rv.ID, ids
}

// ReviewComments returns the inline review comments of pull request number,
// oldest first.
func (f *Fake) ReviewComments(repo string, number int) []ReviewComment {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ReviewComment
	for _, c := range f.repoOf(repo).reviewComment {
		if c.PR == number {
			out = append(out, *c)
		}
	}
	return out
}

// CheckRuns returns repo's check runs, oldest first.
func (f *Fake) CheckRuns(repo string) []CheckRun {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []CheckRun
	for _, c := range f.repoOf(repo).checkRuns {
		out = append(out, *c)
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
