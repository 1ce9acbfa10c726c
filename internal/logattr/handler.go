package logattr

import (
	"context"
	"log/slog"
)

// Tidy wraps h so what it writes reads well for people: an attribute set
// again (by a child logger's With and by the record, say) is written once,
// with its latest value, and an error attribute that is nil is left out,
// so "err=<nil>" never shows. Groups pass through unchanged.
func Tidy(h slog.Handler) slog.Handler { return &tidy{h: h} }

type tidy struct {
	h     slog.Handler
	attrs []slog.Attr // With's, not yet given to h
	group bool        // a group was opened: attrs are h's already
}

func (t *tidy) Enabled(ctx context.Context, l slog.Level) bool { return t.h.Enabled(ctx, l) }

func (t *tidy) Handle(ctx context.Context, r slog.Record) error {
	all := make([]slog.Attr, 0, len(t.attrs)+r.NumAttrs())
	all = append(all, t.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		all = append(all, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(dedup(all)...)
	return t.h.Handle(ctx, out)
}

func (t *tidy) WithAttrs(as []slog.Attr) slog.Handler {
	if t.group {
		return &tidy{h: t.h.WithAttrs(dedup(as)), group: true}
	}
	return &tidy{h: t.h, attrs: append(t.attrs[:len(t.attrs):len(t.attrs)], as...)}
}

func (t *tidy) WithGroup(name string) slog.Handler {
	return &tidy{h: t.h.WithAttrs(dedup(t.attrs)).WithGroup(name), group: true}
}

// dedup keeps the last attribute of each key, in the order of their first
// appearance, and drops nil errors and empty attributes.
func dedup(as []slog.Attr) []slog.Attr {
	last := make(map[string]int, len(as))
	for i, a := range as {
		last[a.Key] = i
	}
	out := make([]slog.Attr, 0, len(last))
	seen := make(map[string]bool, len(last))
	for _, a := range as {
		if seen[a.Key] {
			continue
		}
		seen[a.Key] = true
		a = as[last[a.Key]]
		if a.Equal(slog.Attr{}) || isNilError(a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// isNilError reports whether a holds an error that is nil, or is the
// error attribute with no value.
func isNilError(a slog.Attr) bool {
	if a.Value.Kind() != slog.KindAny {
		return false
	}
	v := a.Value.Any()
	if v == nil {
		return a.Key == Err
	}
	err, ok := v.(error)
	return ok && err == nil
}
