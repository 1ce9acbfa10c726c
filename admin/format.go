package admin

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
)

// funcs are the template functions of the pages. None returns trusted
// HTML: everything they produce is escaped like any other value.
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

// dur formats a duration for reading: "<1ms", milliseconds below a second, then
// tenths of seconds below a minute, then whole seconds.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
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
	return d.String()
}

// plural returns "1 step", "2 steps".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
