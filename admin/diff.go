package admin

import "strings"

// diffView is a patch as the page shows it: its lines, each with a class
// for its colour, and what it changes.
type diffView struct {
	Lines       []diffLine
	Files       int
	Added, Gone int
}

// diffLine is one line of a patch. Class is one of "file" (the headers of
// a file's diff), "hunk" (@@ lines), "add", "del" and "ctx".
type diffLine struct {
	Class, Text string
}

// fileHeaders start the header lines of a file's diff in git's format.
var fileHeaders = []string{
	"diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode",
	"old mode", "new mode", "similarity index", "dissimilarity index", "rename from", "rename to",
	"copy from", "copy to", "Binary files ",
}

// parseDiff classifies the lines of a unified diff. A line is a header
// only between a "diff --git" line and the file's first hunk, so an added
// line "++ x" or a removed "-- x" inside a hunk keeps its class.
func parseDiff(patch string) diffView {
	var v diffView
	if patch == "" {
		return v
	}
	inHeader := false
	for _, line := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		class := "ctx"
		switch {
		case strings.HasPrefix(line, "diff --git "):
			inHeader = true
			class = "file"
			v.Files++
		case inHeader && hasAnyPrefix(line, fileHeaders):
			class = "file"
		case strings.HasPrefix(line, "@@"):
			inHeader = false
			class = "hunk"
		case strings.HasPrefix(line, "+"):
			class = "add"
			v.Added++
		case strings.HasPrefix(line, "-"):
			class = "del"
			v.Gone++
		}
		v.Lines = append(v.Lines, diffLine{Class: class, Text: line})
	}
	return v
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
