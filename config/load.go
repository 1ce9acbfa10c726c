package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts the name of every environment variable of the bot.
const EnvPrefix = "AGENTFIX_"

// ConfigVar names the YAML file when no --config flag is given.
const ConfigVar = EnvPrefix + "CONFIG"

// DotEnvFile is the name of the .env file read from the working directory.
const DotEnvFile = ".env"

// Load builds the configuration from the defaults, the YAML file at yamlPath
// (none when empty), the .env file in workDir and environ (KEY=value strings,
// as os.Environ returns them; they win over .env). Relative paths are taken
// against workDir. An empty variable counts as unset. The error joins every
// problem found, one line each naming the key or variable; call Validate on
// the result for the semantic checks.
func Load(yamlPath string, environ []string, workDir string) (*App, error) {
	a := Defaults()
	var errs []error
	if yamlPath != "" {
		errs = append(errs, a.loadYAML(absPath(workDir, yamlPath))...)
	}
	env, warnings, err := mergeEnv(environ, filepath.Join(workDir, DotEnvFile))
	if err != nil {
		errs = append(errs, err)
	}
	a.warnings = warnings
	errs = append(errs, a.loadEnv(env)...)
	a.normalize(workDir)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// loadYAML applies the YAML file at path to a: unknown keys, values of the
// wrong type and secrets are errors.
func (a *App) loadYAML(path string) []error {
	b, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("read config file: %w", err)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
	if errs := checkYAMLKeys(path, &doc, a); len(errs) > 0 {
		return errs
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err = dec.Decode(a)
	var te *yaml.TypeError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &te):
		var errs []error
		for _, line := range te.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", path, line))
		}
		return errs
	default:
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
}

// checkYAMLKeys refuses secrets in the YAML document, and a Redis URL that
// carries a password: they belong in the environment or .env.
func checkYAMLKeys(path string, doc *yaml.Node, a *App) []error {
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("%s: line %d: the file must be a mapping of keys to values", path, root.Line)}
	}
	byKey := map[string]field{}
	for _, f := range fields(a) {
		byKey[f.key] = f
	}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		f, ok := byKey[k.Value]
		switch {
		case !ok:
			// The strict decoder reports unknown keys.
		case f.secret:
			errs = append(errs, fmt.Errorf("%s: line %d: %s is a secret and may not be in the YAML file; set %s in the environment or .env", path, k.Line, k.Value, f.env))
		case k.Value == "redis_url" && hasPassword(v.Value):
			errs = append(errs, fmt.Errorf("%s: line %d: redis_url carries a password and may not be in the YAML file; set %s in the environment or .env", path, k.Line, f.env))
		}
	}
	return errs
}

// mergeEnv returns the variables of the .env file at dotEnv overlaid with
// environ, and warnings about the .env file's permissions.
func mergeEnv(environ []string, dotEnv string) (map[string]string, []string, error) {
	env := map[string]string{}
	var warnings []string
	info, err := os.Stat(dotEnv)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("read %s: %w", dotEnv, err)
	default:
		m, err := godotenv.Read(dotEnv)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", dotEnv, err)
		}
		env = m
		if info.Mode().Perm()&0o077 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s is readable by others (mode %#o) and may hold secrets; chmod 600 it", dotEnv, info.Mode().Perm()))
		}
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			env[k] = v
		}
	}
	return env, warnings, nil
}

// loadEnv applies the variables of env to a.
func (a *App) loadEnv(env map[string]string) []error {
	known := map[string]bool{ConfigVar: true}
	var errs []error
	for _, f := range fields(a) {
		known[f.env] = true
		s, ok := env[f.env]
		if !ok || s == "" || f.value.Kind() == reflect.Map {
			continue
		}
		if err := setScalar(f.value, s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.env, err))
		}
	}
	var unknown []string
	for k := range env {
		if strings.HasPrefix(k, EnvPrefix) && !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		a.warnings = append(a.warnings, fmt.Sprintf("%s names no setting and is ignored", k))
	}
	return errs
}

// setScalar parses s into the field v.
func setScalar(v reflect.Value, s string) error {
	switch {
	case v.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (like 45m or 336h): %q", s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not a boolean (true or false): %q", s)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", s)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("cannot be set from the environment (type %s)", v.Type())
	}
	return nil
}

// normalize puts values into the form the rest of the bot relies on.
func (a *App) normalize(workDir string) {
	a.GitHubAPIURL = withSlash(a.GitHubAPIURL)
	a.GitHubWebURL = withSlash(a.GitHubWebURL)
	a.PublicURL = strings.TrimRight(a.PublicURL, "/")
	if a.DataDir != "" {
		a.DataDir = absPath(workDir, a.DataDir)
	}
	if a.PrivateKeyFile != "" {
		a.PrivateKeyFile = absPath(workDir, a.PrivateKeyFile)
	}
	// A key pasted into one line of an env file has literal \n escapes.
	if a.PrivateKey != "" && !strings.Contains(a.PrivateKey, "\n") {
		a.PrivateKey = strings.ReplaceAll(a.PrivateKey, `\n`, "\n")
	}
	a.LogFormat = strings.ToLower(a.LogFormat)
	a.LogLevel = strings.ToLower(a.LogLevel)
}

func withSlash(u string) string {
	if u == "" || strings.HasSuffix(u, "/") {
		return u
	}
	return u + "/"
}

func absPath(workDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workDir, p)
}
