package ghapp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/joho/godotenv"

	"github.com/agentfix/agentfix/config"
)

// envVar is one variable the setup writes to .env.
type envVar struct{ Key, Value string }

// plainValue is a value written to .env as it is; others are single-quoted
// (no escapes, no ${} expansion).
var plainValue = regexp.MustCompile(`^[A-Za-z0-9._/+=:@-]*$`)

// updateDotEnv sets vars in the .env file at path and keeps everything else
// in it: earlier one-line assignments of those variables are dropped and the
// new ones appended in one block under comment. The result is checked by
// parsing it back — the new values come out, and every other variable keeps
// its value — before it replaces the file atomically (a temporary file in
// the same directory, synced, then renamed over it), with mode 0600.
func updateDotEnv(path string, vars []envVar, comment string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	before, err := godotenv.UnmarshalBytes(old)
	if err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	keys := map[string]bool{}
	var block strings.Builder
	block.WriteString("\n# " + comment + "\n")
	for _, v := range vars {
		keys[v.Key] = true
		line, err := envLine(v)
		if err != nil {
			return err
		}
		block.WriteString(line + "\n")
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(old, []byte("\n")) {
		if !keys[assignedKey(string(line))] {
			out.Write(line)
		}
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteByte('\n')
	}
	if out.Len() == 0 {
		out.WriteString(strings.TrimPrefix(block.String(), "\n"))
	} else {
		out.WriteString(block.String())
	}
	if err := checkDotEnv(out.Bytes(), before, vars); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	return writeFileAtomic(path, out.Bytes())
}

// envLine renders one assignment.
func envLine(v envVar) (string, error) {
	switch {
	case plainValue.MatchString(v.Value):
		return v.Key + "=" + v.Value, nil
	case !strings.ContainsAny(v.Value, "'\n\r"):
		return v.Key + "='" + v.Value + "'", nil
	}
	return "", fmt.Errorf("%s: the value has a quote or a line break and cannot be written to .env", v.Key)
}

// assignedKey returns the variable a .env line assigns, or "" for comments,
// blank lines and continuation lines.
func assignedKey(line string) string {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return ""
	}
	s = strings.TrimSpace(strings.TrimPrefix(s, "export "))
	i := strings.IndexAny(s, "=:")
	if i <= 0 {
		return ""
	}
	return strings.TrimSpace(s[:i])
}

// checkDotEnv checks that content parses to vars plus the untouched
// variables of before.
func checkDotEnv(content []byte, before map[string]string, vars []envVar) error {
	after, err := godotenv.UnmarshalBytes(content)
	if err != nil {
		return fmt.Errorf("the merged file does not parse: %w", err)
	}
	want := maps.Clone(before)
	for _, v := range vars {
		want[v.Key] = v.Value
	}
	if maps.Equal(want, after) {
		return nil
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if after[k] != want[k] {
			diff = append(diff, k)
		}
	}
	for k := range after {
		if _, ok := want[k]; !ok {
			diff = append(diff, k)
		}
	}
	return fmt.Errorf("merging would change %s (a multi-line value?); edit the file by hand", strings.Join(diff, ", "))
}

// writeFileAtomic replaces path with content, mode 0600: a reader sees the
// old file or the new one, never a part.
func writeFileAtomic(path string, content []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if err := writeAndSync(tmp, content); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// writeKeyFile writes the App's private key next to .env, mode 0600, as
// <slug>.private-key.pem (GitHub's name for a downloaded key), or with a
// number added when that file exists: an existing key is never replaced. It
// returns the file's name.
func writeKeyFile(dir, slug string, pem []byte) (string, error) {
	tmp, err := os.CreateTemp(dir, ".private-key.*.tmp")
	if err != nil {
		return "", fmt.Errorf("write private key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeAndSync(tmp, pem); err != nil {
		return "", fmt.Errorf("write private key: %w", err)
	}
	base := keyFileBase(slug)
	for n := 1; n <= 100; n++ {
		name := base + ".private-key.pem"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.private-key.pem", base, n)
		}
		// A hard link to a new name fails when the name exists.
		err := os.Link(tmp.Name(), filepath.Join(dir, name))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write private key %s: %w", name, err)
		}
		return name, syncDir(dir)
	}
	return "", fmt.Errorf("write private key: %s.private-key.pem and 99 numbered variants exist in %s", base, dir)
}

// keyFileBase turns an App slug into a file name: lower-case letters,
// digits and dashes.
func keyFileBase(slug string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(slug) {
		if r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if s := strings.Trim(b.String(), "-"); s != "" {
		return s
	}
	return "github-app"
}

// checkCanSave reports, before the operator is sent to GitHub, whether the
// credentials can be saved in dir: after the App is created there is no
// second chance at them. dir must take new files, and a .env in it must be a
// file that parses.
func checkCanSave(dir string) error {
	f, err := os.CreateTemp(dir, ".agentfix-setup-check.*")
	if err != nil {
		return fmt.Errorf("the working directory %s does not take new files: %w", dir, err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return fmt.Errorf("the working directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, config.DotEnvFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := godotenv.UnmarshalBytes(b); err != nil {
		return fmt.Errorf("%s does not parse (%v); fix or move it", path, err)
	}
	return nil
}

func writeAndSync(f *os.File, content []byte) error {
	_, err := f.Write(content)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
