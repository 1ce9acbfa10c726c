package ghfake

import (
	"context"
	"encoding/base64"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (f *Fake) routeRepos(mux *http.ServeMux) {
	const r = "/repos/{owner}/{repo}"
	mux.HandleFunc("GET "+r, f.repoAuth(f.getRepo))
	mux.HandleFunc("GET "+r+"/contents/{path...}", f.repoAuth(f.getContents))
	mux.HandleFunc("GET "+r+"/git/ref/{ref...}", f.repoAuth(f.getRef))
	mux.HandleFunc("POST "+r+"/check-runs", f.repoAuth(f.createCheckRun))
	mux.HandleFunc("PATCH "+r+"/check-runs/{id}", f.repoAuth(f.updateCheckRun))
	mux.HandleFunc("GET "+r+"/commits/{ref}/check-runs", f.repoAuth(f.listCheckRuns))
}

func (f *Fake) getRepo(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	writeJSON(w, http.StatusOK, rp.json(f))
}

// getContents serves a file (base64, wrapped at 60 columns like GitHub) or
// a directory listing at ?ref= (default: the default branch).
func (f *Fake) getContents(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = rp.defaultBranch
	}
	sha, ok := f.resolve(rp, ref)
	if !ok {
		writeError(w, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	p := strings.Trim(r.PathValue("path"), "/")
	ctx := context.Background()
	spec := sha + ":" + p
	typ, err := f.git(ctx, rp.dir, nil, nil, "cat-file", "-t", spec)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	switch strings.TrimSpace(string(typ)) {
	case "blob":
		data, err := f.git(ctx, rp.dir, nil, nil, "cat-file", "blob", spec)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		blob, _ := f.revParse(rp, spec)
		writeJSON(w, http.StatusOK, map[string]any{
			"type": "file", "encoding": "base64", "size": len(data),
			"name": path.Base(p), "path": p, "sha": blob,
			"content": wrap60(base64.StdEncoding.EncodeToString(data)),
		})
	case "tree":
		list, err := f.git(ctx, rp.dir, nil, nil, "ls-tree", "-z", spec)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		out := []any{}
		for _, e := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
			meta, name, ok := strings.Cut(e, "\t")
			fields := strings.Fields(meta)
			if !ok || len(fields) != 3 {
				continue
			}
			kind := "file"
			if fields[1] == "tree" {
				kind = "dir"
			}
			out = append(out, map[string]any{"type": kind, "name": name, "path": path.Join(p, name), "sha": fields[2]})
		}
		writeJSON(w, http.StatusOK, out)
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// wrap60 breaks s into lines of 60 characters, as GitHub sends base64.
func wrap60(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	b.WriteByte('\n')
	return b.String()
}

// getRef serves GET …/git/ref/heads/{branch} (and tags/…).
func (f *Fake) getRef(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	ref := r.PathValue("ref")
	if !strings.HasPrefix(ref, "heads/") && !strings.HasPrefix(ref, "tags/") {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	sha, ok := f.revParse(rp, "refs/"+ref+"^{commit}")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"ref":    "refs/" + ref,
		"object": map[string]any{"sha": sha, "type": "commit"},
	})
}

// checkRunRequest is the body of creating or updating a check run.
type checkRunRequest struct {
	Name       *string `json:"name"`
	HeadSHA    string  `json:"head_sha"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	ExternalID *string `json:"external_id"`
	DetailsURL *string `json:"details_url"`
	Output     *struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
}

var (
	checkStatuses    = []string{"queued", "in_progress", "completed"}
	checkConclusions = []string{"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required", "stale"}
)

// apply validates req and sets its fields on c; it answers 422 and returns
// false for invalid values.
func (req *checkRunRequest) apply(w http.ResponseWriter, c *CheckRun) bool {
	if req.Status != nil && !slices.Contains(checkStatuses, *req.Status) {
		writeValidation(w, "CheckRun", "status", "invalid", "")
		return false
	}
	if req.Conclusion != nil && !slices.Contains(checkConclusions, *req.Conclusion) {
		writeValidation(w, "CheckRun", "conclusion", "invalid", "")
		return false
	}
	if req.Name != nil && *req.Name != "" {
		c.Name = *req.Name
	}
	if req.Status != nil {
		c.Status = *req.Status
	}
	if req.ExternalID != nil {
		c.ExternalID = *req.ExternalID
	}
	if req.DetailsURL != nil {
		c.DetailsURL = *req.DetailsURL
	}
	if req.Output != nil {
		c.Title, c.Summary, c.Text = req.Output.Title, req.Output.Summary, req.Output.Text
	}
	if req.Conclusion != nil {
		c.Conclusion, c.Status, c.CompletedAt = *req.Conclusion, "completed", time.Now()
	}
	if c.Status == "completed" && c.Conclusion == "" {
		writeValidation(w, "CheckRun", "conclusion", "missing_field", "")
		return false
	}
	return true
}

// createCheckRun serves POST …/check-runs; the head commit must exist.
func (f *Fake) createCheckRun(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	var req checkRunRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Name == nil || *req.Name == "" {
		writeValidation(w, "CheckRun", "name", "missing_field", "")
		return
	}
	sha, ok := f.resolve(rp, req.HeadSHA)
	if !ok || sha != req.HeadSHA {
		writeValidation(w, "CheckRun", "head_sha", "invalid", "No commit found for SHA: "+req.HeadSHA)
		return
	}
	c := &CheckRun{ID: f.newID(), HeadSHA: sha, Status: "queued", AppID: f.appID, AppSlug: f.slug, AppName: f.slug, StartedAt: time.Now()}
	if !req.apply(w, c) {
		return
	}
	c.SuiteID = f.suiteOf(rp, sha, CheckApp{ID: f.appID, Slug: f.slug, Name: f.slug}, "").ID
	rp.checkRuns = append(rp.checkRuns, c)
	writeJSON(w, http.StatusCreated, f.checkRunJSON(rp, c))
}

// updateCheckRun serves PATCH …/check-runs/{id}.
func (f *Fake) updateCheckRun(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	i := slices.IndexFunc(rp.checkRuns, func(c *CheckRun) bool { return c.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var req checkRunRequest
	if !decodeBody(w, r, &req) {
		return
	}
	c := *rp.checkRuns[i]
	if !req.apply(w, &c) {
		return
	}
	c.Updates++
	*rp.checkRuns[i] = c
	writeJSON(w, http.StatusOK, f.checkRunJSON(rp, &c))
}

// listCheckRuns serves GET …/commits/{ref}/check-runs with the check_name,
// app_id and filter filters: filter=latest, the default, lists the latest
// attempt of each job and leaves out those a re-run superseded; all lists
// every one.
func (f *Fake) listCheckRuns(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	sha, ok := f.resolve(rp, r.PathValue("ref"))
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	q := r.URL.Query()
	var all []*CheckRun
	for _, c := range rp.checkRuns {
		if c.HeadSHA != sha {
			continue
		}
		if n := q.Get("check_name"); n != "" && n != c.Name {
			continue
		}
		if a := q.Get("app_id"); a != "" && a != strconv.FormatInt(c.AppID, 10) {
			continue
		}
		if c.Superseded && q.Get("filter") != "all" {
			continue
		}
		all = append(all, c)
	}
	runs := pageJSON(w, r, all, func(c *CheckRun) any { return f.checkRunJSON(rp, c) })
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "check_runs": runs})
}
