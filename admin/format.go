package admin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/agentfix/agentfix/agent"
)

// funcs are the template functions of the pages. None returns trusted
// HTML: everything they produce is escaped like any other value. The
// pages call these, never methods: a template engine's method lookup by
// name keeps every method of the binary (BENCHMARKS.md, "Binary size").
func funcs() template.FuncMap {
	return template.FuncMap{
		"usd":        usd,
		"count":      count,
		"dur":        dur,
		"when":       when,
		"tokens":     tokens,
		"days":       days,
		"plural":     plural,
		"stepAnchor": func(n int) string { return "step-" + strconv.Itoa(n) },
		"exitLabel":  func(s agent.ExitStatus) string { return describeExit(string(s)).Label },
		"narrowed":   runFilter.Active,
		"zero":       time.Time.IsZero,
		"num":        func(n int) string { return count(int64(n)) },
		"waited":     waited,
		"joinComma":  joinComma,
	}
}

// usd formats dollars with cents, and with four decimals below a dollar
// (one model call often costs less than a cent).
func usd(v float64) string {
	if v >= 1 || v == 0 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// count formats an integer with thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// dur formats a duration for reading, rounded to what matters at its
// size: "<1 ms", "250 ms", "1.5 s", "42 s", "4 min 5 s", then whole
// minutes from ten minutes on: "45 min", "1 h 5 min".
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return "<1 ms"
	}
	if r := d.Round(time.Millisecond); r < time.Second {
		return strconv.FormatInt(int64(r/time.Millisecond), 10) + " ms"
	}
	if r := d.Round(100 * time.Millisecond); r < 10*time.Second {
		return strconv.FormatFloat(r.Seconds(), 'f', 1, 64) + " s"
	}
	if d = d.Round(time.Second); d >= 10*time.Minute {
		d = d.Round(time.Minute)
	}
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	case m > 0 && s > 0:
		return fmt.Sprintf("%d min %d s", m, s)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}

// when formats a time in UTC; the zero time is a dash.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// tokens describes a usage: input, output and, when there were any, cache
// reads and writes.
func tokens(u agent.Usage) string {
	s := count(u.InputTokens) + " in, " + count(u.OutputTokens) + " out"
	if u.CacheReadTokens > 0 {
		s += ", " + count(u.CacheReadTokens) + " cache read"
	}
	if u.CacheWriteTokens > 0 {
		s += ", " + count(u.CacheWriteTokens) + " cache write"
	}
	return s
}

// days describes a retention period: in days when it is whole days.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return plural(int(d/(24*time.Hour)), "day")
	}
	return dur(d)
}

// plural returns "1 step", "2 steps".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
