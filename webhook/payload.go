package webhook

import (
	"github.com/agentfix/agentfix/jobs"
)

// The payload types below hold only the fields routing reads; decoding a
// 16 KB delivery into them costs less than half of decoding it into
// go-github's complete event types (BENCHMARKS.md, "Webhook intake"). Their
// JSON names are GitHub's; a test checks them against go-github's types on
// the real payloads in testdata/. Like go-github's ParseWebHook, decoding
// refuses malformed JSON and values of the wrong type, but only in the
// fields these types have.

// user is a payload's user: a sender, an issue or pull request author.
type user struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

// repository is a payload's repository.
type repository struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         user   `json:"owner"`
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
	Private       bool   `json:"private"`
}

// installationRef is a payload's installation; routing needs its id only.
type installationRef struct {
	ID int64 `json:"id"`
}

// envelope holds the fields every event routed here carries.
type envelope struct {
	Action       string          `json:"action"`
	Installation installationRef `json:"installation"`
	Repository   repository      `json:"repository"`
	Sender       user            `json:"sender"`
}

// comment is an issue comment, a review or an inline review comment.
type comment struct {
	ID                  int64  `json:"id"`
	Body                string `json:"body"`
	HTMLURL             string `json:"html_url"`
	PullRequestReviewID int64  `json:"pull_request_review_id"`
}

func toRepo(r repository) jobs.Repo {
	return jobs.Repo{
		ID:            r.ID,
		Owner:         r.Owner.Login,
		Name:          r.Name,
		FullName:      r.FullName,
		CloneURL:      r.CloneURL,
		DefaultBranch: r.DefaultBranch,
		Private:       r.Private,
	}
}

func toUser(u user) jobs.User {
	return jobs.User{Login: u.Login, ID: u.ID, Type: u.Type}
}

// isBot reports whether a user is a bot account; bots, the App itself
// included, never start work.
func (u user) isBot() bool { return u.Type == "Bot" }
