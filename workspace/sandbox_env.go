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
	vars := allowList(home)
	if setPath {
		vars["PATH"] = strings.Join(slices.Compact(slices.Concat(pathDirs, systemPath, toolDirs(home))), ":")
	}
	return envList(vars, extra)
}

// defaultImagePath is the PATH of an image whose config sets none:
// Docker's default.
const defaultImagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageEnv returns the whole environment of a command in an image: the
// image's own variables (image, "KEY=VALUE"), overridden by the allow-list
// of sandboxEnv (HOME, the caches, GOPATH…), except PATH, which is
// pathDirs, the image's PATH (defaultImagePath when it has none) and the
// per-job tool directories under home; then extra.
func imageEnv(image []string, home string, pathDirs []string, extra map[string]string) []string {
	vars := make(map[string]string, len(image))
	for _, kv := range image {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			vars[k] = v
		}
	}
	imagePath := vars["PATH"]
	if imagePath == "" {
		imagePath = defaultImagePath
	}
	for k, v := range allowList(home) {
		vars[k] = v
	}
	var dirs []string
	for _, d := range slices.Concat(pathDirs, strings.Split(imagePath, ":"), toolDirs(home)) {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	vars["PATH"] = strings.Join(dirs, ":")
	return envList(vars, extra)
}

// toolDirs are the per-job tool directories under home, at the end of
// PATH.
func toolDirs(home string) []string {
	return []string{path.Join(home, "go", "bin"), path.Join(home, ".local", "bin"), path.Join(home, ".cargo", "bin")}
}

// envList returns vars with extra over them as a sorted environment.
func envList(vars, extra map[string]string) []string {
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

// allowList is the sandbox's own environment, without PATH; home is the
// cache directory as the command sees it.
func allowList(home string) map[string]string {
	return map[string]string{
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
