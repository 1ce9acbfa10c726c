package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs"
)

// fixedCalc is calc.go with the bug fixed, as the bot's pull request has it.
var fixedCalc = strings.Replace(hFiles["calc.go"], "a - b", "a + b", 1)

// prPayload loads a pull request event payload from testdata and points it
// at the harness: repository, installation, pull request number and
// author, sender.
func (h *harness) prPayload(name string, pr int, sender string) map[string]any {
	h.t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		h.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		h.t.Fatal(err)
	}
	repo := m["repository"].(map[string]any)
	repo["full_name"], repo["name"], repo["clone_url"], repo["default_branch"] = hRepo, "widget", h.f.CloneURL(hRepo), "main"
	repo["owner"].(map[string]any)["login"] = "octo"
	m["installation"] = map[string]any{"id": hInstall}
	var author string
	for _, p := range h.prs() {
		if p.Number == pr {
			author = p.Author
		}
	}
	p := m["pull_request"].(map[string]any)
	p["number"] = pr
	user := p["user"].(map[string]any)
	user["login"], user["type"] = author, "User"
	if strings.HasSuffix(author, "[bot]") {
		user["type"] = "Bot"
	}
	s := m["sender"].(map[string]any)
	s["login"], s["id"], s["type"] = sender, h.userID(sender), "User"
	return m
}

// userID is a stable id per login: hUserID for the requester, so commits
// credit each person apart.
func (h *harness) userID(login string) int {
	if login == hRequester {
		return hUserID
	}
	return hUserID + len(login)*100 + int(login[0])
}

// review adds a review by author on pull request pr, with inline comments,
// and delivers its pull_request_review.submitted. It returns the review id
// and the comment ids.
func (h *harness) review(pr int, author, body string, comments ...ghfake.ReviewComment) (int64, []int64) {
	h.t.Helper()
	id, ids := h.f.AddReview(hRepo, pr, author, body, comments...)
	p := h.prPayload("pull_request_review.submitted.json", pr, author)
	rv := p["review"].(map[string]any)
	rv["id"], rv["body"], rv["html_url"] = id, body, fmt.Sprintf("%s/%s/pull/%d#pullrequestreview-%d", h.f.URL(), hRepo, pr, id)
	rv["user"].(map[string]any)["login"] = author
	h.deliver("pull_request_review", p)
	return id, ids
}

// reviseState returns the state of pull request pr's revise task ("" when
// there is none).
func (h *harness) reviseState(pr int) string {
	info, err := asynq.NewInspectorFromRedisClient(h.rdb).GetTaskInfo(jobs.QueueAgent, jobs.ReviseTaskID(hRepo, pr))
	if err != nil {
		return ""
	}
	return info.State.String()
}

// botReplies returns the bot's replies in inline threads of pull request
// pr.
func (h *harness) botReplies(pr int) []ghfake.ReviewComment {
	var out []ghfake.ReviewComment
	for _, c := range h.f.ReviewComments(hRepo, pr) {
		if c.Author == h.f.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

// prompt returns the text of every message of the model's request i (from
// 0): what the agent was told.
func (m *fakeModel) prompt(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.requests) {
		m.t.Fatalf("the model got %d requests, want request %d", len(m.requests), i)
	}
	var b strings.Builder
	msgs, _ := m.requests[i]["messages"].([]any)
	for _, msg := range msgs {
		switch c := msg.(map[string]any)["content"].(type) {
		case string:
			b.WriteString(c + "\n")
		case []any:
			for _, part := range c {
				if text, ok := part.(map[string]any)["text"].(string); ok {
					b.WriteString(text + "\n")
				}
			}
		}
	}
	return b.String()
}

// sandboxProcesses returns the command lines of the host's processes that
// start with prefix.
func sandboxProcesses(prefix string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if strings.HasPrefix(cmd, prefix) {
			out = append(out, cmd)
		}
	}
	return out
}
