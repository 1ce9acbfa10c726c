package devcontainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// maxFileBytes bounds a devcontainer.json; real ones are a few KiB.
const maxFileBytes = 1 << 20

// Files are the paths Load reads, relative to the repository, first
// found wins (the order of the Dev Container specification).
func Files() []string {
	return []string{".devcontainer/devcontainer.json", ".devcontainer.json"}
}

// Phases are the lifecycle commands run as setup, in the order the
// specification runs them.
func Phases() []string {
	return []string{"onCreateCommand", "updateContentCommand", "postCreateCommand"}
}

// Config is what agentfix uses of a devcontainer.json.
type Config struct {
	// Path is the file, relative to the repository.
	Path string
	// Image is the image the container runs.
	Image string
	// Setup are the lifecycle commands, in Phases order; within an
	// object-form command (which the specification runs in parallel) in
	// the order of the file.
	Setup []Command
	// Notes are lines for the status comment: properties that are not
	// applied, variables that are not substituted.
	Notes []string

	containerEnv, remoteEnv []member
	workspace               string
}

// Command is one setup command.
type Command struct {
	// Phase is the lifecycle property it comes from ("postCreateCommand").
	Phase string
	// Name is its key in an object-form command, or "".
	Name string
	// Shell is the command as one shell line: a string as written, an
	// array (a command and its arguments, run without a shell by the
	// specification) quoted so a shell runs exactly that argv.
	Shell string
}

// UnsupportedError is a devcontainer.json agentfix cannot use: it needs
// an image built (build, dockerFile, Docker Compose) or features added, or
// it names no image. The run goes on with the next source.
type UnsupportedError struct {
	Path   string
	Reason string // "it builds a Dockerfile"
}

// Error returns the one line shown to people.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("`%s` is not supported: name an image (%s)", e.Path, e.Reason)
}

// member is one key of a JSON object, in the file's order; null is a
// JSON null (remoteEnv's "unset").
type member struct {
	key   string
	value string
	null  bool
}

// Load reads the first of Files in the repository checked out at dir and
// parses it (see Parse); it returns nil and no error when there is none.
// The file is read through os.Root, so a symbolic link in the repository
// cannot make it read a file outside dir.
func Load(dir, workspace string) (*Config, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("devcontainer: %w", err)
	}
	defer root.Close()
	for _, p := range Files() {
		f, err := root.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("`%s` cannot be read: %w", p, err)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("`%s` cannot be read: %w", p, err)
		}
		if len(b) > maxFileBytes {
			return nil, fmt.Errorf("`%s` is larger than %d bytes", p, maxFileBytes)
		}
		return Parse(p, b, workspace)
	}
	return nil, nil
}

// Parse reads a devcontainer.json (JSON with comments and trailing
// commas) found at path. workspace is where the sandbox mounts the
// checkout; ${containerWorkspaceFolder} and ${localWorkspaceFolder} both
// mean it (the worker's own paths are never shown to the container).
//
// Variables: ${localEnv:NAME} and ${localEnv:NAME:default} never read the
// worker's environment — they become the default, or nothing, with a
// note; ${containerEnv:NAME} is the image's environment (with
// containerEnv for remoteEnv), resolved by Environ, and is left as written
// in commands, with a note; ${devcontainerId} is left as written, with a
// note. Anything else in ${…} (a shell's own ${HOME}) is left alone.
func Parse(path string, data []byte, workspace string) (*Config, error) {
	std, err := hujson.Standardize(data)
	if err != nil {
		return nil, fmt.Errorf("`%s` is not valid JSON: %v", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(std, &top); err != nil {
		return nil, fmt.Errorf("`%s` is not a JSON object: %v", path, err)
	}
	c := &Config{Path: path, workspace: workspace}
	if err := c.unsupported(top); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(top["image"], &c.Image); err != nil {
		return nil, fmt.Errorf("`%s`: image: want a string", path)
	}
	for _, phase := range Phases() {
		raw, ok := top[phase]
		if !ok {
			continue
		}
		cmds, err := commands(phase, raw)
		if err != nil {
			return nil, fmt.Errorf("`%s`: %s: %v", path, phase, err)
		}
		for _, cmd := range cmds {
			var notes []string
			cmd.Shell, notes = expand(cmd.Shell, workspace, nil, fmt.Sprintf("`%s`, `%s`", path, phase))
			c.note(notes...)
			c.Setup = append(c.Setup, cmd)
		}
	}
	for _, env := range []struct {
		name string
		dst  *[]member
	}{{"containerEnv", &c.containerEnv}, {"remoteEnv", &c.remoteEnv}} {
		raw, ok := top[env.name]
		if !ok {
			continue
		}
		ms, err := object(raw, env.name == "remoteEnv")
		if err != nil {
			return nil, fmt.Errorf("`%s`: %s: %v", path, env.name, err)
		}
		for _, m := range ms {
			_, notes := expand(m.value, workspace, func(string) (string, bool) { return "", true }, fmt.Sprintf("`%s`, `%s.%s`", path, env.name, m.key))
			c.note(notes...)
		}
		*env.dst = ms
	}
	for _, p := range []struct{ key, why string }{
		{"initializeCommand", "it runs on the host, and agentfix never runs repository commands outside the sandbox"},
		{"postStartCommand", "only onCreateCommand, updateContentCommand and postCreateCommand run as setup"},
		{"postAttachCommand", "only onCreateCommand, updateContentCommand and postCreateCommand run as setup"},
		{"mounts", "the sandbox mounts only the checkout and its caches"},
		{"workspaceMount", "the checkout is at " + workspace},
		{"workspaceFolder", "the checkout is at " + workspace},
		{"runArgs", "there is no docker run"},
		{"privileged", "the sandbox is never privileged"},
		{"capAdd", "the sandbox adds no capabilities"},
	} {
		if _, ok := top[p.key]; ok {
			c.note(fmt.Sprintf("`%s`: `%s` is not applied: %s.", path, p.key, p.why))
		}
	}
	return c, nil
}

// unsupported returns the UnsupportedError of a file that needs a build
// or features, or names no image.
func (c *Config) unsupported(top map[string]json.RawMessage) error {
	has := func(k string) bool {
		raw, ok := top[k]
		return ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	}
	switch {
	case has("dockerComposeFile"):
		return &UnsupportedError{Path: c.Path, Reason: "it uses Docker Compose"}
	case has("build"), has("dockerFile"), has("dockerfile"):
		return &UnsupportedError{Path: c.Path, Reason: "it builds a Dockerfile"}
	}
	if raw, ok := top["features"]; ok {
		var features map[string]json.RawMessage
		if err := json.Unmarshal(raw, &features); err != nil {
			return fmt.Errorf("`%s`: features: want an object", c.Path)
		}
		if len(features) > 0 {
			names := make([]string, 0, len(features))
			for n := range features {
				names = append(names, n)
			}
			slices.Sort(names)
			return &UnsupportedError{Path: c.Path, Reason: "it adds features: " + strings.Join(names, ", ")}
		}
	}
	if !has("image") {
		return &UnsupportedError{Path: c.Path, Reason: "it names no image"}
	}
	return nil
}

func (c *Config) note(notes ...string) {
	for _, n := range notes {
		if !slices.Contains(c.Notes, n) {
			c.Notes = append(c.Notes, n)
		}
	}
}

// commands reads a lifecycle command: a string, an array of strings or
// an object of either.
func commands(phase string, raw json.RawMessage) ([]Command, error) {
	one := func(name string, raw json.RawMessage) (*Command, error) {
		shell, err := commandLine(raw)
		if err != nil || shell == "" {
			return nil, err
		}
		return &Command{Phase: phase, Name: name, Shell: shell}, nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var out []Command
		ms, err := orderedRaw(raw)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			cmd, err := one(m.key, m.raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", m.key, err)
			}
			if cmd != nil {
				out = append(out, *cmd)
			}
		}
		return out, nil
	}
	cmd, err := one("", raw)
	if err != nil || cmd == nil {
		return nil, err
	}
	return []Command{*cmd}, nil
}

// commandLine renders a string or an array command as a shell line.
func commandLine(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.TrimSpace(s), nil
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil {
		return "", errors.New("want a string, an array of strings or an object of them")
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " "), nil
}

// shellQuote quotes s for a POSIX shell, leaving plain words as they are.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type rawMember struct {
	key string
	raw json.RawMessage
}

// orderedRaw reads a JSON object's members in their order.
func orderedRaw(raw json.RawMessage) ([]rawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("want an object")
	}
	var out []rawMember
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, rawMember{key: key, raw: v})
	}
	return out, nil
}

// object reads an object of strings (and, with nulls, of nulls) in the
// file's order; a repeated key keeps its last value at its first place.
func object(raw json.RawMessage, nulls bool) ([]member, error) {
	rms, err := orderedRaw(raw)
	if err != nil {
		return nil, err
	}
	var out []member
	for _, rm := range rms {
		m := member{key: rm.key}
		if bytes.Equal(bytes.TrimSpace(rm.raw), []byte("null")) {
			if !nulls {
				return nil, fmt.Errorf("%s: want a string", rm.key)
			}
			m.null = true
		} else if err := json.Unmarshal(rm.raw, &m.value); err != nil {
			return nil, fmt.Errorf("%s: want a string", rm.key)
		}
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			return nil, fmt.Errorf("%q is not a variable name", m.key)
		}
		if i := slices.IndexFunc(out, func(o member) bool { return o.key == m.key }); i >= 0 {
			out[i] = m
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

var variable = regexp.MustCompile(`\$\{([^}]*)\}`)

// expand substitutes the specification's variables in s (see Parse);
// container looks up ${containerEnv:…} (nil: leave them as written).
// where names the file and property for notes.
func expand(s, workspace string, container func(string) (string, bool), where string) (string, []string) {
	var notes []string
	out := variable.ReplaceAllStringFunc(s, func(v string) string {
		inner := v[2 : len(v)-1]
		kind, rest, _ := strings.Cut(inner, ":")
		name, def, hasDef := strings.Cut(rest, ":")
		switch kind {
		case "localEnv", "env":
			if hasDef {
				notes = append(notes, fmt.Sprintf("%s: `%s` is the default %q: the worker's environment is never passed on.", where, v, def))
				return def
			}
			notes = append(notes, fmt.Sprintf("%s: `%s` is empty: the worker's environment is never passed on.", where, v))
			return ""
		case "containerEnv":
			if container == nil {
				notes = append(notes, fmt.Sprintf("%s: `%s` is not substituted in commands; use the shell's $%s.", where, v, name))
				return v
			}
			if val, ok := container(name); ok {
				return val
			}
			return def
		case "localWorkspaceFolder", "containerWorkspaceFolder":
			return workspace
		case "localWorkspaceFolderBasename", "containerWorkspaceFolderBasename":
			return path.Base(workspace)
		case "devcontainerId":
			notes = append(notes, fmt.Sprintf("%s: `%s` is not substituted.", where, v))
			return v
		}
		return v
	})
	return out, notes
}

// Environ returns the environment of the sandbox: the image's (imageEnv,
// as rootfs gives it, PATH first), then containerEnv, then remoteEnv (a
// null there unsets the variable), each value with its variables
// substituted — ${containerEnv:NAME} from what comes before it. The order
// of imageEnv is kept, new variables follow in the file's order.
func (c *Config) Environ(imageEnv []string) []string {
	env := slices.Clone(imageEnv)
	lookup := func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, _ := strings.Cut(env[i], "="); k == name {
				return v, true
			}
		}
		return "", false
	}
	set := func(m member) {
		i := slices.IndexFunc(env, func(e string) bool { k, _, _ := strings.Cut(e, "="); return k == m.key })
		switch {
		case m.null && i >= 0:
			env = slices.Delete(env, i, i+1)
		case m.null:
		case i >= 0:
			env[i] = m.key + "=" + m.value
		default:
			env = append(env, m.key+"="+m.value)
		}
	}
	for _, group := range [][]member{c.containerEnv, c.remoteEnv} {
		var expanded []member
		for _, m := range group {
			if !m.null {
				m.value, _ = expand(m.value, c.workspace, lookup, "")
			}
			expanded = append(expanded, m)
		}
		// Values see the environment as it was before the group, as the
		// specification resolves a group at once.
		for _, m := range expanded {
			set(m)
		}
	}
	return env
}
