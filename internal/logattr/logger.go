package logattr

import (
	"io"
	"log/slog"
	"os"
)

// NewLogger returns a process's logger on w at level (a slog level name,
// already validated; info when empty): text for people when format is
// "text", or "auto" on a terminal, JSON for log collectors otherwise; each
// attribute once and no nil errors (Tidy).
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	if format == "text" || format == "auto" && isTerminal(w) {
		return slog.New(Tidy(slog.NewTextHandler(w, opts)))
	}
	return slog.New(Tidy(slog.NewJSONHandler(w, opts)))
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
