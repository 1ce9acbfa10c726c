package workspace

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// systemPath is the PATH of the sandbox after Options.ExtraPath and the Go
// toolchain, before the per-job tool directories under HOME.
var systemPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// sandboxEnv returns the whole environment of a sandboxed command: an
// allow-list built from scratch, never the worker's own environment. home is
// the cache directory as the command sees it. With setPath false the
// container image keeps its own PATH.
func sandboxEnv(home string, pathDirs []string, setPath bool, extra map[string]string) []string {
	vars := map[string]string{
		"HOME":                          home,
		"USER":                          "agentfix",
		"LANG":                          "C.UTF-8",
		"TERM":                          "dumb",
		"TMPDIR":                        "/tmp",
		"PAGER":                         "cat",
		"GIT_PAGER":                     "cat",
		"MANPAGER":                      "cat",
		"EDITOR":                        "true",
		"VISUAL":                        "true",
		"GIT_EDITOR":                    "true",
		"GIT_TERMINAL_PROMPT":           "0",
		"GIT_AUTHOR_NAME":               "agentfix",
		"GIT_AUTHOR_EMAIL":              "agentfix@localhost",
		"GIT_COMMITTER_NAME":            "agentfix",
		"GIT_COMMITTER_EMAIL":           "agentfix@localhost",
		"CI":                            "1",
		"NO_COLOR":                      "1",
		"DEBIAN_FRONTEND":               "noninteractive",
		"XDG_CACHE_HOME":                path.Join(home, ".cache"),
		"XDG_CONFIG_HOME":               path.Join(home, ".config"),
		"GOCACHE":                       path.Join(home, ".cache", "go-build"),
		"GOPATH":                        path.Join(home, "go"),
		"GOMODCACHE":                    path.Join(home, "go", "pkg", "mod"),
		"npm_config_cache":              path.Join(home, ".npm"),
		"YARN_CACHE_FOLDER":             path.Join(home, ".cache", "yarn"),
		"PIP_CACHE_DIR":                 path.Join(home, ".cache", "pip"),
		"PIP_DISABLE_PIP_VERSION_CHECK": "1",
		"PIP_NO_INPUT":                  "1",
		"PYTHONDONTWRITEBYTECODE":       "1",
		"CARGO_HOME":                    path.Join(home, ".cargo"),
	}
	if setPath {
		dirs := slices.Concat(pathDirs, systemPath, []string{
			path.Join(home, "go", "bin"), path.Join(home, ".local", "bin"), path.Join(home, ".cargo", "bin"),
		})
		vars["PATH"] = strings.Join(slices.Compact(dirs), ":")
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// goRoot returns the root of the Go toolchain on the worker's PATH, or ""
// when there is none. Sandboxes on the worker's file system put its bin
// directory on PATH (a toolchain in /usr/local/go is not on the default
// PATH) and bwrap mounts it when it lies outside the system directories.
func goRoot() string {
	bin, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	bin, err = filepath.EvalSymlinks(bin)
	if err != nil {
		return ""
	}
	root := filepath.Dir(filepath.Dir(bin))
	if _, err := os.Stat(filepath.Join(root, "src", "runtime")); err != nil {
		return ""
	}
	return root
}
