package config

import (
	"fmt"
	"strings"
)

// RepoProblem is one thing wrong with a repository's configuration.
type RepoProblem struct {
	// File is the file it is in: RepoFile for the repository's own file,
	// "owner/repo:path" for another repository's.
	File string
	// Line is the line in File, from 1; 0 when the problem is with the file
	// as a whole.
	Line int
	// Key is the top-level key the problem is about; empty when none.
	Key string
	// Msg says what is wrong, written for the person who edits the file.
	Msg string
}

// String renders the problem as "file:line: key: message".
func (p RepoProblem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Key != "" {
		b.WriteString(": " + p.Key)
	}
	b.WriteString(": " + p.Msg)
	return b.String()
}

// RepoError is an invalid repository configuration: every problem found,
// in file and line order. Its text is written for the requester and may be
// posted as is (in a code block: it quotes the file's content).
type RepoError struct {
	Problems []RepoProblem
}

// Error lists the problems, one a line.
func (e *RepoError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
