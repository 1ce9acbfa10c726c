package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/agentfix/agentfix"

// allowed lists, per package (relative to the module), the project packages
// it may reach transitively, following DESIGN.md §2. internal/logattr (a
// leaf of constants), internal/proc (the one way to start a child process)
// and repo (the one repository identity) any package may use. Packages not listed here (new
// ones) fail the test until they are placed in the table.
var allowed = map[string][]string{
	"cmd/bot":               {"*"},
	"config":                {},
	"repo":                  {},
	"budget":                {"config"},
	"jobs":                  {"config"},
	"webhook":               {"config", "jobs"},
	"jobs/worker":           {"jobs", "jobs/worker/outcome", "jobs/worker/report", "jobs/worker/store", "session", "proof", "agent", "tools", "workspace", "ghapp", "runs", "config", "budget", "devcontainer", "rootfs", "setupcache", "internal/copytree"},
	"jobs/worker/outcome":   {},
	"jobs/worker/store":     {"jobs", "jobs/worker/outcome", "session", "agent", "tools", "workspace", "config", "proof", "devcontainer", "rootfs", "setupcache", "internal/copytree"},
	"jobs/worker/report":    {"jobs", "jobs/worker/outcome", "agent", "ghapp", "config"},
	"session":               {"agent", "tools", "workspace", "config", "proof", "devcontainer", "rootfs", "setupcache", "internal/copytree"},
	"localfix":              {"session", "agent", "agent/llm", "tools", "workspace", "config", "runs", "proof", "devcontainer", "rootfs", "setupcache", "internal/copytree"},
	"ghapp":                 {"config"},
	"ghapp/ghfake":          {"config", "ghapp"},
	"agent":                 {},
	"agent/agenttest":       {"agent"},
	"agent/llm":             {"agent"},
	"tools":                 {"agent", "workspace", "config", "proof", "internal/copytree"},
	"workspace":             {"config", "internal/copytree"},
	"deploy":                {},
	"docs":                  {},
	"runs":                  {"config"},
	"admin":                 {"config", "runs", "agent", "internal/httpserve"},
	"redeliver":             {"ghapp", "config"},
	"internal/logattr":      {},
	"internal/archtest":     {},
	"internal/redistest":    {},
	"internal/proc":         {},
	"internal/testprogress": {},
	"proof":                 {},
	"rootfs":                {},
	"setupcache":            {"internal/copytree"},
	"internal/copytree":     {},
	"internal/redisconn":    {},
	"devcontainer":          {},
	"sandbox":               {"session", "agent", "tools", "workspace", "config", "proof", "devcontainer", "rootfs", "setupcache", "internal/copytree"},
	"models":                {"agent", "agent/llm", "config"},
	"internal/httpserve":    {},
	"internal/group":        {},
	"internal/buildinfo":    {},
}

// forbidden lists external modules a package must never reach: the edge
// stays thin and the agent knows nothing of GitHub.
var forbidden = map[string][]string{
	"webhook":   {"github.com/go-git/", "github.com/openai/", "github.com/anthropics/", "github.com/bradleyfalzon/"},
	"jobs":      {"github.com/go-git/", "github.com/openai/", "github.com/anthropics/", "github.com/google/go-github/"},
	"agent":     {"github.com/google/go-github/", "github.com/hibiken/asynq"},
	"agent/llm": {"github.com/google/go-github/", "github.com/hibiken/asynq"},
	"models":    {"github.com/google/go-github/", "github.com/hibiken/asynq"},
	"tools":     {"github.com/google/go-github/", "github.com/hibiken/asynq"},
	"config":    {"github.com/google/go-github/", "github.com/hibiken/asynq"},
	"admin":     {"github.com/google/go-github/", "github.com/go-git/", "github.com/openai/", "github.com/anthropics/", "github.com/bradleyfalzon/"},
}

// stdTemplates are the standard library's template engines, which look
// methods up by name: a project package imports DataDog's copies
// (github.com/DataDog/datadog-agent/pkg/template/text and /html) instead,
// which call no methods, so the linker can drop the methods nothing calls
// (BENCHMARKS.md, "Binary size"; deploy's TestReleaseBinary checks the
// binary itself).
var stdTemplates = []string{"text/template", "html/template"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func TestImportGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		seen++
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rules, ok := allowed[name]
		if !ok {
			t.Errorf("package %s is not in the DESIGN.md §2 table of internal/archtest; add it with the packages it may import", name)
			continue
		}
		may := map[string]bool{name: true, "internal/logattr": true, "internal/proc": true, "repo": true}
		for _, r := range rules {
			may[r] = true
		}
		var bad []string
		for _, d := range p.Deps {
			if d == module || strings.HasPrefix(d, module+"/") {
				dep := strings.TrimPrefix(strings.TrimPrefix(d, module), "/")
				if !may["*"] && !may[dep] {
					bad = append(bad, dep)
				}
				continue
			}
			for _, f := range forbidden[name] {
				if strings.HasPrefix(d, f) {
					bad = append(bad, d)
				}
			}
		}
		for _, imp := range p.Imports {
			if slices.Contains(stdTemplates, imp) {
				t.Errorf("%s imports %s, which looks methods up by name and so keeps every method in the binary; import github.com/DataDog/datadog-agent/pkg/template/%s instead", name, imp, strings.TrimSuffix(imp, "/template"))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s reaches %s; DESIGN.md §2 allows only %v", name, strings.Join(bad, ", "), rules)
		}
	}
	if seen == 0 {
		t.Fatalf("go list returned no packages")
	}
}
