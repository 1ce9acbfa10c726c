package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// docProblem is a problem with a YAML file as a whole: its syntax, or a
// second document. line is 0 when not known.
type docProblem struct {
	line int
	msg  string
}

// yamlLineError matches the errors of yaml's parser and scanner.
var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDocument parses data as one YAML document and returns its root
// node; nil and no problem for an empty document (nothing, only comments,
// or ~).
func parseDocument(data []byte) (*yaml.Node, *docProblem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil
	} else if err != nil {
		return nil, syntaxProblem(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxProblem(data, err)
	default:
		return nil, &docProblem{line: extra.Line, msg: "the file must hold one YAML document, found another (remove the --- line)"}
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil, nil
	}
	return root, nil
}

// syntaxProblem turns a YAML parser error on data into a problem with its
// line. A tab in the indentation, which YAML forbids and its parser
// reports without a line or on the wrong one, gets the line of the first
// tab.
func syntaxProblem(data []byte, err error) *docProblem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineError.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if strings.Contains(msg, "tab character") || strings.Contains(msg, "cannot start any token") {
		if n := tabIndentedLine(data); n > 0 {
			return &docProblem{line: n, msg: "YAML syntax error: a tab in the indentation; YAML indents with spaces"}
		}
	}
	return &docProblem{line: line, msg: "YAML syntax error: " + msg + syntaxHints[msg]}
}

// syntaxHints say what usually causes the YAML parser's commonest errors.
var syntaxHints = map[string]string{
	"mapping values are not allowed in this context": " (a value holding \": \" must be quoted)",
	"did not find expected key":                      " (check the indentation)",
	"could not find expected ':'":                    " (a key without its colon?)",
	"found unexpected end of stream":                 " (a quote that is never closed?)",
}

// tabIndentedLine returns the first line (from 1) whose indentation holds a
// tab, or 0.
func tabIndentedLine(data []byte) int {
	for i, l := range strings.Split(string(data), "\n") {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if strings.Contains(indent, "\t") {
			return i + 1
		}
	}
	return 0
}

// fileProblem is one thing wrong in a configuration file of the operator
// (the YAML file, .env), written for the person who edits it and rendered
// "file:line:column: key: message" without the parts not known.
type fileProblem struct {
	file      string
	line, col int
	key       string // as written in the file; keys of nested mappings joined by ": "
	msg       string
}

func (p *fileProblem) Error() string {
	var b strings.Builder
	b.WriteString(p.file)
	if p.line > 0 {
		fmt.Fprintf(&b, ":%d", p.line)
		if p.col > 0 {
			fmt.Fprintf(&b, ":%d", p.col)
		}
	}
	if p.key != "" {
		b.WriteString(": " + p.key)
	}
	b.WriteString(": " + p.msg)
	return b.String()
}
