package llm

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentfix/agentfix/agent"
)

//go:embed prices.json
var pricesJSON []byte

// Price is what a model's tokens cost, in USD per million tokens. A zero
// CacheRead or CacheWrite bills those tokens at the Input price.
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheRead  float64 `json:"cache_read,omitempty" yaml:"cache_read"`
	CacheWrite float64 `json:"cache_write,omitempty" yaml:"cache_write"`
}

// Cost returns what usage costs at this price.
func (p Price) Cost(u agent.Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*read + float64(u.CacheWriteTokens)*write) / 1e6
}

func (p Price) validate() error {
	if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
		return errors.New("negative price")
	}
	if p.Input == 0 && p.Output == 0 {
		return errors.New("input and output prices are both zero")
	}
	return nil
}

// PriceTable maps "provider/model" to its price, as of a date.
type PriceTable struct {
	AsOf   string           `json:"as_of"`
	Note   string           `json:"note,omitempty"`
	Models map[string]Price `json:"models"`
}

// DefaultPrices returns the embedded price table (prices.json).
func DefaultPrices() (PriceTable, error) {
	var t PriceTable
	dec := json.NewDecoder(bytes.NewReader(pricesJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return PriceTable{}, fmt.Errorf("embedded price table: %w", err)
	}
	for name, p := range t.Models {
		if err := p.validate(); err != nil {
			return PriceTable{}, fmt.Errorf("embedded price table: %s: %w", name, err)
		}
	}
	return t, nil
}

// dateSuffix matches a dated model version such as -20250929 or -2025-08-07.
var dateSuffix = regexp.MustCompile(`-\d{4}-?\d{2}-?\d{2}$`)

// lookup returns the price of name ("provider/model"): overrides first,
// then the table; each by the exact name, then without a date suffix
// (so "anthropic/claude-sonnet-4-5-20250929" finds "claude-sonnet-4-5").
func lookup(name string, table PriceTable, overrides map[string]Price) (Price, bool, error) {
	for _, n := range []string{name, dateSuffix.ReplaceAllString(name, "")} {
		if p, ok := overrides[n]; ok {
			if err := p.validate(); err != nil {
				return Price{}, false, fmt.Errorf("price of %s: %w", n, err)
			}
			return p, true, nil
		}
		if p, ok := table.Models[n]; ok {
			return p, true, nil
		}
	}
	return Price{}, false, nil
}

// unpricedError explains a model missing from the price table: the closest
// priced names (a typo such as openai/gpt5), where the name came from, and
// the two ways to run it anyway, each with its YAML key and variable.
func unpricedError(name, provider string, table PriceTable) error {
	var names []string
	for n := range table.Models {
		names = append(names, n)
	}
	var hint string
	if close := closest(name, names, 3); len(close) > 0 {
		hint = " (did you mean " + strings.Join(close, " or ") + "?)"
	}
	return fmt.Errorf("model %s has no price%s; the model comes from AGENTFIX_MODEL (or bot fix --model, or the YAML key model) "+
		"and the price table as of %s has %s; to run a model the table does not have, add its price under prices in the configuration, "+
		"or set allow_unpriced_model: true (AGENTFIX_ALLOW_UNPRICED_MODEL=true) to count tokens instead",
		name, hint, table.AsOf, pricedModels(table, provider))
}

// pricedModels lists the table's models of a provider, for error messages.
func pricedModels(table PriceTable, provider string) string {
	var names []string
	for n := range table.Models {
		if strings.HasPrefix(n, provider+"/") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// closest returns up to n of names nearest to name by edit distance,
// nearest first, leaving out those that differ in more than a quarter of
// name's characters (at least 2 edits are always allowed).
func closest(name string, names []string, n int) []string {
	type cand struct {
		name string
		dist int
	}
	limit := max(2, utf8.RuneCountInString(name)/4)
	var cands []cand
	for _, c := range names {
		if d := editDistance(name, c); d <= limit {
			cands = append(cands, cand{c, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b in runes: the fewest
// insertions, deletions and substitutions that turn one into the other.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
