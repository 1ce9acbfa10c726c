package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBody is GitHub's limit on issue and comment bodies, in characters.
const maxBody = 65536

// reactionContents are the reactions GitHub accepts.
var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

func (f *Fake) routeIssues(mux *http.ServeMux) {
	const r = "/repos/{owner}/{repo}"
	mux.HandleFunc("GET "+r+"/collaborators/{user}/permission", f.repoAuth(f.getPermission))
	mux.HandleFunc("GET "+r+"/issues/{number}", f.repoAuth(f.getIssue))
	mux.HandleFunc("GET "+r+"/issues/{number}/comments", f.repoAuth(f.listComments))
	mux.HandleFunc("POST "+r+"/issues/{number}/comments", f.repoAuth(f.createComment))
	mux.HandleFunc("PATCH "+r+"/issues/comments/{id}", f.repoAuth(f.editComment))
	mux.HandleFunc("POST "+r+"/issues/{number}/reactions", f.repoAuth(f.react("issue")))
	mux.HandleFunc("POST "+r+"/issues/comments/{id}/reactions", f.repoAuth(f.react("comment")))
	mux.HandleFunc("POST "+r+"/pulls/comments/{id}/reactions", f.repoAuth(f.react("review_comment")))
	mux.HandleFunc("POST "+r+"/issues/{number}/labels", f.repoAuth(f.addLabels))
}

// actor is the login an installation token acts as.
func (f *Fake) actor(*token) string { return f.BotLogin() }

// classicPermission maps a role to the permission field GitHub reports.
func classicPermission(role string) string {
	switch role {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	case "triage", "read":
		return "read"
	default:
		return "none"
	}
}

func (f *Fake) getPermission(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	user := r.PathValue("user")
	role := rp.perms[strings.ToLower(user)]
	if role == "" {
		role = "none"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"permission": classicPermission(role),
		"role_name":  role,
		"user":       f.userJSON(user),
	})
}

// issueOf finds the issue of the {number} path value, or answers 404.
func issueOf(w http.ResponseWriter, r *http.Request, rp *repo) *Issue {
	n, err := strconv.Atoi(r.PathValue("number"))
	is := rp.issues[n]
	if err != nil || is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return is
}

func (f *Fake) getIssue(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	if is := issueOf(w, r, rp); is != nil {
		writeJSON(w, http.StatusOK, f.issueJSON(rp, is))
	}
}

func (f *Fake) listComments(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	is := issueOf(w, r, rp)
	if is == nil {
		return
	}
	var all []*Comment
	for _, c := range rp.comments {
		if c.Number == is.Number {
			all = append(all, c)
		}
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, all, func(c *Comment) any { return f.commentJSON(rp, c) }))
}

// checkBody answers 422 for a missing or too long body.
func checkBody(w http.ResponseWriter, resource, body string) bool {
	switch {
	case body == "":
		writeValidation(w, resource, "body", "missing_field", "")
		return false
	case utf8.RuneCountInString(body) > maxBody:
		writeValidation(w, resource, "body", "custom", fmt.Sprintf("Body is too long (maximum is %d characters)", maxBody))
		return false
	}
	return true
}

func (f *Fake) createComment(w http.ResponseWriter, r *http.Request, rp *repo, tok *token) {
	is := issueOf(w, r, rp)
	if is == nil {
		return
	}
	var req struct {
		Body string `json:"body"`
	}
	if !decodeBody(w, r, &req) || !checkBody(w, "IssueComment", req.Body) {
		return
	}
	if is.Locked {
		writeError(w, http.StatusForbidden, "Unable to create comment because issue is locked.")
		return
	}
	c := f.addComment(rp, is.Number, f.actor(tok), req.Body)
	writeJSON(w, http.StatusCreated, f.commentJSON(rp, c))
}

// commentOf finds the comment of the {id} path value, or answers 404.
func commentOf(w http.ResponseWriter, r *http.Request, rp *repo) *Comment {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	i := slices.IndexFunc(rp.comments, func(c *Comment) bool { return c.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return rp.comments[i]
}

func (f *Fake) editComment(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	c := commentOf(w, r, rp)
	if c == nil {
		return
	}
	var req struct {
		Body string `json:"body"`
	}
	if !decodeBody(w, r, &req) || !checkBody(w, "IssueComment", req.Body) {
		return
	}
	c.Body, c.UpdatedAt = req.Body, time.Now()
	c.Edits++
	writeJSON(w, http.StatusOK, f.commentJSON(rp, c))
}

// react serves the reactions endpoints of one kind of subject: a reaction
// exists once per user and content (200 for a repeat, 201 when created).
func (f *Fake) react(subject string) repoHandler {
	return func(w http.ResponseWriter, r *http.Request, rp *repo, tok *token) {
		var id int64
		switch subject {
		case "issue":
			is := issueOf(w, r, rp)
			if is == nil {
				return
			}
			id = int64(is.Number)
		case "comment":
			c := commentOf(w, r, rp)
			if c == nil {
				return
			}
			id = c.ID
		case "review_comment":
			id, _ = strconv.ParseInt(r.PathValue("id"), 10, 64)
			if !slices.ContainsFunc(rp.reviewComment, func(c *ReviewComment) bool { return c.ID == id }) {
				writeError(w, http.StatusNotFound, "Not Found")
				return
			}
		}
		var req struct {
			Content string `json:"content"`
		}
		if !decodeBody(w, r, &req) {
			return
		}
		if !slices.Contains(reactionContents, req.Content) {
			writeValidation(w, "Reaction", "content", "invalid", "")
			return
		}
		user := f.actor(tok)
		status := http.StatusOK
		i := slices.IndexFunc(rp.reactions, func(x *Reaction) bool {
			return x.Subject == subject && x.SubjectID == id && x.Content == req.Content && x.User == user
		})
		if i < 0 {
			rp.reactions = append(rp.reactions, &Reaction{ID: f.newID(), Subject: subject, SubjectID: id, Content: req.Content, User: user})
			i, status = len(rp.reactions)-1, http.StatusCreated
		}
		x := rp.reactions[i]
		writeJSON(w, status, map[string]any{"id": x.ID, "content": x.Content, "user": f.userJSON(x.User)})
	}
}

// addLabels serves POST …/issues/{number}/labels, whose body is a JSON
// array of names or {"labels": [...]}.
func (f *Fake) addLabels(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	is := issueOf(w, r, rp)
	if is == nil {
		return
	}
	var raw json.RawMessage
	if !decodeBody(w, r, &raw) {
		return
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			writeValidation(w, "Label", "labels", "invalid", "")
			return
		}
		names = obj.Labels
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			writeValidation(w, "Label", "name", "invalid", "")
			return
		}
		if !slices.Contains(is.Labels, n) {
			is.Labels = append(is.Labels, n)
		}
	}
	out := []any{}
	for _, l := range is.Labels {
		out = append(out, map[string]any{"name": l})
	}
	writeJSON(w, http.StatusOK, out)
}

// Labels returns the labels of issue or pull request number.
func (f *Fake) Labels(repo string, number int) []string {
	return f.Issue(repo, number).Labels
}
