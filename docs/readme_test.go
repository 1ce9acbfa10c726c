package docs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
)

// The worked estimate of the README: a run of estimateSteps steps whose
// first prompt is estimatePrompt tokens, each step adding estimateGrowth
// tokens to the history and writing estimateOutput tokens.
const (
	estimateSteps  = 30
	estimatePrompt = 4000
	estimateGrowth = 1500
	estimateOutput = 500
)

// estimateUsage returns the tokens of the worked estimate: with prompt
// cache hits, everything but what each step adds (and the first prompt)
// is read from the cache, which Anthropic bills as written; without, all
// input is billed at the input price.
func estimateUsage(provider string, cached bool) agent.Usage {
	n := int64(estimateSteps)
	total := n*estimatePrompt + estimateGrowth*n*(n-1)/2
	fresh := estimatePrompt + (n-1)*estimateGrowth
	u := agent.Usage{OutputTokens: n * estimateOutput, InputTokens: total}
	if !cached {
		return u
	}
	u.InputTokens, u.CacheReadTokens = fresh, total-fresh
	if provider == "anthropic" {
		u.InputTokens, u.CacheWriteTokens = 0, fresh
	}
	return u
}

func TestEstimateUsage(t *testing.T) {
	t.Parallel()
	// The README's figures in words: 772,500 input tokens, 47,500 of them
	// not from the cache, 15,000 output tokens.
	if u := estimateUsage("openai", false); u.InputTokens != 772500 || u.OutputTokens != 15000 {
		t.Errorf("without cache: %+v, want 772500 input and 15000 output tokens", u)
	}
	if u := estimateUsage("openai", true); u.InputTokens != 47500 || u.CacheReadTokens != 725000 {
		t.Errorf("openai with cache: %+v, want 47500 input and 725000 cache-read tokens", u)
	}
	if u := estimateUsage("anthropic", true); u.CacheWriteTokens != 47500 || u.CacheReadTokens != 725000 || u.InputTokens != 0 {
		t.Errorf("anthropic with cache: %+v, want 47500 cache-write and 725000 cache-read tokens", u)
	}
}

// costRow matches a row of the README's cost table: the model, then the
// two dollar figures.
var costRow = regexp.MustCompile("^\\| `([a-z]+)/([^`]+)` \\| \\$([0-9.]+) \\| \\$([0-9.]+)")

func TestREADMECostEstimateFollowsThePriceTable(t *testing.T) {
	t.Parallel()
	md := readDoc(t, "README.md")
	table, err := llm.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range section(t, "README.md", md, "Try it locally") {
		m := costRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		name := m[1] + "/" + m[2]
		p, ok := table.Models[name]
		if !ok {
			t.Errorf("the cost table names %s, which prices.json does not price", name)
			continue
		}
		for i, cached := range []bool{true, false} {
			want := fmt.Sprintf("%.2f", p.Cost(estimateUsage(m[1], cached)))
			if got := m[3+i]; got != want {
				t.Errorf("the cost table says $%s for %s (cached %v); prices.json gives $%s", got, name, cached, want)
			}
		}
	}
	if rows < 3 {
		t.Errorf("found %d rows of the cost table in README.md; want at least 3", rows)
	}
}

// modelName matches a provider/model name in backticks.
var modelName = regexp.MustCompile("`((?:openai|anthropic)/[^`]+)`")

func TestREADMEListsEveryPricedModel(t *testing.T) {
	t.Parallel()
	md := readDoc(t, "README.md")
	table, err := llm.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range section(t, "README.md", md, "Try it locally") {
		if strings.HasPrefix(line, "|") {
			continue // the cost table
		}
		for _, m := range modelName.FindAllStringSubmatch(line, -1) {
			listed = append(listed, m[1])
		}
	}
	for name := range table.Models {
		if !slices.Contains(listed, name) {
			t.Errorf("prices.json prices %s, which the README's supported models do not list", name)
		}
	}
	for _, name := range listed {
		if _, ok := table.Models[name]; !ok {
			t.Errorf("the README lists %s as a supported model, which prices.json does not price", name)
		}
	}
}

// goLine matches the go directive of go.mod.
var goLine = regexp.MustCompile(`(?m)^go ([0-9.]+)$`)

func TestREADMENamesTheGoVersionOfGoMod(t *testing.T) {
	t.Parallel()
	m := goLine.FindStringSubmatch(readDoc(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	want := "**Go " + m[1] + "**"
	if md := strings.Join(section(t, "README.md", readDoc(t, "README.md"), "Prerequisites"), "\n"); !strings.Contains(md, want) {
		t.Errorf("the README's prerequisites do not name %s, the go directive of go.mod", want)
	}
}
