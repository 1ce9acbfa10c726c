package proof

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// testFunc is a test function of a source file, with the lines it spans
// (1-based, inclusive; from its first attribute, decorator or annotation).
type testFunc struct {
	name       string
	start, end int
}

// lang returns the language of a file by its extension: "go", "python",
// "js", "rust", "java" (Java, Kotlin, Groovy, Scala), or "".
func lang(p string) string {
	switch path.Ext(p) {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return "js"
	case ".rs":
		return "rust"
	case ".java", ".kt", ".groovy", ".scala":
		return "java"
	}
	return ""
}

// testFuncs returns the test functions of the file at p with contents src.
func testFuncs(p string, src []byte) []testFunc {
	switch lang(p) {
	case "go":
		return goTestFuncs(src)
	case "python":
		return pyTestFuncs(src)
	case "js":
		return jsTestFuncs(src)
	case "rust":
		return rustTestFuncs(src)
	case "java":
		return javaTestFuncs(src)
	}
	return nil
}

// isGoTestName reports whether name is what go test runs: TestX, FuzzX,
// ExampleX, with no lower-case letter after the prefix.
func isGoTestName(name string) bool {
	for _, pre := range []string{"Test", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(name, pre); ok {
			r, _ := utf8.DecodeRuneInString(rest)
			return rest == "" || !unicode.IsLower(r)
		}
	}
	return false
}

var goFuncRE = regexp.MustCompile(`^func (\w+)\(`)

func goTestFuncs(src []byte) []testFunc {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		// Not Go that parses: top-level funcs by their first line, each
		// ending at the next line that is a lone "}".
		var out []testFunc
		ls := strings.Split(string(src), "\n")
		for i, l := range ls {
			if m := goFuncRE.FindStringSubmatch(l); m != nil && isGoTestName(m[1]) {
				end := i + 1
				for j := i + 1; j < len(ls); j++ {
					if ls[j] == "}" {
						end = j + 1
						break
					}
				}
				out = append(out, testFunc{m[1], i + 1, end})
			}
		}
		return out
	}
	var out []testFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || !isGoTestName(fd.Name.Name) {
			continue
		}
		out = append(out, testFunc{fd.Name.Name, fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line})
	}
	return out
}

var (
	pyDefRE   = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+(\w+)\s*\(`)
	pyClassRE = regexp.MustCompile(`^(\s*)class\s+(\w+)`)
)

// pyTestFuncs returns pytest's and unittest's tests: functions named test*,
// methods named test* (as Class::method), their decorators included.
func pyTestFuncs(src []byte) []testFunc {
	ls := strings.Split(string(src), "\n")
	type class struct {
		indent int
		name   string
	}
	var classes []class
	var out []testFunc
	for i, l := range ls {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		ind := indentOf(l)
		for len(classes) > 0 && ind <= classes[len(classes)-1].indent {
			classes = classes[:len(classes)-1]
		}
		if m := pyClassRE.FindStringSubmatch(l); m != nil {
			classes = append(classes, class{len(m[1]), m[2]})
			continue
		}
		m := pyDefRE.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[2], "test") {
			continue
		}
		name := m[2]
		if len(classes) > 0 {
			name = classes[len(classes)-1].name + "::" + name
		}
		start := i
		for start > 0 && strings.HasPrefix(strings.TrimSpace(ls[start-1]), "@") && indentOf(ls[start-1]) == ind {
			start--
		}
		end := i
		for j := i + 1; j < len(ls); j++ {
			t := strings.TrimSpace(ls[j])
			if t == "" {
				continue
			}
			if indentOf(ls[j]) <= ind && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, ")") {
				break
			}
			end = j
		}
		out = append(out, testFunc{name, start + 1, end + 1})
	}
	return out
}

func indentOf(l string) int {
	n := 0
	for _, r := range l {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 8
		default:
			return n
		}
	}
	return n
}

// jsCallRE matches the start of a test or a describe block: it('title',
// test.skip("title", describe(`title`, it.each([…])('title'. The title is
// in group 2, 3 or 4 by its quotes.
var jsCallRE = regexp.MustCompile(`(?:^|[^\w.$])((?:x|f)?(?:it|test|specify|describe|context|suite)(?:\.\w+)*(?:\s*\([^()]*(?:\([^()]*\)[^()]*)*\))?)\s*\(\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|` + "`" + `((?:[^` + "`" + `\\]|\\.)*)` + "`" + `)`)

// jsTestFuncs returns the tests of a Jest, Vitest or Mocha file, each named
// by its describe blocks' titles and its own, joined with " › ".
func jsTestFuncs(src []byte) []testFunc {
	s := string(src)
	type block struct {
		title      string
		start, end int
		group      bool
	}
	var blocks []block
	for _, loc := range jsCallRE.FindAllStringSubmatchIndex(s, -1) {
		callee := s[loc[2]:loc[3]]
		title := ""
		for g := 2; g <= 4; g++ {
			if loc[2*g] >= 0 {
				title = s[loc[2*g]:loc[2*g+1]]
			}
		}
		head, _, _ := strings.Cut(strings.TrimLeft(callee, "xf"), ".")
		head, _, _ = strings.Cut(head, "(")
		titleAt := -1
		for g := 2; g <= 4; g++ {
			if loc[2*g] >= 0 {
				titleAt = loc[2*g]
			}
		}
		open := strings.LastIndexByte(s[:titleAt], '(')
		if open < 0 {
			continue
		}
		closeAt := matchClose(s, open, false)
		blocks = append(blocks, block{
			title: title,
			start: lineAt(s, loc[2]),
			end:   lineAt(s, closeAt),
			group: head == "describe" || head == "context" || head == "suite",
		})
	}
	var out []testFunc
	for _, b := range blocks {
		if b.group {
			continue
		}
		var names []string
		for _, g := range blocks {
			if g.group && g.start <= b.start && b.end <= g.end {
				names = append(names, g.title)
			}
		}
		out = append(out, testFunc{strings.Join(append(names, b.title), " › "), b.start, b.end})
	}
	return out
}

// lineAt returns the 1-based line of byte offset i of s.
func lineAt(s string, i int) int {
	if i > len(s) {
		i = len(s)
	}
	return strings.Count(s[:i], "\n") + 1
}

// matchClose returns the offset of the bracket that closes the one at
// s[open] ('(' or '{'), skipping strings and comments of C-like languages;
// len(s) when it is not closed.
func matchClose(s string, open int, rust bool) int {
	o := s[open]
	c := map[byte]byte{'(': ')', '{': '}', '[': ']'}[o]
	depth := 0
	for i := open; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case ch == '/' && i+1 < len(s) && s[i+1] == '*':
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				return len(s)
			}
		case ch == '"' || ch == '`' || ch == '\'' && !(rust && rustLifetime(s, i)):
			for i++; i < len(s) && s[i] != ch; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case ch == o:
			depth++
		case ch == c:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

// rustLifetime reports whether the quote at s[i] starts a Rust lifetime
// ('a) rather than a character literal ('a').
func rustLifetime(s string, i int) bool {
	j := i + 1
	for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
		j++
	}
	return j > i+1 && (j >= len(s) || s[j] != '\'')
}

var (
	rustTestAttrRE = regexp.MustCompile(`^\s*#\[(?:\w+::)*(?:test|rstest|test_case|quickcheck|proptest)\b`)
	rustAttrRE     = regexp.MustCompile(`^\s*#\[`)
	rustFnRE       = regexp.MustCompile(`^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)`)
	rustModRE      = regexp.MustCompile(`^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*\{`)
)

// rustTestFuncs returns a Rust file's #[test] functions (and those of
// tokio, rstest and the like), named by their modules: tests::nested::deep.
func rustTestFuncs(src []byte) []testFunc {
	s := string(src)
	ls := strings.Split(s, "\n")
	offsets := lineOffsets(s)
	type mod struct {
		name       string
		start, end int
	}
	var mods []mod
	for i, l := range ls {
		if m := rustModRE.FindStringSubmatch(l); m != nil {
			open := offsets[i] + strings.IndexByte(l, '{')
			mods = append(mods, mod{m[1], i + 1, lineAt(s, matchClose(s, open, true))})
		}
	}
	var out []testFunc
	for i := 0; i < len(ls); i++ {
		if !rustTestAttrRE.MatchString(ls[i]) {
			continue
		}
		start := i
		for start > 0 && rustAttrRE.MatchString(ls[start-1]) {
			start--
		}
		j := i
		for j < len(ls) && (rustAttrRE.MatchString(ls[j]) || strings.TrimSpace(ls[j]) == "" || strings.HasPrefix(strings.TrimSpace(ls[j]), "//")) && !rustFnRE.MatchString(ls[j]) {
			j++
		}
		if j >= len(ls) {
			break
		}
		m := rustFnRE.FindStringSubmatch(ls[j])
		if m == nil {
			continue
		}
		end := j + 1
		if k := strings.IndexByte(s[offsets[j]:], '{'); k >= 0 {
			end = lineAt(s, matchClose(s, offsets[j]+k, true))
		}
		var names []string
		for _, md := range mods {
			if md.start < j+1 && j+1 <= md.end {
				names = append(names, md.name)
			}
		}
		out = append(out, testFunc{strings.Join(append(names, m[1]), "::"), start + 1, end})
		i = j
	}
	return out
}

// lineOffsets returns the byte offset of the start of each line of s.
func lineOffsets(s string) []int {
	offs := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			offs = append(offs, i+1)
		}
	}
	return offs
}

var (
	javaTestAnnRE = regexp.MustCompile(`^\s*@(?:org\.junit\.(?:jupiter\.api\.)?)?(?:Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)\b`)
	// javaAnnRE matches an annotation at the start of a line, its
	// arguments on the same line.
	javaAnnRE = regexp.MustCompile(`^\s*@[\w.]+(?:\([^()]*(?:\([^()]*\)[^()]*)*\))?\s*`)
	// javaMethodRE finds a method's name: "void adds(", "fun `adds two`(",
	// "def 'adds'()".
	javaMethodRE = regexp.MustCompile("(?:\\bfun\\s+(?:`([^`]+)`|(\\w+))|\\bdef\\s+(?:'([^']+)'|\"([^\"]+)\"|(\\w+))|(\\w+))\\s*\\(")
	junit3RE     = regexp.MustCompile(`^\s*public\s+void\s+(test\w*)\s*\(\s*\)`)
)

// javaTestFuncs returns a JVM test class's @Test methods (JUnit 4 and 5,
// TestNG, Kotlin, Groovy) and JUnit 3's public void test*() methods.
func javaTestFuncs(src []byte) []testFunc {
	s := string(src)
	ls := strings.Split(s, "\n")
	offsets := lineOffsets(s)
	var out []testFunc
	for i := 0; i < len(ls); i++ {
		if !javaTestAnnRE.MatchString(ls[i]) && !junit3RE.MatchString(ls[i]) {
			continue
		}
		// Find the method's line past the annotations, which may span
		// lines.
		j, rest := i, ls[i]
		for j < len(ls) {
			for javaAnnRE.MatchString(rest) {
				rest = javaAnnRE.ReplaceAllString(rest, "")
			}
			if t := strings.TrimSpace(rest); t != "" && !strings.HasPrefix(t, "@") && !strings.HasPrefix(t, "//") {
				break
			}
			if t := strings.TrimSpace(rest); strings.HasPrefix(t, "@") && strings.Count(t, "(") > strings.Count(t, ")") {
				// An annotation whose arguments go on: skip to their end.
				depth := strings.Count(t, "(") - strings.Count(t, ")")
				for j++; j < len(ls) && depth > 0; j++ {
					depth += strings.Count(ls[j], "(") - strings.Count(ls[j], ")")
				}
				j--
			}
			j++
			if j < len(ls) {
				rest = ls[j]
			}
		}
		if j >= len(ls) {
			break
		}
		m := javaMethodRE.FindStringSubmatch(rest)
		if m == nil {
			continue
		}
		name := ""
		for _, g := range m[1:] {
			if g != "" {
				name = g
				break
			}
		}
		end := j + 1
		if k := strings.IndexByte(s[offsets[j]:], '{'); k >= 0 {
			end = lineAt(s, matchClose(s, offsets[j]+k, false))
		}
		start := i
		for start > 0 && javaAnnRE.MatchString(ls[start-1]) {
			start--
		}
		out = append(out, testFunc{name, start + 1, end})
		i = j
	}
	return out
}
