package config

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RepoFileGetter reads files from the default branch of repositories.
//
// GetFile returns the content of path on the default branch of owner/repo
// and true; false (and no error) when the repository or the file does not
// exist or the App may not read it; an error for anything else (network,
// rate limit), which the caller may retry. It must read the default branch
// only: configuration on other branches never applies.
type RepoFileGetter interface {
	GetFile(ctx context.Context, owner, repo, path string) ([]byte, bool, error)
}

// maxRepoChain is the most files one configuration may be built from: the
// repository's (or the organization's) file and the files it extends.
const maxRepoChain = 5

// orgRepo is the repository holding an organization's defaults.
const orgRepo = ".github"

// LoadRepo returns the configuration of owner/repo: RepoFile from its
// default branch or, when it has none, from the default branch of the
// owner's .github repository; then the files named by _extends, each
// relative to the owner of the file naming it, up to maxRepoChain files,
// without cycles. Keys of a file override the same keys of the file it
// extends (whole values: lists are replaced, not joined). Without any file
// the result is DefaultRepo.
//
// An invalid configuration is a *RepoError listing every problem of the
// first invalid file; a failure to read is a plain wrapped error.
func LoadRepo(ctx context.Context, g RepoFileGetter, owner, repo string) (RepoSettings, error) {
	own := repoSource{owner: owner, repo: repo, path: RepoFile}
	src := own
	data, found, err := src.get(ctx, g)
	if err != nil {
		return RepoSettings{}, err
	}
	if !found && !strings.EqualFold(repo, orgRepo) {
		src = repoSource{owner: owner, repo: orgRepo, path: RepoFile}
		if data, found, err = src.get(ctx, g); err != nil {
			return RepoSettings{}, err
		}
	}
	if !found {
		return DefaultRepo(), nil
	}
	var docs []*repoFileDoc
	var sources []repoSource
	for {
		doc, problems := parseRepoFile(src.display(own), owner, data)
		if len(problems) > 0 {
			return RepoSettings{}, &RepoError{Problems: problems}
		}
		docs, sources = append(docs, doc), append(sources, src)
		if doc.extends == "" {
			break
		}
		next, _ := parseExtends(nil, doc.extends, src.owner) // valid: parseRepoFile checked it
		problem := func(format string, args ...any) error {
			return &RepoError{Problems: []RepoProblem{{File: doc.name, Line: doc.extendsLine, Key: extendsKey, Msg: fmt.Sprintf(format, args...)}}}
		}
		for _, s := range sources {
			if s.same(next) {
				return RepoSettings{}, problem("makes a cycle: %s", chainText(append(sources, next)))
			}
		}
		if len(docs) == maxRepoChain {
			return RepoSettings{}, problem("makes the chain longer than %d files: %s", maxRepoChain, chainText(append(sources, next)))
		}
		if data, found, err = next.get(ctx, g); err != nil {
			return RepoSettings{}, err
		}
		if !found {
			return RepoSettings{}, problem("%s does not exist, or the App cannot read it (is the App installed on %s/%s?)", next, next.owner, next.repo)
		}
		src = next
	}
	r := DefaultRepo()
	for i := len(docs) - 1; i >= 0; i-- {
		docs[i].apply(&r)
		r.Sources = append(r.Sources, sources[i].String())
	}
	r.Extends = docs[0].extends
	return r, nil
}

// repoSource is a configuration file in a repository.
type repoSource struct {
	owner, repo, path string
}

// String renders the source as "owner/repo:path".
func (s repoSource) String() string { return s.owner + "/" + s.repo + ":" + s.path }

// same reports whether s and o are one file (owner and repository names
// are case-insensitive on GitHub, paths are not).
func (s repoSource) same(o repoSource) bool {
	return strings.EqualFold(s.owner, o.owner) && strings.EqualFold(s.repo, o.repo) && s.path == o.path
}

// display names s in problems: RepoFile for the repository's own file.
func (s repoSource) display(own repoSource) string {
	if s.same(own) {
		return RepoFile
	}
	return s.String()
}

func (s repoSource) get(ctx context.Context, g RepoFileGetter) ([]byte, bool, error) {
	data, found, err := g.GetFile(ctx, s.owner, s.repo, s.path)
	if err != nil {
		return nil, false, fmt.Errorf("read configuration %s: %w", s, err)
	}
	return data, found, nil
}

func chainText(chain []repoSource) string {
	names := make([]string, len(chain))
	for i, s := range chain {
		names[i] = s.String()
	}
	return strings.Join(names, " → ")
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// parseExtends parses an _extends value, "[owner/]repo[:path]" as probot
// reads it: the owner defaults to owner, the path to RepoFile. n, when not
// nil, places the error.
func parseExtends(n *yaml.Node, s, owner string) (repoSource, error) {
	fail := func(why string) (repoSource, error) {
		msg := fmt.Sprintf("must be repo, owner/repo or owner/repo:path/to/file.yml (%s), got %q", why, s)
		if n == nil {
			return repoSource{}, fmt.Errorf("%s", msg)
		}
		return repoSource{}, nodeErrorf(n, "%s", msg)
	}
	name, file, hasPath := strings.Cut(s, ":")
	src := repoSource{owner: owner, repo: name, path: RepoFile}
	if o, r, ok := strings.Cut(name, "/"); ok {
		src.owner, src.repo = o, r
		if !loginName.MatchString(o) {
			return fail("the owner is not a GitHub login")
		}
	}
	if !repoName.MatchString(src.repo) || src.repo == "." || src.repo == ".." {
		return fail("the repository name is not valid")
	}
	if hasPath {
		clean := path.Clean(file)
		if file == "" || clean != file || path.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fail("the path must be a clean path inside the repository")
		}
		if ext := path.Ext(file); ext != ".yml" && ext != ".yaml" {
			return fail("the path must end in .yml or .yaml")
		}
		src.path = file
	}
	return src, nil
}
