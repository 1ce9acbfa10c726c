package redeliver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// DryRun lists the deliveries since that failed, as a sweep would find
// them, and redelivers none: each has the outcome WouldRedeliver.
func DryRun(ctx context.Context, gh Deliveries, since time.Time) (Result, error) {
	failed, listed, err := List(ctx, gh, since)
	if err != nil {
		return Result{}, err
	}
	res := Result{Since: since, Listed: listed}
	for _, f := range failed {
		res.Reports = append(res.Reports, Report{Failed: f, Outcome: WouldRedeliver})
	}
	return res, nil
}

// Print writes the result for people: a summary line, one line per failed
// delivery (oldest first), the errors GitHub gave, and the counts of each
// outcome.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "Webhook deliveries since %s: %d listed, %d failed.\n", r.Since.UTC().Format(time.RFC3339), r.Listed, len(r.Reports))
	if len(r.Reports) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tDELIVERY\tEVENT\tLAST ANSWER\tFIRST ATTEMPT\tATTEMPTS")
	counts := map[Outcome]int{}
	var order []Outcome
	for _, rep := range r.Reports {
		event := rep.Latest.Event
		if rep.Latest.Action != "" {
			event += "." + rep.Latest.Action
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", rep.Outcome, rep.GUID, event, answer(rep.Latest), rep.First.UTC().Format(time.RFC3339), rep.Attempts)
		if counts[rep.Outcome] == 0 {
			order = append(order, rep.Outcome)
		}
		counts[rep.Outcome]++
	}
	tw.Flush()
	for _, rep := range r.Reports {
		if rep.Err != nil {
			fmt.Fprintf(w, "%s: %s\n", rep.GUID, rep.Err)
		}
	}
	var parts []string
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	fmt.Fprintln(w, strings.Join(parts, ", ")+".")
}

// answer describes how an attempt was answered.
func answer(d ghapp.HookDelivery) string {
	if d.StatusCode == 0 {
		return "none (" + d.Status + ")"
	}
	return fmt.Sprintf("%d", d.StatusCode)
}

// Err says how many of the failed deliveries could not be redelivered,
// and that another run of bot redeliver retries them; nil when none.
func (r Result) Err() error {
	if n := r.Count(Errored); n > 0 {
		return fmt.Errorf("%d of %d failed deliveries could not be redelivered; run bot redeliver again to retry them", n, len(r.Reports))
	}
	return nil
}
