package ghapp

import (
	"time"

	"github.com/google/go-github/v66/github"
)

// Permission is a user's access to a repository as the permission API
// reports it, reduced to four levels.
type Permission string

// Permission levels. GitHub's "maintain" role counts as write and "triage"
// as read.
const (
	PermissionAdmin Permission = "admin"
	PermissionWrite Permission = "write"
	PermissionRead  Permission = "read"
	PermissionNone  Permission = "none"
)

// CanWrite reports whether p allows starting work: write or admin.
func (p Permission) CanWrite() bool {
	return p == PermissionAdmin || p == PermissionWrite
}

// Reactions the bot uses (GitHub accepts +1, -1, laugh, confused, heart,
// hooray, rocket and eyes).
const (
	ReactionEyes     = "eyes"
	ReactionRocket   = "rocket"
	ReactionConfused = "confused"
	ReactionPlusOne  = "+1"
)

// Issue is an issue or pull request seen as an issue.
type Issue struct {
	Number  int
	Title   string
	Body    string
	State   string // "open" or "closed"
	Locked  bool
	Author  string
	Labels  []string
	HTMLURL string
	// IsPullRequest is set when the number is a pull request's.
	IsPullRequest bool
}

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID        int64
	Body      string
	Author    string
	HTMLURL   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PullRequest is a pull request.
type PullRequest struct {
	Number  int
	Title   string
	Body    string
	State   string // "open" or "closed"
	Draft   bool
	Merged  bool
	Author  string
	HTMLURL string
	// Head is the branch name and HeadSHA its commit; HeadRepo is the
	// "owner/name" the branch lives in.
	Head, HeadSHA, HeadRepo string
	// Base is the branch the pull request merges into, and BaseSHA the
	// commit GitHub last compared it with.
	Base, BaseSHA      string
	RequestedReviewers []string
	// Mergeable is whether GitHub found the pull request mergeable, nil
	// while it has not computed that yet (it does so in the background,
	// after the head or base moved; reading the pull request starts it).
	// MergeableState is GitHub's word for it: "dirty" when it conflicts
	// with its base, "clean", "behind", "blocked", "unstable", "draft",
	// "has_hooks", or "unknown" while it is computed.
	Mergeable      *bool
	MergeableState string
}

// NewPullRequest is what CreatePR opens. Head is a branch of the same
// repository.
type NewPullRequest struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// PullRequestUpdate changes the set fields of a pull request.
type PullRequestUpdate struct {
	Title *string
	Body  *string
	// State is "open" or "closed".
	State *string
}

// ReviewComment is an inline comment of a pull request review.
type ReviewComment struct {
	ID       int64
	ReviewID int64
	// InReplyTo is the comment this one answers, 0 for a thread's first.
	InReplyTo int64
	Body      string
	Author    string
	Path      string
	// Line is the line in the new file (0 when the comment is on a line
	// that no longer exists); StartLine starts a multi-line comment.
	Line, StartLine int
	Side            string
	DiffHunk        string
	CommitID        string
	HTMLURL         string
}

// Repository is what the bot needs to know of a repository.
type Repository struct {
	ID            int64
	Owner, Name   string
	FullName      string
	DefaultBranch string
	// CloneURL is the HTTPS clone URL as GitHub gives it (GitHub Enterprise
	// and test servers included).
	CloneURL string
	HTMLURL  string
	Private  bool
	Archived bool
}

// CheckRun is a check run: one of the App's, or any App's on a commit
// (ListCheckRuns).
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	Status     string // "queued", "in_progress" or "completed"
	Conclusion string
	ExternalID string
	HTMLURL    string
	DetailsURL string
	// SuiteID is its check suite.
	SuiteID int64
	// AppID, AppSlug and AppName are the App that made it; GitHub
	// Actions' slug is ActionsAppSlug, and then ID is the job's id.
	AppID            int64
	AppSlug, AppName string
	// Title, Summary and Text are its output; Annotations counts the
	// annotations it has.
	Title, Summary, Text   string
	Annotations            int
	StartedAt, CompletedAt time.Time
}

// NewCheckRun is what CreateCheckRun creates. ExternalID (the run id) makes
// creation idempotent: a retry finds the check run by it.
type NewCheckRun struct {
	Name, HeadSHA, ExternalID string
	// Status is "queued" or "in_progress" (default "queued").
	Status     string
	DetailsURL string
	// Title and Summary, when Title is set, are the run's output.
	Title, Summary string
}

// CheckRunUpdate changes a check run. Empty fields are left unchanged;
// setting Conclusion completes the run.
type CheckRunUpdate struct {
	// Name is the check run's name (GitHub requires it on update).
	Name       string
	Status     string
	Conclusion string // success, failure, neutral, cancelled, skipped, timed_out, action_required
	DetailsURL string
	// Title, Summary and Text, when Title is set, replace the output.
	Title, Summary, Text string
}

// HookDelivery is one delivery of the App's webhook.
type HookDelivery struct {
	ID   int64
	GUID string
	// Status is GitHub's text ("OK", "Invalid HTTP Response: 503", …) and
	// StatusCode the answer's HTTP status (0 when none came).
	Status         string
	StatusCode     int
	Event, Action  string
	DeliveredAt    time.Time
	Redelivery     bool
	InstallationID int64
	RepositoryID   int64
}

func toIssue(i *github.Issue) Issue {
	out := Issue{
		Number:        i.GetNumber(),
		Title:         i.GetTitle(),
		Body:          i.GetBody(),
		State:         i.GetState(),
		Locked:        i.GetLocked(),
		Author:        i.GetUser().GetLogin(),
		HTMLURL:       i.GetHTMLURL(),
		IsPullRequest: i.IsPullRequest(),
	}
	for _, l := range i.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

func toComment(c *github.IssueComment) Comment {
	return Comment{
		ID:        c.GetID(),
		Body:      c.GetBody(),
		Author:    c.GetUser().GetLogin(),
		HTMLURL:   c.GetHTMLURL(),
		CreatedAt: c.GetCreatedAt().Time,
		UpdatedAt: c.GetUpdatedAt().Time,
	}
}

func toPullRequest(p *github.PullRequest) PullRequest {
	out := PullRequest{
		Number:         p.GetNumber(),
		Title:          p.GetTitle(),
		Body:           p.GetBody(),
		State:          p.GetState(),
		Draft:          p.GetDraft(),
		Merged:         p.GetMerged(),
		Author:         p.GetUser().GetLogin(),
		HTMLURL:        p.GetHTMLURL(),
		Head:           p.GetHead().GetRef(),
		HeadSHA:        p.GetHead().GetSHA(),
		HeadRepo:       p.GetHead().GetRepo().GetFullName(),
		Base:           p.GetBase().GetRef(),
		BaseSHA:        p.GetBase().GetSHA(),
		Mergeable:      p.Mergeable,
		MergeableState: p.GetMergeableState(),
	}
	for _, u := range p.RequestedReviewers {
		out.RequestedReviewers = append(out.RequestedReviewers, u.GetLogin())
	}
	return out
}

func toReviewComment(c *github.PullRequestComment) ReviewComment {
	return ReviewComment{
		ID:        c.GetID(),
		ReviewID:  c.GetPullRequestReviewID(),
		InReplyTo: c.GetInReplyTo(),
		Body:      c.GetBody(),
		Author:    c.GetUser().GetLogin(),
		Path:      c.GetPath(),
		Line:      c.GetLine(),
		StartLine: c.GetStartLine(),
		Side:      c.GetSide(),
		DiffHunk:  c.GetDiffHunk(),
		CommitID:  c.GetCommitID(),
		HTMLURL:   c.GetHTMLURL(),
	}
}

func toRepository(r *github.Repository) Repository {
	return Repository{
		ID:            r.GetID(),
		Owner:         r.GetOwner().GetLogin(),
		Name:          r.GetName(),
		FullName:      r.GetFullName(),
		DefaultBranch: r.GetDefaultBranch(),
		CloneURL:      r.GetCloneURL(),
		HTMLURL:       r.GetHTMLURL(),
		Private:       r.GetPrivate(),
		Archived:      r.GetArchived(),
	}
}

func toCheckRun(r *github.CheckRun) CheckRun {
	return CheckRun{
		ID:          r.GetID(),
		Name:        r.GetName(),
		HeadSHA:     r.GetHeadSHA(),
		Status:      r.GetStatus(),
		Conclusion:  r.GetConclusion(),
		ExternalID:  r.GetExternalID(),
		HTMLURL:     r.GetHTMLURL(),
		DetailsURL:  r.GetDetailsURL(),
		SuiteID:     r.GetCheckSuite().GetID(),
		AppID:       r.GetApp().GetID(),
		AppSlug:     r.GetApp().GetSlug(),
		AppName:     r.GetApp().GetName(),
		Title:       r.GetOutput().GetTitle(),
		Summary:     r.GetOutput().GetSummary(),
		Text:        r.GetOutput().GetText(),
		Annotations: r.GetOutput().GetAnnotationsCount(),
		StartedAt:   r.GetStartedAt().Time,
		CompletedAt: r.GetCompletedAt().Time,
	}
}

func toHookDelivery(d *github.HookDelivery) HookDelivery {
	return HookDelivery{
		ID:             d.GetID(),
		GUID:           d.GetGUID(),
		Status:         d.GetStatus(),
		StatusCode:     d.GetStatusCode(),
		Event:          d.GetEvent(),
		Action:         d.GetAction(),
		DeliveredAt:    d.GetDeliveredAt().Time,
		Redelivery:     d.GetRedelivery(),
		InstallationID: d.GetInstallationID(),
		RepositoryID:   d.GetRepositoryID(),
	}
}
