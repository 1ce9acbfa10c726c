package ghfake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/proc"
)

// Delete, as the content of a path given to Commit, removes the file.
const Delete = "\x00ghfake: delete\x00"

const (
	// gitTimeout bounds one git command of the fake.
	gitTimeout = 2 * time.Minute
	// maxGitOutput caps what the fake reads from one git command.
	maxGitOutput = 64 << 20
)

// RepoOption changes how NewRepo creates a repository.
type RepoOption func(*repo)

// WithDefaultBranch names the default branch (default "main").
func WithDefaultBranch(name string) RepoOption {
	return func(rp *repo) { rp.defaultBranch = name }
}

// WithPrivate makes the repository private.
func WithPrivate() RepoOption {
	return func(rp *repo) { rp.private = true }
}

// NewRepo creates repository full ("owner/name"): a bare git repository
// whose default branch holds files (path → content) in one commit, or no
// commit when files is empty. It returns the clone URL, which the API
// reports as clone_url. Install the App on it to reach it. A name may
// start with a dot, like an organization's .github repository.
func (f *Fake) NewRepo(full string, files map[string]string, opts ...RepoOption) string {
	f.t.Helper()
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(owner, ".") || name == "." || name == ".." {
		f.fatalf("repository name %q: want owner/name", full)
	}
	rp := &repo{
		owner: owner, name: name, defaultBranch: "main",
		perms: map[string]string{}, issues: map[int]*Issue{}, pulls: map[int]*PR{}, mergeUnknown: map[int]int{},
	}
	for _, o := range opts {
		o(rp)
	}
	rp.dir = filepath.Join(f.root, owner, name+".git")
	f.mu.Lock()
	if f.repos[strings.ToLower(full)] != nil {
		f.mu.Unlock()
		f.fatalf("repository %q exists", full)
	}
	rp.id = f.newID()
	f.mu.Unlock()

	if err := os.MkdirAll(filepath.Dir(rp.dir), 0o755); err != nil {
		f.fatalf("create %s: %v", full, err)
	}
	ctx := context.Background()
	if _, err := f.git(ctx, "", nil, nil, "init", "--quiet", "--bare", "--initial-branch="+rp.defaultBranch, rp.dir); err != nil {
		f.fatalf("create %s: %v", full, err)
	}
	if _, err := f.git(ctx, rp.dir, nil, nil, "config", "http.receivepack", "true"); err != nil {
		f.fatalf("create %s: %v", full, err)
	}
	if len(files) > 0 {
		if _, err := f.commitFiles(ctx, rp, rp.defaultBranch, files, "Initial commit"); err != nil {
			f.fatalf("seed %s: %v", full, err)
		}
	}
	f.mu.Lock()
	f.repos[strings.ToLower(full)] = rp
	f.mu.Unlock()
	return f.cloneURL(rp)
}

// cloneURL is where the git server serves rp.
func (f *Fake) cloneURL(rp *repo) string {
	return f.srv.URL + "/git/" + rp.owner + "/" + rp.name + ".git"
}

// CloneURL returns repository full's clone URL.
func (f *Fake) CloneURL(full string) string {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cloneURL(f.repoOf(full))
}

// GitDir returns the path of repository full's bare git repository.
func (f *Fake) GitDir(full string) string {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.repoOf(full).dir
}

// Commit adds a commit with files (path → content, or Delete) on branch of
// repository full — created from the default branch when missing — as if
// someone pushed it, and returns the commit.
func (f *Fake) Commit(full, branch string, files map[string]string, message string) string {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	sha, err := f.commitFiles(context.Background(), rp, branch, files, message)
	if err != nil {
		f.fatalf("commit to %s %s: %v", full, branch, err)
	}
	return sha
}

// commitFiles writes one commit on branch with a private index, without a
// work tree, by the fake's own identity.
func (f *Fake) commitFiles(ctx context.Context, rp *repo, branch string, files map[string]string, message string) (string, error) {
	return f.commitFilesAs(ctx, rp, branch, files, message, nil)
}

// commitFilesAs is commitFiles with identity, GIT_AUTHOR_* and
// GIT_COMMITTER_* variables, over the fake's own.
func (f *Fake) commitFilesAs(ctx context.Context, rp *repo, branch string, files map[string]string, message string, identity []string) (string, error) {
	tmp, err := os.MkdirTemp(f.home, "index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	parent, ok := f.branchSHA(rp, branch)
	if !ok {
		parent, _ = f.branchSHA(rp, rp.defaultBranch)
	}
	if parent != "" {
		if _, err := f.git(ctx, rp.dir, env, nil, "read-tree", parent); err != nil {
			return "", err
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if files[p] == Delete {
			if _, err := f.git(ctx, rp.dir, env, nil, "update-index", "--force-remove", "--", p); err != nil {
				return "", err
			}
			continue
		}
		blob, err := f.git(ctx, rp.dir, env, []byte(files[p]), "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		info := "100644," + strings.TrimSpace(string(blob)) + "," + p
		if _, err := f.git(ctx, rp.dir, env, nil, "update-index", "--add", "--cacheinfo", info); err != nil {
			return "", err
		}
	}
	tree, err := f.git(ctx, rp.dir, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree)), "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	out, err := f.git(ctx, rp.dir, append(env, identity...), nil, args...)
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	if _, err := f.git(ctx, rp.dir, nil, nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return "", err
	}
	return sha, nil
}

// Branch returns the commit branch of repository full points at, and
// whether the branch exists.
func (f *Fake) Branch(full, branch string) (string, bool) {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	return f.branchSHA(rp, branch)
}

// ReadFile returns the file at path in ref (a branch, tag or commit) of
// repository full.
func (f *Fake) ReadFile(full, ref, path string) (string, error) {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	sha, ok := f.resolve(rp, ref)
	if !ok {
		return "", fmt.Errorf("%s: no ref %q", full, ref)
	}
	out, err := f.git(context.Background(), rp.dir, nil, nil, "cat-file", "blob", sha+":"+path)
	return string(out), err
}

// Files returns every file of ref in repository full, path → content.
func (f *Fake) Files(full, ref string) map[string]string {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	sha, ok := f.resolve(rp, ref)
	if !ok {
		f.fatalf("%s: no ref %q", full, ref)
	}
	ctx := context.Background()
	list, err := f.git(ctx, rp.dir, nil, nil, "ls-tree", "-r", "-z", "--name-only", sha)
	if err != nil {
		f.fatalf("list %s at %s: %v", full, ref, err)
	}
	out := map[string]string{}
	for _, p := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		data, err := f.git(ctx, rp.dir, nil, nil, "cat-file", "blob", sha+":"+p)
		if err != nil {
			f.fatalf("read %s at %s: %v", p, ref, err)
		}
		out[p] = string(data)
	}
	return out
}

// Commit describes a commit of a repository.
type Commit struct {
	SHA         string
	Parents     []string
	AuthorName  string
	AuthorEmail string
	Message     string
}

// HeadCommit returns the commit ref of repository full points at.
func (f *Fake) HeadCommit(full, ref string) Commit {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	sha, ok := f.resolve(rp, ref)
	if !ok {
		f.fatalf("%s: no ref %q", full, ref)
	}
	out, err := f.git(context.Background(), rp.dir, nil, nil, "log", "-1", "--format=%H%x00%P%x00%an%x00%ae%x00%B", sha)
	if err != nil {
		f.fatalf("read commit %s of %s: %v", ref, full, err)
	}
	parts := strings.SplitN(string(out), "\x00", 5)
	if len(parts) != 5 {
		f.fatalf("read commit %s of %s: unexpected git log output", ref, full)
	}
	return Commit{
		SHA: parts[0], Parents: strings.Fields(parts[1]),
		AuthorName: parts[2], AuthorEmail: parts[3], Message: strings.TrimRight(parts[4], "\n"),
	}
}

// branchSHA returns the commit of branch in rp.
func (f *Fake) branchSHA(rp *repo, branch string) (string, bool) {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return "", false
	}
	return f.revParse(rp, "refs/heads/"+branch+"^{commit}")
}

// resolve returns the commit ref (a branch, tag or sha) names in rp.
func (f *Fake) resolve(rp *repo, ref string) (string, bool) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", false
	}
	return f.revParse(rp, ref+"^{commit}")
}

func (f *Fake) revParse(rp *repo, spec string) (string, bool) {
	out, err := f.git(context.Background(), rp.dir, nil, nil, "rev-parse", "--verify", "--quiet", spec)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// git runs one git command in dir ("" for none) with the fake's
// environment plus env, a timeout, capped output, and its process group
// killed on cancel.
func (f *Fake) git(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := proc.Command(ctx, nil, append([]string{f.gitBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(f.gitEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := &capped{max: maxGitOutput}
	stderr := &capped{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	if stdout.over {
		return nil, fmt.Errorf("git %s: output over %d bytes", args[0], maxGitOutput)
	}
	return stdout.Bytes(), nil
}

// gitEnv is the environment of every git command of the fake: no system or
// user configuration, no prompts, a fixed identity.
func (f *Fake) gitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + f.home,
		"XDG_CONFIG_HOME=" + f.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=ghfake", "GIT_AUTHOR_EMAIL=ghfake@example.invalid",
		"GIT_COMMITTER_NAME=ghfake", "GIT_COMMITTER_EMAIL=ghfake@example.invalid",
	}
}

// capped is a buffer that keeps at most max bytes and notes the excess.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// gitHandler serves the repositories over git's smart HTTP protocol with
// git http-backend, to clients authenticated as x-access-token with a
// current installation token that reaches the repository.
func (f *Fake) gitHandler() http.Handler {
	backend := &cgi.Handler{
		Path: f.gitBin,
		Args: []string{"http-backend"},
		Root: "/git",
		Dir:  f.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + f.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"HOME=" + f.home,
			"GIT_CONFIG_NOSYSTEM=1",
		},
		Stderr: logWriter{f},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/git/"), "/")
		name, tail, _ := strings.Cut(rest, "/")
		key := strings.ToLower(owner + "/" + strings.TrimSuffix(name, ".git"))
		user, pass, hasAuth := r.BasicAuth()
		f.mu.Lock()
		rp := f.repos[key]
		tok := f.tokens[pass]
		current := hasAuth && user == "x-access-token" && tok != nil && time.Now().Before(tok.expires)
		allowed := current && rp != nil && f.grants(tok, key, time.Now())
		f.mu.Unlock()
		switch {
		case !current:
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token. Password authentication is not supported for Git operations.", http.StatusUnauthorized)
			return
		case !allowed:
			http.Error(w, "Repository not found.", http.StatusNotFound)
			return
		}
		req := r.Clone(r.Context())
		req.Header.Del("Authorization")
		req.URL.Path = "/git/" + rp.owner + "/" + rp.name + ".git/" + tail
		if req.ContentLength < 0 || len(req.TransferEncoding) > 0 {
			// CGI needs a length: spool a chunked body (a large push).
			spool, err := f.spool(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			defer os.Remove(spool.Name())
			defer spool.Close()
			st, err := spool.Stat()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			req.Body, req.ContentLength, req.TransferEncoding = spool, st.Size(), nil
		}
		backend.ServeHTTP(w, req)
	})
}

// spool copies body to a temporary file, rewound.
func (f *Fake) spool(body io.Reader) (*os.File, error) {
	tmp, err := os.CreateTemp(f.home, "body-")
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(tmp, io.LimitReader(body, 2<<30)); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// logWriter sends git http-backend's stderr to the test log.
type logWriter struct{ f *Fake }

func (l logWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		l.f.logf("git http-backend: %s", s)
	}
	return len(p), nil
}
