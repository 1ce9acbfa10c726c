package tools

import (
	"embed"
	"errors"
	"fmt"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/proof"
)

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// ReviewData is what the review templates are rendered with: the review
// stages (Options.ReviewStages), the workflow refusal and the empty-change
// answer. Lists are sorted paths relative to the repository root.
type ReviewData struct {
	// Diff is the full patch against the base commit.
	Diff string
	// Base is the base commit's id (for `git checkout <base> -- <file>`).
	Base string
	// Files, New, Deleted, Tests and Workflows are the changed, new,
	// deleted, test and workflow files (workspace.Changes).
	Files, New, Deleted, Tests, Workflows []string
	// NestedRepos are directories left out of the change (own .git).
	NestedRepos []string
	// Symlinks are the refused symbolic links of the change, each as
	// "path -> target (why)".
	Symlinks []string
	// Test is the result of the repository's test command; nil when none
	// is configured.
	Test *TestResult
	// Verdict is the harness's evidence (baseline, regression proof,
	// integrity flags) when a Verifier ran the tests; nil otherwise.
	Verdict *Verdict
	// Summary is the latest summary given to submit; empty when none was.
	Summary string
	// Stage is this review message's number (1-based) of Stages.
	Stage, Stages int
	// TextMode is set when the model acts with bash blocks, not tools.
	TextMode bool
}

// TestResult is one run of the repository's test command.
type TestResult struct {
	Command  string
	ExitCode int
	TimedOut bool
	// Output is the command's output, cut to Options.TestOutputLimit.
	Output string
}

// templateFuncs are the functions review templates may call besides the
// built-ins: join LIST SEP, fence LANG TEXT (a fenced block its content
// cannot close), label FAILURE (a test failure's name for people) and
// weakens KIND (whether a flagged test edit weakens the tests). The
// default templates call functions, never methods: a template engine's
// method lookup by name keeps every method of the binary (BENCHMARKS.md,
// "Binary size").
func templateFuncs() template.FuncMap {
	return template.FuncMap{"join": strings.Join, "fence": agent.Fence, "label": proof.Failure.Label,
		"weakens": proof.FlagKind.Weakens}
}

// parseTemplates parses the review stages (the embedded default when none
// are given), the workflow refusal and the empty-change answer, and renders
// each with sample data so that a template naming a missing field fails
// here and not in the middle of a run.
func parseTemplates(stages []string) (review []*template.Template, workflows, empty, symlinks *template.Template, err error) {
	embedded := func(name string) string {
		b, _ := promptFiles.ReadFile("prompts/" + name + ".tmpl") // embedded: always there
		return string(b)
	}
	if len(stages) == 0 {
		stages = []string{embedded("review")}
	}
	var errs []error
	parse := func(name, text string) *template.Template {
		t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs()).Parse(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse %s: %w", name, err))
			return nil
		}
		sample := ReviewData{Diff: "d", Base: "b", Files: []string{"f"}, New: []string{"n"}, Deleted: []string{"x"},
			Tests: []string{"t"}, Workflows: []string{"w"}, NestedRepos: []string{"r"}, Symlinks: []string{"l"},
			Test: &TestResult{Command: "c", Output: "o"}, Summary: "s", Stage: 1, Stages: len(stages),
			Verdict: &Verdict{Baseline: &TestResult{Command: "c"}, Comparison: &proof.Comparison{Reason: "r", Preexisting: []proof.Failure{{ID: "p"}}, New: []proof.Failure{{ID: "n"}}},
				Proof: &proof.Proof{Proven: []proof.Regression{{Path: "p", Name: "n"}}, Unproven: []proof.Unproven{{Path: "p", Name: "n", Reason: "r"}}},
				Flags: []proof.Flag{{Path: "f", Reason: "r"}}}}
		if err := t.Execute(new(strings.Builder), sample); err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", name, err))
		}
		return t
	}
	for i, s := range stages {
		review = append(review, parse(fmt.Sprintf("review stage %d", i+1), s))
	}
	workflows = parse("workflows", embedded("workflows"))
	empty = parse("empty", embedded("empty"))
	symlinks = parse("symlinks", embedded("symlinks"))
	return review, workflows, empty, symlinks, errors.Join(errs...)
}

func render(t *template.Template, d ReviewData) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("render %s: %w", t.Name(), err)
	}
	return b.String(), nil
}
