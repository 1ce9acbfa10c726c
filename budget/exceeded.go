package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ExceededError says a scope's budget does not allow the spend asked for.
// Error is for logs; Message is for the requester.
type ExceededError struct {
	Kind Kind
	// Tokens is set when the limit is of tokens; the amounts are dollars
	// otherwise.
	Tokens bool
	// Limit, Spent (by settled calls), Held (by running calls) and Need
	// (the estimate asked for) are in the limit's unit.
	Limit, Spent, Held, Need float64
	// ResetAt is when a daily budget starts again (the next UTC midnight);
	// zero for a job.
	ResetAt time.Time
	// Now is when the budget was found exceeded.
	Now time.Time
}

func exceeded(a account, tokens bool, spent, held int64, need Amount, now time.Time) *ExceededError {
	e := &ExceededError{Kind: a.kind, Tokens: tokens, ResetAt: a.resetAt, Now: now}
	if tokens {
		e.Limit, e.Spent, e.Held, e.Need = float64(a.limitTokens), float64(spent), float64(held), float64(need.Tokens)
	} else {
		e.Limit, e.Spent, e.Held, e.Need = dollars(a.limitMicros), dollars(spent), dollars(held), need.USD
	}
	return e
}

func exceededUsage(u Usage, tokens bool, need Amount, now time.Time) *ExceededError {
	e := &ExceededError{Kind: u.Kind, Tokens: tokens, ResetAt: u.ResetAt, Now: now}
	if tokens {
		e.Limit, e.Spent, e.Held, e.Need = float64(u.Limit.Tokens), float64(u.Spent.Tokens), float64(u.Held.Tokens), float64(need.Tokens)
	} else {
		e.Limit, e.Spent, e.Held, e.Need = u.Limit.USD, u.Spent.USD, u.Held.USD, need.USD
	}
	return e
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("%s budget exceeded: limit %s, spent %s, held %s, asked %s",
		e.Kind, e.amount(e.Limit), e.amount(e.Spent), e.amount(e.Held), e.amount(e.Need))
}

// Message explains the refusal to the requester, in one paragraph:
// which budget, how much of it is gone, and when it resets.
func (e *ExceededError) Message() string {
	var b strings.Builder
	switch e.Kind {
	case KindJob:
		fmt.Fprintf(&b, "This job's budget of %s", e.amount(e.Limit))
	case KindRepo:
		fmt.Fprintf(&b, "This repository's daily budget of %s", e.amount(e.Limit))
	default:
		fmt.Fprintf(&b, "The daily budget of %s for all repositories of this app installation", e.amount(e.Limit))
	}
	used := e.Spent+e.Held >= e.Limit
	// What is spent is shown rounded down, so a budget not used up never
	// reads as fully spent.
	spent := e.Spent
	if !e.Tokens {
		spent = math.Floor(spent*100+1e-6) / 100
	}
	if used {
		fmt.Fprintf(&b, " is used up: %s", e.amount(spent))
	} else {
		fmt.Fprintf(&b, " is nearly used up: %s", e.amount(spent))
	}
	if e.Kind == KindJob {
		b.WriteString(" spent")
	} else {
		b.WriteString(" spent today (UTC)")
	}
	if e.Held > 0 {
		fmt.Fprintf(&b, ", %s held by model calls running now", e.amount(e.Held))
	}
	if !used {
		fmt.Fprintf(&b, ", and the next model call could cost up to %s", e.amount(e.Need))
	}
	b.WriteString(".")
	if !e.ResetAt.IsZero() {
		fmt.Fprintf(&b, " It resets at %s UTC (%s).", e.ResetAt.UTC().Format("15:04"), until(e.ResetAt.Sub(e.Now)))
	}
	return b.String()
}

// amount renders v in the limit's unit: "$19.87", "$0.0042", "1,200,000
// tokens".
func (e *ExceededError) amount(v float64) string {
	if e.Tokens {
		return thousands(int64(v)) + " tokens"
	}
	if v > 0 && v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'g', 2, 64)
	}
	return fmt.Sprintf("$%.2f", v)
}

// until renders a wait: "in 5 h 12 min", "in 40 min", "in less than a
// minute"; minutes are rounded up.
func until(d time.Duration) string {
	minutes := int((d + time.Minute - 1) / time.Minute)
	switch h, m := minutes/60, minutes%60; {
	case d < time.Minute:
		return "in less than a minute"
	case h == 0:
		return fmt.Sprintf("in %d min", m)
	case m == 0:
		return fmt.Sprintf("in %d h", h)
	default:
		return fmt.Sprintf("in %d h %d min", h, m)
	}
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
