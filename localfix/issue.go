package localfix

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// maxIssueBytes bounds the issue file of bot fix; GitHub caps an issue body
// at 65,536 characters.
const maxIssueBytes = 256 << 10

// maxTitleRunes bounds a title taken from the first line of the text.
const maxTitleRunes = 100

// readIssueFile reads the Markdown issue of bot fix: an optional first line
// "# Title" is the title and the rest the body. Without that line the first
// line of text, shortened, serves as the title and the whole text is the
// body.
func readIssueFile(path string) (title, body string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxIssueBytes {
		return "", "", fmt.Errorf("%s has %d bytes, more than the %d an issue may have", path, fi.Size(), maxIssueBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	if !utf8.Valid(b) {
		return "", "", fmt.Errorf("%s is not UTF-8 text", path)
	}
	title, body = parseIssue(string(b))
	if title == "" && body == "" {
		return "", "", errors.New(path + " is empty")
	}
	return title, body, nil
}

// parseIssue splits Markdown text into title and body; see readIssueFile.
func parseIssue(text string) (title, body string) {
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSpace(text)
	first, rest, _ := strings.Cut(text, "\n")
	if h, ok := strings.CutPrefix(first, "# "); ok {
		return strings.TrimSpace(h), strings.TrimSpace(rest)
	}
	title = strings.TrimSpace(strings.TrimLeft(first, "#>*-+ \t"))
	if r := []rune(title); len(r) > maxTitleRunes {
		title = string(r[:maxTitleRunes-1]) + "…"
	}
	return title, text
}
